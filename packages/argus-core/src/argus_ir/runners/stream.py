"""Stream a corpus file through :class:`~argus_ir.Argus` into augmented JSONL, resumably.

Input is read record by record and output written batch by batch, so memory stays flat however
large the corpus. While a run is going, three files sit beside ``OUT``:

- ``OUT.partial``: the records of every finished batch;
- ``OUT.partial.docs``: one diagnosis row per finished document (for the stats file);
- ``OUT.checkpoint.json``: rewritten after each batch: documents done, the byte length of both
  files at that point, the stats so far, the settings card and a digest of the documents done.

A run that finds a checkpoint resumes from it: it checks that settings and the documents already
done are the same, cuts both files back to the last finished batch (a batch half-written when the
process died is dropped), skips those documents and goes on. When the corpus ends, the stats file
is written, ``OUT.partial`` becomes ``OUT`` and the rest is removed; a resumed run's output equals
an uninterrupted run's, byte for byte.

With ``Argus(embed=True)`` every record also carries its vector (:data:`VECTOR_KEY`,
:mod:`argus_ir.runners.records`); the settings card says so, so a checkpoint of a run without
vectors never resumes with them, nor the reverse. A run without vectors writes a record of an
earlier ``--vectors`` run's output without the vector that run wrote (counted as
``stale_vectors``): no record of its output carries a vector argus did not compute in it.

>>> from argus_ir import Argus
>>> from argus_ir.runners.stream import augment_file
>>> summary = augment_file(Argus(), "corpus.jsonl", "augmented.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from argus_ir.batching import earlier_output
from argus_ir.diagnose import Diagnosis
from argus_ir.documents import Document, iter_documents
from argus_ir.errors import ArgusInputError
from argus_ir.io import atomic_path, json_text, naming_file
from argus_ir.lineage import VIEW_KEY
from argus_ir.outputs import claim_output, hold_output
from argus_ir.pipeline import Argus
from argus_ir.remedy import RemedyStats
from argus_ir.remedy.texts import VIEW_ID, VIEW_UUID
from argus_ir.runners.checkpoint import (
    CHECKPOINT_VERSION,
    _chain,
    _check_settings,
    _partial_paths,
    _reopen,
    _skip_done,
    check_paths,
    checkpoint_path,
    corpus_file,
    load_checkpoint,
    lock_path,
    may_replace,
    recorded_stats,
    save_checkpoint,
    stats_file_for,
)
from argus_ir.runners.records import VECTOR_KEY, json_line, stale_vector, view_record

__all__ = [
    "CHECKPOINT_VERSION",
    "VECTOR_KEY",
    "StreamSummary",
    "augment_file",
    "check_paths",
    "checkpoint_path",
    "corpus_file",
    "count_records",
    "iter_corpus",
    "json_line",
    "lock_path",
    "scan_corpus",
    "stats_file_for",
    "view_record",
]


@dataclass
class StreamSummary:
    """What :func:`augment_file` did.

    Attributes:
        stats: The remedy's counts over the whole corpus (a resumed run's included).
        documents: Documents in the corpus.
        resumed_from: Documents an earlier, interrupted run had finished (0 for a fresh run).
        out: The augmented JSONL (``None`` for a dry run).
        stats_path: The stats JSON (``None`` when none was asked for).
    """

    stats: RemedyStats
    documents: int
    resumed_from: int
    out: Path | None
    stats_path: Path | None


def iter_corpus(path: str | os.PathLike[str]) -> Iterator[Document]:
    """Documents of a corpus file, or of a BEIR dataset folder's ``corpus.jsonl(.gz)``, streamed."""
    return iter_documents(corpus_file(Path(path)))


def count_records(path: str | os.PathLike[str]) -> int | None:
    """Records in a corpus file without parsing them (``None`` where that is not cheap).

    Plain JSONL: non-blank lines; Parquet: the row count in its footer.
    """
    p = corpus_file(Path(path))
    name = p.name.lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(p).metadata.num_rows)
        except Exception:  # unreadable: iter_documents will say why
            return None
    if name.endswith(".jsonl") and p.is_file():
        with open(p, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    return None


def _doc_row(diagnosis: Diagnosis, views: int) -> dict[str, Any]:
    return {
        "id": diagnosis.doc_id,
        "flagged": [{"surface": e.surface, "rps": round(e.rps, 4)} for e in diagnosis.flagged],
        "views": views,
    }


def augment_file(
    argus: Argus,
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str] | None,
    *,
    stats_path: str | os.PathLike[str] | None = None,
    settings: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    resume: bool = True,
    overwrite: bool = False,
    total: int | None = None,
    show_progress: bool | None = None,
) -> StreamSummary:
    """Augment a corpus file into JSONL, streaming, checkpointing after every batch.

    A bad record, a repeated id or an earlier view without its lineage stops the run when it is
    reached, and the run resumes after the fix (``argus augment`` reads the whole corpus with
    :func:`scan_corpus` before any model loads, so it refuses them before any work). Output
    paths follow :mod:`argus_ir.outputs`: checked again under ``OUT.lock`` before the first write.

    Args:
        argus: The configured :class:`~argus_ir.Argus` (its ``batch_size`` is the checkpoint step).
        corpus: JSONL (``.gz``), Parquet or CSV, or a BEIR dataset folder.
        out: The augmented JSONL: every original unchanged, then its views with their lineage
            under ``metadata``; with ``argus.embed``, each record's vector under
            :data:`VECTOR_KEY`. Not needed for a dry run (which embeds nothing).
        stats_path: The stats JSON (settings, totals, one row per document). Default: ``OUT`` with
            ``.stats.json`` appended; for a dry run without ``out``, none.
        settings: What to record as the stats file's ``settings`` (default: the settings card).
        dry_run: Diagnose and look up only: count flags, projected views and LLM calls.
        resume: Continue an interrupted run's checkpoint (``False``: discard it and start over).
        overwrite: Replace an existing ``out`` and stats file (else they are refused; a run
            stopped while it committed may replace ``out`` and the stats file its checkpoint
            recorded, read under ``OUT.lock``, so the same call finishes it).
        total: The corpus's record count for the progress bar, when known (:func:`scan_corpus`);
            else counted where that is cheap (:func:`count_records`).
        show_progress: Override ``argus.show_progress``.

    Raises:
        ArgusInputError: A bad record (named by file and line), an output path the rules of
            :mod:`argus_ir.outputs` refuse, another run writing ``out``, or a checkpoint from
            other settings or another corpus (pass ``resume=False`` to start over).
    """
    if out is None and not dry_run:
        raise ArgusInputError("an output path is required unless this is a dry run")
    out_path = None if out is None else Path(out)
    stats_file = stats_file_for(out_path, stats_path)
    card = argus.settings_card()
    described = dict(settings) if settings is not None else card
    source = {"the input corpus": corpus_file(Path(corpus))}
    if dry_run:
        with _stats_claim(stats_file, source, out_path, overwrite):
            check_paths(corpus, None, stats_file, overwrite=overwrite)
            total = count_records(corpus) if total is None else total
            return _dry_run(argus, corpus, out_path, stats_file, described, total, show_progress)
    assert out_path is not None
    # OUT's lock first: whether an earlier run on OUT was stopped while it committed (and so owns
    # OUT and the stats file its checkpoint recorded) is read under it, where it cannot change
    with hold_output(out_path):
        out_ok, stats_ok = may_replace(out_path, stats_file, overwrite=overwrite, resume=resume)
        with (
            claim_output(out_path, flag="out", taken=source, overwrite=out_ok),
            _stats_claim(stats_file, source, out_path, stats_ok),
        ):
            check_paths(corpus, out_path, stats_file, overwrite=out_ok, stats_overwrite=stats_ok)
            total = count_records(corpus) if total is None else total
            return _run(
                argus,
                corpus,
                out_path,
                stats_file,
                card,
                described,
                total,
                resume,
                show_progress,
                (out_ok, stats_ok),
            )


def _stats_claim(
    stats_file: Path | None, source: Mapping[str, Path], out: Path | None, overwrite: bool
) -> contextlib.AbstractContextManager[object]:
    """The stats file claimed for the whole run: a run on another ``out`` cannot write it
    meanwhile."""
    if stats_file is None:
        return contextlib.nullcontext()
    return claim_output(
        stats_file, flag="stats_path", taken={**source, "out": out}, overwrite=overwrite
    )


def scan_corpus(corpus: str | os.PathLike[str]) -> int:
    """Read a whole corpus once, before any work, and count its records.

    Every check of :func:`~argus_ir.documents.iter_documents` runs (ids, repeated ids, text and
    metadata types), and a record whose id has the form of an argus view id but carries no argus
    lineage is refused: it is an earlier run's view whose metadata was dropped, and the view this
    run would make of its source would take the same id.

    Raises:
        ArgusInputError: The first bad record, by file and line.
    """
    return sum(1 for _ in _documents(corpus))


def _documents(corpus: str | os.PathLike[str]) -> Iterator[Document]:
    """The corpus's documents, an earlier view without its lineage refused (:func:`scan_corpus`)."""
    for doc in iter_corpus(corpus):
        if VIEW_ID.fullmatch(doc.id) and VIEW_KEY not in doc.metadata:
            raise ArgusInputError(
                f"{doc.where}: document id {doc.id!r} is an argus view id, but the record carries "
                "no argus lineage in its metadata (an earlier run's view whose metadata was "
                "dropped?); the view of its source would take the same id. Remove earlier views "
                "before augmenting again, or keep their metadata"
            )
        yield doc


_TAKEN = (
    "view {} not written: a record of the corpus already has this id and no argus lineage "
    "(an earlier run's view whose metadata was dropped?)"
)


def _bare_view_ids(corpus: str | os.PathLike[str]) -> set[str]:
    """Ids of the form of a view id on records that are not argus's own output (an earlier run's
    views whose metadata was dropped or damaged, or a user's own UUIDv5 ids): a new view never
    takes one. Read up to the
    first bad record: the run stops there, and reads it all when it resumes after the fix."""
    taken: set[str] = set()
    with contextlib.suppress(ArgusInputError):  # reported by file and line when the run reaches it
        docs = iter_corpus(corpus)
        taken.update(d.id for d in docs if VIEW_UUID.fullmatch(d.id) and not earlier_output(d))
    return taken


def _dry_run(
    argus: Argus,
    corpus: str | os.PathLike[str],
    out: Path | None,
    stats_file: Path | None,
    settings: Mapping[str, Any],
    total: int | None,
    show_progress: bool | None,
) -> StreamSummary:
    stats = RemedyStats()
    planned = argus.plan(_documents(corpus), stats=stats, total=total, show_progress=show_progress)
    rows = (_doc_row(diagnosis, n) for diagnosis, n in planned)
    if stats_file is None:
        for _ in rows:
            pass
    else:
        # the rows wait in a file of a new name beside the stats: no file of the user's is reused
        fd, name = tempfile.mkstemp(
            prefix=f".{stats_file.name}.", suffix=".rows", dir=stats_file.parent
        )
        rows_file = Path(name)
        try:
            with open(fd, "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json_line(row))
            _write_stats(stats_file, corpus, True, settings, stats, rows_file)
        finally:
            rows_file.unlink(missing_ok=True)
    return StreamSummary(stats, stats.documents, 0, None, stats_file)


def _run(
    argus: Argus,
    corpus: str | os.PathLike[str],
    out: Path,
    stats_file: Path | None,
    card: Mapping[str, Any],
    settings: Mapping[str, Any],
    total: int | None,
    resume: bool,
    show_progress: bool | None,
    overwrite: tuple[bool, bool] = (False, False),
) -> StreamSummary:
    partial, rows_file = _partial_paths(out)
    ckpt_file = checkpoint_path(out)
    state = load_checkpoint(ckpt_file) if resume else None
    if state is None:
        for stale in (partial, rows_file, ckpt_file):
            stale.unlink(missing_ok=True)
        state = {
            "version": CHECKPOINT_VERSION,
            "settings": dict(card),
            "documents_done": 0,
            "digest": "",
            "out_bytes": 0,
            "rows_bytes": 0,
            "stats": RemedyStats().to_dict(),
        }
    else:
        _check_settings(ckpt_file, state, card)
    # the stats file this run checked and may write: the one a rerun may replace (may_replace)
    recorded = recorded_stats(stats_file)
    if state.get("finishing") and state.get("stats_path") != recorded:
        state["stats_path"] = recorded
        save_checkpoint(ckpt_file, state)
    state["stats_path"] = recorded
    done = int(state["documents_done"])
    docs = _documents(corpus)
    digest = _skip_done(docs, done, str(state["digest"]), ckpt_file)
    stats = RemedyStats.from_dict(state["stats"])
    out.parent.mkdir(parents=True, exist_ok=True)
    if not state.get("finishing"):
        try:
            # a resumed run with in-corpus targeting refills the reach pool from the corpus's start
            pool = iter_corpus(corpus) if done and argus.targeting == "corpus" else None
            _write_batches(
                argus,
                _bare_view_ids(corpus),
                docs,
                partial,
                rows_file,
                ckpt_file,
                state,
                stats,
                total,
                digest,
                show_progress,
                pool,
            )
        except BaseException:
            if not ckpt_file.is_file():  # not one batch finished: nothing to resume from
                partial.unlink(missing_ok=True)
                rows_file.unlink(missing_ok=True)
            raise
        state["finishing"] = True  # the commit point: from here a rerun only finishes the steps
        save_checkpoint(ckpt_file, state)
    _commit(corpus, out, stats_file, settings, stats, state, overwrite)
    done = int(state["documents_done"])
    return StreamSummary(stats, done, int(state.get("resumed_from", 0)), out, stats_file)


def _commit(
    corpus: str | os.PathLike[str],
    out: Path,
    stats_file: Path | None,
    settings: Mapping[str, Any],
    stats: RemedyStats,
    state: Mapping[str, Any],
    overwrite: tuple[bool, bool],
) -> None:
    """The end of a run, in steps a rerun can always finish: the stats file, ``OUT.partial`` to
    ``OUT``, then the partial stats rows and the checkpoint removed (last)."""
    partial, rows_file = _partial_paths(out)
    ckpt_file = checkpoint_path(out)
    if stats_file is not None and rows_file.is_file():  # rows gone: the stats were written
        out_ok, stats_ok = overwrite  # checked again, under its lock
        check_paths(corpus, out, stats_file, overwrite=out_ok, stats_overwrite=stats_ok)
        _write_stats(stats_file, corpus, False, settings, stats, rows_file)
    if partial.is_file():
        os.replace(partial, out)
    elif not (out.is_file() and out.stat().st_size == int(state["out_bytes"])):
        raise ArgusInputError(
            f"{out}: the run's output is missing or not the length its checkpoint recorded "
            f"({ckpt_file}); start over with --no-resume"
        )
    rows_file.unlink(missing_ok=True)
    ckpt_file.unlink(missing_ok=True)


def _write_batches(
    argus: Argus,
    taken: set[str],
    docs: Iterator[Document],
    partial: Path,
    rows_file: Path,
    ckpt_file: Path,
    state: dict[str, Any],
    stats: RemedyStats,
    total: int | None,
    digest: str,
    show_progress: bool | None,
    pool: Iterator[Document] | None = None,
) -> None:
    done = int(state["documents_done"])
    with (
        _reopen(partial, int(state["out_bytes"]), ckpt_file) as fh,
        _reopen(rows_file, int(state["rows_bytes"]), ckpt_file) as rows_fh,
    ):
        batches = argus.process_batches(
            docs, stats=stats, show_progress=show_progress, total=total, done=done, pool=pool
        )
        for batch in batches:
            for doc, diagnosis, views in batch:
                kept = [v for v in views if v.id == doc.id or v.id not in taken]
                stats.failures += [(doc.id, _TAKEN.format(v.id)) for v in views if v not in kept]
                for view in kept:
                    _write(fh, json_line(view_record(doc, view, vectors=argus.embed)))
                    if not argus.embed and stale_vector(doc, view):
                        stats.stale_vectors += 1
                _write(rows_fh, json.dumps(_doc_row(diagnosis, len(kept) - 1)) + "\n")
                digest = _chain(digest, doc)
            done += len(batch)
            state.update(
                documents_done=done,
                digest=digest,
                out_bytes=_sync(fh),
                rows_bytes=_sync(rows_fh),
                stats=stats.to_dict(),
            )
            save_checkpoint(ckpt_file, state)


def _write(fh: IO[str], text: str) -> None:
    """Write to ``fh``; an OS error (a full disk) names its file."""
    with naming_file(fh.name):
        fh.write(text)


def _sync(fh: IO[str]) -> int:
    """Flush ``fh`` to disk; its length in bytes."""
    with naming_file(fh.name):
        fh.flush()
        os.fsync(fh.fileno())
    return os.fstat(fh.fileno()).st_size


def _write_stats(
    path: Path,
    corpus: str | os.PathLike[str],
    dry_run: bool,
    settings: Mapping[str, Any],
    stats: RemedyStats,
    rows_file: Path,
) -> None:
    """The stats JSON, its per-document rows copied from ``rows_file`` line by line."""
    head = json_text(
        {
            "corpus": str(corpus),
            "dry_run": dry_run,
            "settings": dict(settings),
            "totals": stats.to_dict(),
        },
        indent=2,
    )
    with atomic_path(path) as tmp, naming_file(path), open(tmp, "w", encoding="utf-8") as fh:
        fh.write(head[: -len("\n}")] + ',\n  "documents": [')
        _copy_rows(fh, _lines(rows_file))
        fh.write("\n  ]\n}\n")


def _lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            yield line.rstrip("\n")


def _copy_rows(fh: IO[str], rows: Iterable[str]) -> None:
    first = True
    for row in rows:
        fh.write(("\n    " if first else ",\n    ") + row)
        first = False
