"""Resumable output for the streaming run: checkpoint, lock and partial files beside ``--out``.

A run writing ``out`` holds ``out.lock`` (:func:`argus_ir.outputs.claim_output`), appends to
``out.partial`` and ``out.partial.docs``, and records after each batch how far it got in
``out.checkpoint.json``: documents done, a running digest of them, the byte lengths of the
partial files, the stats so far and the settings card. A later run with the same settings and
corpus resumes from there; anything else stops with a message saying what differs. The
checkpoint also records the run's stats file: a rerun of a run stopped while it committed may
replace ``out`` and that file, and nothing else (:func:`may_replace`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import IO, Any

from argus_ir.documents import Document
from argus_ir.errors import ArgusInputError
from argus_ir.io import atomic_path, json_text, naming_file
from argus_ir.outputs import check_output, lock_path, resolved

__all__ = [
    "CHECKPOINT_VERSION",
    "check_paths",
    "checkpoint_path",
    "corpus_file",
    "finishing",
    "kb_llm_cache_path",
    "load_checkpoint",
    "lock_path",
    "may_replace",
    "recorded_stats",
    "save_checkpoint",
    "stats_file_for",
]

CHECKPOINT_VERSION = 1


def _chain(digest: str, doc: Document) -> str:
    """The running digest of the documents done, one document further (order-sensitive)."""
    h = hashlib.sha256(digest.encode("ascii"))
    for part in (doc.id, doc.title, doc.text):
        h.update(b"\x00" + part.encode("utf-8", "surrogatepass"))  # lone surrogates too
    return h.hexdigest()


def corpus_file(path: Path) -> Path:
    """The file a corpus argument names: itself, or a BEIR folder's ``corpus.jsonl(.gz)``."""
    if path.is_dir():
        found = [path / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (path / n).is_file()]
        if not found:
            raise ArgusInputError(f"{path} is a folder without corpus.jsonl (not a BEIR dataset)")
        return found[0]
    return path


def checkpoint_path(out: str | os.PathLike[str]) -> Path:
    """Where a run writing ``out`` keeps its checkpoint."""
    out = Path(out)
    return out.with_name(out.name + ".checkpoint.json")


def kb_llm_cache_path(out: str | os.PathLike[str]) -> Path:
    """Where a run writing ``out`` keeps the replies of its ``--kb-llm`` (a folder, reused by the
    next run on ``out``)."""
    out = Path(out)
    return out.with_name(out.name + ".kb-llm-cache")


def _partial_paths(out: Path) -> tuple[Path, Path]:
    return out.with_name(out.name + ".partial"), out.with_name(out.name + ".partial.docs")


def load_checkpoint(path: Path) -> dict[str, Any] | None:
    """An interrupted run's checkpoint (``None`` when there is none).

    Raises:
        ArgusInputError: The file is cut, foreign or damaged; the message names it and the way
            out (``--no-resume``).
    """
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # cut mid-JSON, or not UTF-8
        raise ArgusInputError(
            f"{path}: unreadable checkpoint ({exc}); delete it or start over with --no-resume"
        ) from None
    if not isinstance(state, dict) or state.get("version") != CHECKPOINT_VERSION:
        raise ArgusInputError(
            f"{path}: checkpoint format {state.get('version') if isinstance(state, dict) else '?'}"
            f" is not {CHECKPOINT_VERSION}; start over with --no-resume"
        )
    kinds = {
        "documents_done": int,
        "digest": str,
        "out_bytes": int,
        "rows_bytes": int,
        "stats": dict,
        "settings": dict,
    }
    wrong = [k for k, kind in kinds.items() if not isinstance(state.get(k), kind)]
    if wrong:
        raise ArgusInputError(
            f"{path}: damaged checkpoint ({', '.join(wrong)} missing or of the wrong type); "
            "delete it or start over with --no-resume"
        )
    state["resumed_from"] = int(state["documents_done"])
    return state


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write the checkpoint (a new file renamed into place); its folder must still be there.

    Raises:
        ArgusInputError: The output folder went away during the run (it is not made again).
    """
    if not path.parent.is_dir():
        raise ArgusInputError(
            f"{path.parent}: the output folder went away during the run; stopped (run the "
            "command again to start over)"
        )
    with atomic_path(path) as tmp, naming_file(path):
        tmp.write_text(json_text(state), "utf-8")


def finishing(out: str | os.PathLike[str] | None) -> bool:
    """Whether ``out``'s run wrote every batch and was stopped while it committed them: its
    checkpoint says ``finishing``. Read it only while holding ``out``'s lock
    (:func:`argus_ir.outputs.hold_output`): without it, the run may complete meanwhile."""
    return bool(_finishing_state(out))


def _finishing_state(out: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    if out is None:
        return None
    try:
        state = load_checkpoint(checkpoint_path(out))
    except ArgusInputError:
        return None  # a damaged checkpoint is reported where the run reads it
    return state if state and state.get("finishing") is True else None


def recorded_stats(stats: str | os.PathLike[str] | None) -> str | None:
    """How a checkpoint records the run's stats file (:func:`may_replace`): resolved."""
    return None if stats is None else str(resolved(stats))


def may_replace(
    out: str | os.PathLike[str] | None,
    stats: str | os.PathLike[str] | None,
    *,
    overwrite: bool,
    resume: bool = True,
) -> tuple[bool, bool]:
    """Whether the run may replace an existing ``out``, and an existing ``stats`` file.

    With ``overwrite``, both. Else a run on ``out`` that wrote every batch and was stopped while
    it committed them (:func:`finishing`) owns what it may have written already: ``out``, and
    the stats file its checkpoint recorded, and no other (a ``stats`` the rerun names that the
    stopped run never wrote is an existing file like any other). Read it only while holding
    ``out``'s lock (:func:`argus_ir.outputs.hold_output`), so a run that completes meanwhile
    hands no permission to the next.
    """
    if overwrite:
        return True, True
    state = _finishing_state(out) if resume else None
    if state is None:
        return False, False
    recorded = state.get("stats_path")
    return True, stats is not None and isinstance(recorded, str) and recorded == recorded_stats(
        stats
    )


def _check_settings(path: Path, state: Mapping[str, Any], card: Mapping[str, Any]) -> None:
    before = state["settings"]
    changed = sorted(k for k in set(before) | set(card) if before.get(k) != card.get(k))
    if changed:
        raise ArgusInputError(
            f"{path}: the interrupted run used other settings ({', '.join(changed)} differ); "
            "rerun with the same settings to resume, or start over with --no-resume"
        )


def _skip_done(docs: Iterator[Document], done: int, digest: str, ckpt_file: Path) -> str:
    """Read past the documents a checkpoint covers, checking they are the same ones."""
    running = ""
    n = 0
    for doc in islice(docs, done):
        running = _chain(running, doc)
        n += 1
    if n != done or running != digest:
        raise ArgusInputError(
            f"{ckpt_file}: the corpus is not the one the interrupted run read (its first {done} "
            "documents differ); start over with --no-resume"
        )
    return running


class _reopen:
    """Open ``path`` for appending after cutting it back to ``size`` bytes (the last checkpoint)."""

    def __init__(self, path: Path, size: int, ckpt_file: Path) -> None:
        self.path, self.size, self.ckpt_file = path, size, ckpt_file
        self.fh: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self.size:
            have = self.path.stat().st_size if self.path.is_file() else -1
            if have < self.size:
                raise ArgusInputError(
                    f"{self.path} is shorter than {self.ckpt_file} says ({have} < {self.size} "
                    "bytes); start over with --no-resume"
                )
            with open(self.path, "r+b") as raw:
                raw.truncate(self.size)
        self.fh = open(self.path, "a" if self.size else "w", encoding="utf-8", newline="\n")
        return self.fh

    def __exit__(self, *exc: object) -> None:
        assert self.fh is not None
        with naming_file(self.path):  # the last flush may meet a full disk
            self.fh.close()


def stats_file_for(
    out: str | os.PathLike[str] | None, stats: str | os.PathLike[str] | None
) -> Path | None:
    """The stats file of a run: ``stats`` as given, else ``OUT.stats.json`` (none without ``out``)."""
    if stats is not None:
        return Path(stats)
    if out is None:
        return None
    out = Path(out)
    return out.with_name(out.name + ".stats.json")


def check_paths(
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str] | None,
    stats: str | os.PathLike[str] | None,
    *,
    overwrite: bool = False,
    stats_overwrite: bool | None = None,
    cli: bool = False,
) -> None:
    """Refuse an ``out`` or stats file :func:`argus_ir.outputs.check_output` refuses: either one the
    input (or ``out``'s partial, checkpoint or lock file the input), existing without
    ``overwrite``, or the stats file one of the run's other files.

    Args:
        overwrite: Replace an existing ``out`` (and stats file, unless ``stats_overwrite``).
        stats_overwrite: Replace an existing stats file (default: ``overwrite``).
        cli: Name the paths by their options (``--out``, ``--stats``) in messages.
    """
    out_flag, stats_flag = ("--out", "--stats") if cli else ("out", "stats_path")
    taken: dict[str, Path | str | os.PathLike[str] | None] = {
        "the input corpus": corpus_file(Path(corpus))
    }
    if out is not None:
        check_output(out, flag=out_flag, taken=taken, overwrite=overwrite)
        partial, rows_file = _partial_paths(Path(out))
        own = {
            "the run's partial output": partial,
            "the run's partial stats": rows_file,
            "the run's checkpoint": checkpoint_path(out),
            "the run's lock file": lock_path(out),
        }
        for path in own.values():  # the run's own files: replaced, never the input
            check_output(path, flag="", taken=taken, overwrite=True)
        cache = kb_llm_cache_path(out)  # a folder the next run on out reuses, never the input
        check_output(cache, flag="", taken=taken, overwrite=True, folder=True, is_kind=_any)
        taken.update({out_flag: out, **own})
    if stats is not None:
        # written last, so a folder that takes no file is refused now, before any work (out's
        # own folder is tried by its lock, before any model loads)
        elsewhere = out is None or resolved(stats).parent != resolved(out).parent
        replace = overwrite if stats_overwrite is None else stats_overwrite
        check_output(stats, flag=stats_flag, taken=taken, overwrite=replace, writable=elsewhere)


def _any(folder: Path) -> bool:
    return True
