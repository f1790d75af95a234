"""What every framework adapter shares: records in; originals, views, stats and failures out.

The LangChain, Haystack and LlamaIndex packages convert their documents to :class:`Record`, call
:func:`augment_records` (or :func:`aaugment_records`) and convert the :class:`Entry` list back.
Every rule about *which* documents get views and *what* a view carries lives here, once:

- every input comes out, first and untouched, followed by its views;
- lineage is argus's to write: an input's own ``argus_*`` keys are not trusted. By default every
  input is an original: the keys it brought are replaced by an original's lineage (its id as its
  source) and it is diagnosed like any other document; the ids are listed in
  :attr:`AugmentResult.rewritten`. Only with ``trust_lineage=True`` (re-ingesting argus's own
  output) does an input that is a *consistent* argus view (:func:`is_genuine_view`: its id is the
  UUID of its view key, and the key names its source) pass through untouched; an inconsistent one
  is still rewritten. So a document naming another's id as its source cannot fold into that
  document, and a user's own key that merely looks like argus's never hides a document;
- a record without text (``None``), with blank text, or a trusted argus view passes through
  without views, and is listed in :attr:`AugmentResult.skipped` with the reason;
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
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from argus_ir.lineage import (
    ARGUS_KEYS,
    KNOWLEDGE_KEYS,
    has_lineage,
    is_argus_output,
    is_genuine_original,
    is_genuine_view,
    is_view,
    original_lineage,
)
from argus_ir.remedy import RemedyStats, View

if TYPE_CHECKING:
    from argus_ir.diagnose import Diagnosis
    from argus_ir.pipeline import Argus

logger = logging.getLogger(__name__)

TRUST_LINEAGE = False
"""The adapters' default for ``trust_lineage``: lineage keys on input are not trusted."""

__all__ = [
    "ARGUS_KEYS",
    "TRUST_LINEAGE",
    "AugmentResult",
    "Entry",
    "Record",
    "aaugment_records",
    "augment_records",
    "content_id",
    "has_lineage",
    "is_argus_output",
    "is_genuine_original",
    "is_genuine_view",
    "is_view",
    "knowledge_of",
    "original_lineage",
    "original_metadata",
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
        rewritten: Ids of inputs that came with ``argus_*`` lineage keys argus did not trust:
            they come out as originals, their keys replaced (see the module).
        trusted: Positions of the inputs passed through untouched as argus views
            (``trust_lineage=True`` and consistent lineage).
        metadata: Each input's metadata as it must come out: a trusted view's as it came, any
            other's with its ``argus_*`` keys replaced by an original's lineage.
        known: With ``Argus(embed=True)``: the diagnosis pass's fp32 vector of each text it read,
            by that exact string (:meth:`index_vectors` reuses them).
    """

    entries: list[Entry]
    ids: list[str]
    stats: RemedyStats
    skipped: list[tuple[str, str]] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)
    trusted: frozenset[int] = frozenset()
    metadata: list[dict[str, Any]] = field(default_factory=list)
    known: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def index_vectors(
        self, argus: Argus, texts: Sequence[str], ids: Sequence[str], show_progress: bool = False
    ) -> list[np.ndarray | None]:
        """The retriever's fp32 vector of each string an adapter's index embeds for its entries
        (the pass's where it read that very string, else embedded now, each distinct string
        once); a string the tokenizer refuses gets ``None`` and a failure in :attr:`stats`."""
        return argus.embedder.embed(
            texts, self.known, failures=self.stats.failures, ids=ids, show_progress=show_progress
        )

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
        out["lineage_rewritten"] = list(self.rewritten)
        return out


def content_id(text: str | None) -> str:
    """A stable id for a document that came without one (a hash of its text)."""
    digest = hashlib.blake2b((text or "").encode("utf-8"), digest_size=16).hexdigest()
    return f"argus-doc-{digest}"


def original_metadata(metadata: Mapping[str, Any] | None, doc_id: str) -> dict[str, Any]:
    """An original's metadata as argus writes it out: its own keys, any ``argus_*`` keys it came
    with dropped, and an original's lineage (:func:`original_lineage`)."""
    out = {k: v for k, v in (metadata or {}).items() if k not in ARGUS_KEYS}
    out.update(original_lineage(doc_id))
    return out


def knowledge_of(original: View) -> dict[str, str]:
    """The in-place knowledge an original carries (:data:`~argus_ir.lineage.KNOWLEDGE_KEYS`),
    empty where it was not enriched."""
    return {k: original.metadata[k] for k in KNOWLEDGE_KEYS if k in original.metadata}


def view_metadata(original: Mapping[str, Any], view: View) -> dict[str, Any]:
    """A view's metadata: the original's (minus any argus keys) plus the view's lineage."""
    out = {k: v for k, v in original.items() if k not in ARGUS_KEYS}
    out.update(view.metadata)
    return out


@dataclass
class _Selection:
    ids: list[str]
    todo: list[int]
    skipped: list[tuple[str, str]]
    rewritten: list[str]
    trusted: frozenset[int]

    def result(
        self,
        records: Sequence[Record],
        done: Iterable[list[View]],
        stats: RemedyStats,
        known: dict[str, np.ndarray] | None = None,
    ) -> AugmentResult:
        metadata = [
            dict(r.metadata) if pos in self.trusted else original_metadata(r.metadata, doc_id)
            for pos, (doc_id, r) in enumerate(zip(self.ids, records))
        ]
        done = list(done)
        for pos, views in zip(self.todo, done, strict=True):
            # knowledge written into the original's vector (in-place enrichment) goes with it
            metadata[pos].update(knowledge_of(views[0]) if views else {})
        return AugmentResult(
            _entries(records, self.ids, self.todo, done),
            self.ids,
            stats,
            self.skipped,
            self.rewritten,
            self.trusted,
            metadata,
            known or {},
        )


def _select(records: Sequence[Record], trust_lineage: bool) -> _Selection:
    ids = [r.id if r.id is not None else content_id(r.text) for r in records]
    todo: list[int] = []
    skipped: list[tuple[str, str]] = []
    rewritten: list[str] = []
    trusted: set[int] = set()
    seen: set[str] = set()
    for pos, (doc_id, record) in enumerate(zip(ids, records)):
        if trust_lineage and is_genuine_view(record.id, record.metadata):
            trusted.add(pos)
            skipped.append((doc_id, "already an argus view"))
            continue
        if has_lineage(record.metadata) and not is_genuine_original(doc_id, record.metadata):
            rewritten.append(doc_id)
        if record.text is None:
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
    if rewritten:
        logger.warning(
            "%d input(s) came with argus lineage keys argus did not write (or was not told to "
            "trust: trust_lineage=True re-ingests argus's own output); they are indexed as "
            "originals, their argus_* keys replaced (first: %r)",
            len(rewritten),
            rewritten[0],
        )
    return _Selection(ids, todo, skipped, rewritten, frozenset(trusted))


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
    trust_lineage: bool = TRUST_LINEAGE,
) -> AugmentResult:
    """Diagnose and augment framework records with an :class:`~argus_ir.pipeline.Argus`.

    Args:
        argus: The configured facade (its models load on first use).
        records: The inputs, in order.
        show_progress: A progress bar over documents (``None``: the facade's setting).
        trust_lineage: Pass consistent argus views among the inputs through untouched (for
            re-ingesting argus's own output); otherwise every input is an original (the module
            says why).
    """
    sel = _select(records, trust_lineage)
    stats = RemedyStats()
    docs = [(sel.ids[p], records[p].text) for p in sel.todo]
    known: dict[str, np.ndarray] = {}
    # knowledge goes into an original's vector only where the adapter computes it (embed=True)
    processed = argus.process(
        docs, stats=stats, show_progress=show_progress, vectors=False, in_place=argus.embed
    )
    done = [_keep(argus, known, diagnosis, views) for diagnosis, views in processed]
    return sel.result(records, done, stats, known)


def _keep(
    argus: Argus, known: dict[str, np.ndarray], diagnosis: Diagnosis, views: list[View]
) -> list[View]:
    """``views``, with the pass's vector of their original kept in ``known`` where the facade
    embeds (:attr:`AugmentResult.known`)."""
    if argus.embed:
        vector = argus.embedder.known(views[0].text, diagnosis)
        if vector is not None:
            known[views[0].text] = vector
    return views


async def aaugment_records(
    argus: Argus,
    records: Sequence[Record],
    *,
    show_progress: bool | None = None,
    trust_lineage: bool = TRUST_LINEAGE,
) -> AugmentResult:
    """:func:`augment_records` without blocking the event loop.

    Each batch of ``argus.batch_size`` documents runs in a worker thread; between batches control
    returns to the loop, so other tasks run and a cancellation takes effect at the next batch.
    """
    from tqdm.auto import tqdm

    sel = _select(records, trust_lineage)
    ids, todo = sel.ids, sel.todo
    stats = RemedyStats()
    done: list[list[View]] = []
    known: dict[str, np.ndarray] = {}
    show = argus.show_progress if show_progress is None else show_progress
    step = argus.batch_size

    def run(chunk: list[int]) -> list[list[View]]:
        docs = [(ids[p], records[p].text) for p in chunk]
        processed = argus.process(
            docs, stats=stats, show_progress=False, vectors=False, in_place=argus.embed
        )
        return [_keep(argus, known, diagnosis, views) for diagnosis, views in processed]

    with tqdm(total=len(todo), desc="argus", unit="doc", disable=not show) as bar:
        for start in range(0, len(todo), step):
            chunk = todo[start : start + step]
            done.extend(await asyncio.to_thread(run, chunk))
            bar.update(len(chunk))
    return sel.result(records, done, stats, known)
