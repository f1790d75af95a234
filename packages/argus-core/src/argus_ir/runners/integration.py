"""What every framework adapter shares: records in; originals, views, stats and failures out.

The LangChain, Haystack and LlamaIndex packages convert their documents to :class:`Record`, call
:func:`augment_records` (or :func:`aaugment_records`) and convert the :class:`Entry` list back.
Every rule about *which* documents get views and *what* a view carries lives here, once:

- every input comes out, first and untouched, followed by its views;
- a record without text (``None``), with blank text, or that is itself an argus view passes
  through without views, and is listed in :attr:`AugmentResult.skipped` with the reason;
- a repeated id passes through again, without views (its first occurrence has them);
- a view inherits its original's metadata (so metadata filters keep matching it) plus the argus
  lineage keys (:data:`ARGUS_KEYS`), which are short: ids, a rounded score, a kind; never a KB
  passage's text;
- a view whose id is already among the inputs is not emitted again, so running the step over its
  own output adds nothing;
- a view that cannot be built is reported in :attr:`AugmentResult.stats` (``failures``) and its
  original still passes through.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from argus_ir.lineage import ARGUS_KEYS, SOURCE_KEY, VIEW_KEY
from argus_ir.remedy import ORIGINAL, RemedyStats, View

if TYPE_CHECKING:
    from argus_ir.pipeline import Argus

__all__ = [
    "ARGUS_KEYS",
    "AugmentResult",
    "Entry",
    "Record",
    "aaugment_records",
    "augment_records",
    "content_id",
    "is_view",
    "original_lineage",
    "view_metadata",
]


@dataclass(frozen=True)
class Record:
    """A framework document reduced to what argus reads.

    Attributes:
        id: The document's id (``None``: :func:`content_id` of its text is used).
        text: Its text, or ``None`` for a document without text (an image, a blob).
        metadata: Its metadata (read, never modified).
    """

    id: str | None
    text: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """One output entry.

    Attributes:
        position: Index of the input record it belongs to.
        view: ``None`` for the input record itself (pass it through as it came), else a support
            view of it, whose ``metadata`` is already complete (see :func:`view_metadata`).
    """

    position: int
    view: View | None = None


@dataclass
class AugmentResult:
    """What :func:`augment_records` returns.

    Attributes:
        entries: Every input (``view=None``) followed by its views, in input order.
        ids: The id of each input record (its own, or the :func:`content_id` it was given).
        stats: Remedy statistics; ``stats.failures`` names the documents whose views failed.
        skipped: ``(id, reason)`` for inputs that were passed through without diagnosis.
    """

    entries: list[Entry]
    ids: list[str]
    stats: RemedyStats
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failed_positions(self) -> list[int]:
        """Positions of the inputs whose views could not be built (first occurrence of each id)."""
        failed = {doc_id for doc_id, _ in self.stats.failures}
        first: dict[str, int] = {}
        for pos, doc_id in enumerate(self.ids):
            first.setdefault(doc_id, pos)
        return sorted(first[doc_id] for doc_id in failed if doc_id in first)

    def stats_dict(self) -> dict[str, Any]:
        """JSON-ready stats: the remedy's, plus the skipped inputs."""
        out = self.stats.to_dict()
        out["skipped"] = [list(s) for s in self.skipped]
        return out


def content_id(text: str | None) -> str:
    """A stable id for a document that came without one (a hash of its text)."""
    digest = hashlib.blake2b((text or "").encode("utf-8"), digest_size=16).hexdigest()
    return f"argus-doc-{digest}"


def is_view(metadata: Mapping[str, Any] | None) -> bool:
    """Whether metadata marks an argus support view (not an original)."""
    kind = (metadata or {}).get(VIEW_KEY)
    return kind is not None and kind != ORIGINAL


def original_lineage(doc_id: str) -> dict[str, str]:
    """The lineage an original carries in a framework's store: its own id as its source, so views
    fold into it however the store reports or re-keys ids."""
    return {SOURCE_KEY: doc_id, VIEW_KEY: ORIGINAL}


def view_metadata(original: Mapping[str, Any], view: View) -> dict[str, Any]:
    """A view's metadata: the original's (minus any argus keys) plus the view's lineage."""
    out = {k: v for k, v in original.items() if k not in ARGUS_KEYS}
    out.update(view.metadata)
    return out


def _select(records: Sequence[Record]) -> tuple[list[str], list[int], list[tuple[str, str]]]:
    ids = [r.id if r.id is not None else content_id(r.text) for r in records]
    todo: list[int] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for pos, (doc_id, record) in enumerate(zip(ids, records)):
        if is_view(record.metadata):
            skipped.append((doc_id, "already an argus view"))
        elif record.text is None:
            skipped.append((doc_id, "no text content"))
        elif not isinstance(record.text, str):
            skipped.append((doc_id, f"text is {type(record.text).__name__}, not str"))
        elif not record.text.strip():
            skipped.append((doc_id, "empty text"))
        elif doc_id in seen:
            skipped.append((doc_id, "repeated id (its first occurrence is augmented)"))
        else:
            seen.add(doc_id)
            todo.append(pos)
    return ids, todo, skipped


def _entries(
    records: Sequence[Record],
    ids: list[str],
    todo: list[int],
    done: Iterable[list[View]],
) -> list[Entry]:
    views_at: dict[int, list[View]] = dict(zip(todo, done, strict=True))
    existing = set(ids)
    entries = []
    for pos, record in enumerate(records):
        entries.append(Entry(pos))
        for view in views_at.get(pos, []):
            if view.is_original or view.id in existing:
                continue
            full = View(view.id, view.text, view_metadata(record.metadata, view))
            entries.append(Entry(pos, full))
    return entries


def augment_records(
    argus: Argus,
    records: Sequence[Record],
    *,
    show_progress: bool | None = None,
) -> AugmentResult:
    """Diagnose and augment framework records with an :class:`~argus_ir.pipeline.Argus`.

    Args:
        argus: The configured facade (its models load on first use).
        records: The inputs, in order.
        show_progress: A progress bar over documents (``None``: the facade's setting).
    """
    ids, todo, skipped = _select(records)
    stats = RemedyStats()
    docs = [(ids[p], records[p].text) for p in todo]
    done = [views for _, views in argus.process(docs, stats=stats, show_progress=show_progress)]
    return AugmentResult(_entries(records, ids, todo, done), ids, stats, skipped)


async def aaugment_records(
    argus: Argus,
    records: Sequence[Record],
    *,
    show_progress: bool | None = None,
) -> AugmentResult:
    """:func:`augment_records` without blocking the event loop.

    Each batch of ``argus.batch_size`` documents runs in a worker thread; between batches control
    returns to the loop, so other tasks run and a cancellation takes effect at the next batch.
    """
    from tqdm.auto import tqdm

    ids, todo, skipped = _select(records)
    stats = RemedyStats()
    done: list[list[View]] = []
    show = argus.show_progress if show_progress is None else show_progress
    step = argus.batch_size

    def run(chunk: list[int]) -> list[list[View]]:
        docs = [(ids[p], records[p].text) for p in chunk]
        return [views for _, views in argus.process(docs, stats=stats, show_progress=False)]

    with tqdm(total=len(todo), desc="argus", unit="doc", disable=not show) as bar:
        for start in range(0, len(todo), step):
            chunk = todo[start : start + step]
            done.extend(await asyncio.to_thread(run, chunk))
            bar.update(len(chunk))
    return AugmentResult(_entries(records, ids, todo, done), ids, stats, skipped)
