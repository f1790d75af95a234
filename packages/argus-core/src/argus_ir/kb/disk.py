"""A reference KB that stays on disk: millions of passages opened in well under a gigabyte.

:class:`~argus_ir.kb.ReferenceKB` holds every passage in memory, which is right for the shipped
10,033 leads and wrong for a Wikipedia dump. :func:`build_disk_kb` streams passages into a folder
and :class:`DiskKB` opens it memory-mapped:

- ``passages.arrow``: the passages as an Arrow IPC file (id, title, text, description), opened
  memory-mapped, so a lookup reads the two passages it returns and nothing else (a Parquet file
  would have to decode a whole row group per lookup);
- ``bm25/``: the BM25 index (:mod:`argus_ir.kb.bm25`) over ``title + text``, loaded memory-mapped
  (the vocabulary is the one part read into memory);
- ``names.npy`` / ``name_rows.npy``: the exact-name table, 64-bit hashes of every normalised title
  and alias, sorted, with their rows; ``ids.npy`` / ``id_rows.npy`` the same for passage ids;
- ``kb.json``: the card (format, counts, fingerprint, sources with their licences).

The lookup answers as :meth:`ReferenceKB.lookup` does: the passage titled (or aliased) with the
mention first, then BM25 matches of its words. ``argus kb build`` writes such folders from the
public dumps (:mod:`argus_ir.kb.dumps`); ``Argus(kb=FOLDER)`` and ``--kb FOLDER`` open either kind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir._lru import LRU
from argus_ir.errors import ArgusInputError
from argus_ir.io import naming_file, replace_folder
from argus_ir.kb.bm25 import BM25Index, tokenize
from argus_ir.kb.reference import (  # one KB family: the card and index names are the in-memory KB's
    _INDEX,
    CARD_FILE,
    DEFAULT_K_AUG,
    LOOKUP_CACHE_SIZE,
    Passage,
    is_kb_folder,
    rank,
    read_card,
)
from argus_ir.outputs import check_output, claim_output
from argus_ir.text.grounding import normalize

logger = logging.getLogger(__name__)

__all__ = ["DISK_FORMAT_VERSION", "DiskKB", "build_disk_kb", "load_kb_folder"]

DISK_FORMAT_VERSION = 2
LAYOUT = "disk"
_PASSAGES = "passages.arrow"
_BATCH = 8192


def _key(text: str) -> int:
    """A 64-bit key of a normalised name (collisions are checked against the passage)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def build_disk_kb(
    records: Iterable[tuple[Passage, Sequence[str]]],
    folder: str | os.PathLike[str],
    *,
    sources: Mapping[str, Any] | None = None,
    show_progress: bool = False,
    overwrite: bool = False,
) -> Path:
    """Stream ``(passage, aliases)`` records into a disk KB folder.

    The folder is built as a new sibling and renamed into place when complete. An existing KB
    folder is replaced only with ``overwrite``; a non-empty folder that is not a KB is never
    touched (:mod:`argus_ir.outputs` states the rule).

    Passages are written as they come; only their ids, name keys and the texts for the BM25
    index are held until the index is built. A repeated id keeps the first passage (counted in
    the card as ``duplicate_ids``); a passage with neither title nor text is skipped
    (``empty``).

    Args:
        records: Passages with their aliases (other names the passage is known by exactly).
        folder: The KB folder to write.
        sources: What the card records about the input (file names, formats, licences, counts).
        show_progress: Progress bars for tokenising and indexing.
        overwrite: Replace an existing KB folder.

    Raises:
        ArgusInputError: No passage was read, or ``folder`` may not be written.
    """
    rule: dict[str, Any] = {"flag": "folder", "overwrite": overwrite, "folder": True}
    with claim_output(folder, **rule, kind="KB folder", is_kind=is_kb_folder) as target:
        _clear_stale(target)  # under the lock: no other build of this folder is running
        with naming_file(target):  # a full disk names the KB folder being built
            return _build(records, target, rule, sources, show_progress)


def _clear_stale(target: Path) -> None:
    """Remove what a killed build of ``target`` left beside it: its temporary folder
    (``.NAME.XXXXXXXX``) and, from a kill during the swap, the folder moved aside
    (``.NAME.XXXXXXXX.old``), which is put back first when ``target`` itself is missing."""
    if not target.parent.is_dir():
        return
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[A-Za-z0-9_]{{8}}(\.old)?")
    for stale in sorted(target.parent.iterdir()):
        found = pattern.fullmatch(stale.name)
        if found is None or not stale.is_dir() or stale.is_symlink():
            continue
        previous = stale / "previous"
        if found.group(1) and previous.is_dir() and not target.exists():
            os.replace(previous, target)  # the swap was cut: the old KB goes back in place
        logger.info("removing %s, left by a build that did not finish", stale)
        shutil.rmtree(stale, ignore_errors=True)


def _build(
    records: Iterable[tuple[Passage, Sequence[str]]],
    target: Path,
    rule: dict[str, Any],
    sources: Mapping[str, Any] | None,
    show_progress: bool,
) -> Path:
    """:func:`build_disk_kb`'s work, with ``target``'s lock held."""
    import pyarrow as pa

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("title", pa.string()),
            ("text", pa.string()),
            ("description", pa.string()),
        ]
    )
    seen: set[str] = set()
    texts: list[str] = []
    names: list[tuple[int, int]] = []
    counts = {"passages": 0, "aliases": 0, "duplicate_ids": 0, "empty": 0}
    digest = hashlib.sha256()
    try:
        with pa.OSFile(str(tmp / _PASSAGES), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            batch: dict[str, list[str]] = {name: [] for name in schema.names}

            def flush() -> None:
                if batch["id"]:
                    writer.write_batch(pa.record_batch(batch, schema=schema))
                    for column in batch.values():
                        column.clear()

            for passage, aliases in records:
                if passage.id in seen:
                    counts["duplicate_ids"] += 1
                    continue
                if not (passage.title.strip() or passage.text.strip()):
                    counts["empty"] += 1
                    continue
                seen.add(passage.id)
                row = counts["passages"]
                counts["passages"] += 1
                for name, value in (
                    ("id", passage.id),
                    ("title", passage.title),
                    ("text", passage.text),
                    ("description", passage.description),
                ):
                    batch[name].append(value)
                forms = {normalize(passage.title)} | {normalize(a) for a in aliases if a.strip()}
                forms.discard("")
                counts["aliases"] += len(forms) - (normalize(passage.title) in forms)
                names.extend((_key(f), row) for f in forms)
                texts.append(f"{passage.title} {passage.text}")
                digest.update(passage.id.encode("utf-8") + b"\0" + passage.text.encode("utf-8"))
                if len(batch["id"]) >= _BATCH:
                    flush()
            flush()
        if not counts["passages"]:
            raise ArgusInputError("the KB input holds no passage")
        _write_table(tmp, "names", names)
        _write_table(tmp, "ids", [(_key(i), row) for row, i in enumerate(_ids(tmp))])
        seen.clear()
        ids, vocab = tokenize(texts, show_progress=show_progress)
        texts.clear()
        BM25Index.from_ids(ids, vocab, show_progress=show_progress).save(tmp / _INDEX)
        del ids, vocab
        card = {
            "format_version": DISK_FORMAT_VERSION,
            "layout": LAYOUT,
            "n_passages": counts["passages"],
            "fingerprint": "disk:" + digest.hexdigest()[:16],
            "tokenizer": "bm25s.tokenize(stopwords='en')",
            "counts": counts,
            "sources": dict(sources or {}),
        }
        (tmp / CARD_FILE).write_text(
            json.dumps(card, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        check_output(target, **rule, kind="KB folder", is_kind=is_kb_folder)  # again, at the end
        replace_folder(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _ids(folder: Path) -> Iterable[str]:
    import pyarrow as pa

    with pa.memory_map(str(folder / _PASSAGES)) as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield from reader.get_batch(i).column("id").to_pylist()


def _write_table(folder: Path, name: str, pairs: list[tuple[int, int]]) -> None:
    keys = np.fromiter((k for k, _ in pairs), dtype=np.uint64, count=len(pairs))
    rows = np.fromiter((r for _, r in pairs), dtype=np.int64, count=len(pairs))
    order = np.argsort(keys, kind="stable")
    np.save(folder / f"{name}.npy", keys[order])
    np.save(folder / f"{name.rstrip('s')}_rows.npy", rows[order])


class DiskKB:
    """A KB folder written by :func:`build_disk_kb`, opened memory-mapped.

    Raises:
        ArgusInputError: The folder is not a disk KB, is of a newer format or is damaged (the
            message names the file).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        import pyarrow as pa

        self.folder = src = Path(folder)
        card = read_card(src)
        if card.get("layout") != LAYOUT:
            raise ArgusInputError(
                f"{src / CARD_FILE}: not a disk KB card (layout {card.get('layout')!r})"
            )
        if card.get("format_version", 0) > DISK_FORMAT_VERSION:
            raise ArgusInputError(
                f"{src} has KB format {card['format_version']}; this argus reads "
                f"{DISK_FORMAT_VERSION}"
            )
        self.card = card
        self.fingerprint = str(card["fingerprint"])
        try:
            self._source = pa.memory_map(str(src / _PASSAGES))
            self._table = pa.ipc.open_file(self._source).read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise ArgusInputError(f"{src / _PASSAGES}: cannot read the passages ({exc})") from None
        if self._table.num_rows != card["n_passages"]:
            raise ArgusInputError(
                f"{src}: {self._table.num_rows} passages but the card says {card['n_passages']}"
            )
        try:
            self._names = np.load(src / "names.npy", mmap_mode="r")
            self._name_rows = np.load(src / "name_rows.npy", mmap_mode="r")
            self._ids = np.load(src / "ids.npy", mmap_mode="r")
            self._id_rows = np.load(src / "id_rows.npy", mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ArgusInputError(f"{src}: cannot read the name tables ({exc})") from None
        self.index = BM25Index.load(src / _INDEX)
        self._columns = {n: self._table.column(n) for n in ("id", "title", "text", "description")}
        self._cache: LRU[tuple[str, int], list[tuple[Passage, float]]] = LRU(LOOKUP_CACHE_SIZE)

    def __len__(self) -> int:
        return int(self._table.num_rows)

    def _row(self, i: int) -> Passage:
        c = self._columns
        return Passage(
            str(c["id"][i].as_py()),
            str(c["title"][i].as_py()),
            str(c["text"][i].as_py()),
            str(c["description"][i].as_py() or ""),
        )

    def _find(self, keys: np.ndarray, rows: np.ndarray, key: int) -> list[int]:
        lo = int(np.searchsorted(keys, np.uint64(key), side="left"))
        hi = int(np.searchsorted(keys, np.uint64(key), side="right"))
        return [int(r) for r in rows[lo:hi]]

    def passage(self, passage_id: str) -> Passage | None:
        """The passage with this id (``None`` if the KB has none)."""
        for row in self._find(self._ids, self._id_rows, _key(passage_id)):
            p = self._row(row)
            if p.id == passage_id:
                return p
        return None

    def titled(self, surface: str) -> Passage | None:
        """The first passage whose title or an alias is the surface form (normalised)."""
        form = normalize(surface)
        if not form:
            return None
        row = self._titled_row(form)
        return None if row is None else self._row(row)

    def _titled_row(self, form: str) -> int | None:
        """The first row titled or aliased with a normalised form. Aliases are not stored with
        the passage, so the 64-bit key is trusted: with three million names the chance of any
        collision is below one in a million."""
        rows = self._find(self._names, self._name_rows, _key(form)) if form else []
        return min(rows) if rows else None

    def knows(self, surface: str) -> bool:
        """Whether a passage is titled or aliased with exactly this name."""
        return self.titled(surface) is not None

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """The top-``k`` passages for a surface form, best first: the passage titled (or aliased)
        with it, then BM25 matches of its words (score 0 never); cached per form and ``k``.
        ``label`` and ``context`` are accepted for the protocol and not used."""
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        key = (normalize(surface), k)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        first = self._titled_row(key[0])  # the row itself: no second look-up by its id
        result = [(self._row(i), s) for i, s in rank(self.index, surface, k, first)]
        self._cache[key] = result
        return result


def load_kb_folder(folder: str | os.PathLike[str]) -> Any:
    """Open a KB folder of either kind: a :class:`DiskKB` (``argus kb build``) or a
    :class:`~argus_ir.kb.ReferenceKB` saved with :meth:`~argus_ir.kb.ReferenceKB.save`."""
    from argus_ir.kb.reference import ReferenceKB

    src = Path(folder)
    if read_card(src).get("layout") == LAYOUT:
        return DiskKB(src)
    return ReferenceKB.load(src)
