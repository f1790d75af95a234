"""The reference KB that remedies draw support passages from (paper §5, App. D).

A :class:`ReferenceKB` is a list of passages (title, text, optional short description) with a
BM25 index over ``title + text`` (:mod:`argus_ir.kb.bm25`). For a flagged surface form, :meth:`ReferenceKB.lookup` returns
the top ``k_aug`` passages (default 2, the paper's); lookups are cached per normalised form.

Sources: the shipped default (10,033 Wikipedia lead paragraphs, CC BY-SA 4.0, see
``argus_ir/data/KB_LICENSE.md``), a JSONL/Parquet/CSV file, or any iterable of passages. A KB saves
to a folder (numpy/JSON files in bm25s's layout, never pickle, plus ``passages.jsonl`` and a JSON
card) and loads back memory-mapped.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import inspect
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from argus_ir._lru import LRU
from argus_ir.errors import ArgusInputError
from argus_ir.io import replace_folder
from argus_ir.kb.bm25 import BM25Index, words
from argus_ir.outputs import check_output
from argus_ir.text.grounding import normalize

__all__ = [
    "DEFAULT_K_AUG",
    "KnowledgeBase",
    "Passage",
    "ReferenceKB",
    "ask",
    "is_kb_folder",
    "read_card",
]

logger = logging.getLogger(__name__)

DEFAULT_K_AUG = 2
LOOKUP_CACHE_SIZE = 100_000
SHIPPED_LEADS = resources.files("argus_ir") / "data" / "kb_vital10k.jsonl.gz"
"""The shipped Wikipedia lead paragraphs (package data; CC BY-SA 4.0, ``data/KB_LICENSE.md``)."""
SHIPPED_ALIASES = resources.files("argus_ir") / "data" / "kb_aliases.json.gz"
"""Other names of the shipped passages: 69,618 Wikipedia redirects ("einstein" → Albert Einstein,
"macroalgae" → Seaweed; ``scripts/build_kb_aliases.py``, ``data/KB_LICENSE.md``)."""
_ALIASES = "aliases.json"
"""Surface-form lookups a :class:`ReferenceKB` remembers (least recently used forgotten first)."""
FORMAT_VERSION = 1
CARD_FILE = "kb.json"
"""The card of a KB folder (both kinds): format, fingerprint, counts, sources."""
_PASSAGES = "passages.jsonl"
_INDEX = "bm25"


@dataclass(frozen=True)
class Passage:
    """A KB passage.

    Attributes:
        id: Unique id (the title when the source has no id).
        title: The article or entry title.
        text: The passage text.
        description: A short description (Wikidata's, where the KB has it), else ``""``.
    """

    id: str
    title: str
    text: str
    description: str = ""


def postings_scores(index: Any, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """BM25 scores of the passages holding any of ``words``, ``(rows, scores)``, rows ascending:
    the sums bm25s would give (float32, term by term: equal to the bit) over the words' postings
    only, so a lookup costs what its words occur in, whatever the KB's size."""
    vocab = index.vocab_dict
    ids = [vocab[w] for w in words if w in vocab]
    if not ids:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    table = index.scores
    indptr, indices, data = table["indptr"], table["indices"], table["data"]
    spans = [(int(indptr[t]), int(indptr[t + 1])) for t in ids]
    rows = np.unique(np.concatenate([indices[a:b] for a, b in spans]))
    scores = np.zeros(rows.size, dtype=np.float32)
    for a, b in spans:  # a word's postings name each passage once: no repeated index in one add
        scores[np.searchsorted(rows, indices[a:b])] += data[a:b].astype(np.float32)
    return rows.astype(np.int64), scores


def rank(index: Any, surface: str, k: int, first: int | None = None) -> list[tuple[int, float]]:
    """The ``k`` best passage rows for a surface form with their BM25 scores (both KB kinds):
    ``first`` (the row titled or aliased with the form) first with its own score, the rest by
    score, ties by row; no other row of score 0."""
    found = words(surface)
    if not found:
        return []
    rows, scores = postings_scores(index, found)
    order = np.lexsort((rows, -scores))[:k]
    ranked = [(int(rows[j]), float(scores[j])) for j in order if scores[j] > 0]
    if first is not None:
        at = np.searchsorted(rows, first)
        score = float(scores[at]) if at < rows.size and rows[at] == first else 0.0
        ranked = [(first, score)] + [r for r in ranked if r[0] != first]
    return ranked[:k]


@runtime_checkable
class KnowledgeBase(Protocol):
    """What the remedies ask of a KB: a :class:`ReferenceKB`, a gazetteer, or a composite of them.

    ``lookup`` takes the mention's NER ``label`` and the document's text as ``context``; a source
    may use them (a gazetteer chooses a place's sense by the countries the text names) or ignore
    them (the BM25 KB does). ``fingerprint`` names the content, for view ids and settings cards.
    """

    fingerprint: str

    def __len__(self) -> int: ...

    def passage(self, passage_id: str) -> Passage | None: ...

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]: ...


@functools.cache
def shipped_aliases() -> tuple[list[tuple[str, str]], str]:
    """The shipped aliases (:data:`SHIPPED_ALIASES`) and the first 8 hex digits of their file's
    SHA-256 (part of the shipped KB's fingerprint)."""
    raw = SHIPPED_ALIASES.read_bytes()
    payload = json.loads(gzip.decompress(raw))
    pairs = [(str(a), str(t)) for a, t in payload["aliases"]]
    return pairs, hashlib.sha256(raw).hexdigest()[:8]


def _shipped_cache() -> Path:
    """Where the shipped KB's index is kept: named by the shipped files' content and this
    format, so any change to one builds it anew."""
    from argus_ir.encoder.models import cache_dir

    digest = hashlib.sha256(SHIPPED_LEADS.read_bytes())
    digest.update(SHIPPED_ALIASES.read_bytes())
    digest.update(f"argus-bm25|{FORMAT_VERSION}".encode())
    return cache_dir() / "kb" / f"shipped-{digest.hexdigest()[:16]}"


def read_card(src: Path) -> dict[str, Any]:
    """The ``kb.json`` card of a KB folder (either kind), checked for a passage count and a
    fingerprint.

    Raises:
        ArgusInputError: No card, or one that is unreadable or incomplete (names the file).
    """
    if not (src / CARD_FILE).is_file():
        raise ArgusInputError(f"{src} is not a reference KB folder: {CARD_FILE} not found")
    try:
        card = json.loads((src / CARD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArgusInputError(f"{src / CARD_FILE}: not a readable KB card ({exc})") from None
    if not isinstance(card, dict) or not isinstance(card.get("n_passages"), int):
        raise ArgusInputError(f"{src / CARD_FILE}: not a KB card (no passage count)")
    if not isinstance(card.get("fingerprint"), str):
        raise ArgusInputError(f"{src / CARD_FILE}: not a KB card (no fingerprint)")
    return card


def is_kb_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a KB card (a folder of either KB kind, which argus may replace)."""
    try:
        read_card(folder)
    except ArgusInputError:
        return False
    return True


def ask(
    kb: KnowledgeBase, surface: str, k: int, *, label: str | None, context: str | None
) -> list[tuple[Passage, float]]:
    """``kb.lookup`` with the mention's label and document where the KB's ``lookup`` takes them.

    A KB written before the protocol had them (``lookup(self, surface, k)``, e.g. a subclass of
    :class:`ReferenceKB`) keeps working: it is asked with the surface form alone.
    """
    if _takes_context(type(kb)):
        return kb.lookup(surface, k, label=label, context=context)
    return kb.lookup(surface, k)


@functools.lru_cache(maxsize=64)
def _takes_context(kind: type[Any]) -> bool:
    try:
        params = inspect.signature(kind.lookup).parameters
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return True
    return "label" in params and "context" in params


def own_sources(kb: Any) -> list[Any]:
    """The sources of ``kb`` that hold the user's own knowledge (a passages file or folder, a
    framework store): every source of a composite, or ``kb`` itself, that is not one argus ships
    (``shipped = True``: the Wikipedia leads, the gazetteer, the phenotypes)."""
    sources = getattr(kb, "sources", None)
    listed = list(sources.values()) if isinstance(sources, Mapping) else [kb]
    return [s for s in listed if not getattr(s, "shipped", False)]


class ReferenceKB:
    """Passages with a BM25 index over title + text.

    Build with :meth:`from_passages`, :meth:`from_file` or :meth:`default`; reload with :meth:`load`.
    """

    shipped = False
    """Whether this is argus's own KB (the shipped Wikipedia leads), not a user's."""

    def __init__(
        self,
        passages: list[Passage],
        index: Any,
        fingerprint: str,
        aliases: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.passages = passages
        self.index = index
        self.fingerprint = fingerprint
        self._cache: LRU[tuple[str, int], list[tuple[Passage, float]]] = LRU(LOOKUP_CACHE_SIZE)
        self._by_id: dict[str, Passage] | None = None  # built on first use of passage()
        self._by_title: dict[str, int] = {}
        for i, p in enumerate(passages):
            self._by_title.setdefault(normalize(p.title), i)
        self.aliases = sorted(aliases)
        """``(alias, title)`` pairs: a mention written as the alias is known by that passage."""
        self._by_alias: dict[str, int] = {}
        for alias, title in self.aliases:
            known = self._by_title.get(normalize(title))
            if known is not None:
                self._by_alias.setdefault(normalize(alias), known)

    def __len__(self) -> int:
        return len(self.passages)

    def passage(self, passage_id: str) -> Passage | None:
        """The passage with this id (``None`` if the KB has none)."""
        if self._by_id is None:
            self._by_id = {}
            for p in self.passages:
                self._by_id.setdefault(p.id, p)
        return self._by_id.get(passage_id)

    # -- building ---------------------------------------------------------------------------------

    @classmethod
    def from_passages(
        cls, passages: Iterable[Passage], *, show_progress: bool = False
    ) -> ReferenceKB:
        """Index passages (ids must be unique, texts non-empty).

        Raises:
            ArgusInputError: No passage, a repeated id or an empty passage (named by id).
        """
        items = list(passages)
        if not items:
            raise ArgusInputError("the reference KB has no passage")
        seen: set[str] = set()
        digest = hashlib.sha256()
        for p in items:
            if p.id in seen:
                raise ArgusInputError(f"duplicate KB passage id {p.id!r}")
            if not (p.title.strip() or p.text.strip()):
                raise ArgusInputError(f"KB passage {p.id!r} has neither title nor text")
            seen.add(p.id)
            digest.update(json.dumps(asdict(p), ensure_ascii=False).encode("utf-8"))
        texts = [f"{p.title} {p.text}" for p in items]
        index = BM25Index.build(texts, show_progress=show_progress)
        return cls(items, index, digest.hexdigest()[:16])

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        id_field: str = "id",
        title_field: str = "title",
        text_field: str = "text",
        description_fields: tuple[str, ...] = ("description", "wikidata_description"),
        show_progress: bool = False,
    ) -> ReferenceKB:
        """Read passages from JSONL (optionally ``.gz``), Parquet or CSV and index them.

        A record needs ``text_field`` and ``title_field``; its id is ``id_field`` or, if absent, the
        title.

        Raises:
            ArgusInputError: The file is missing or malformed, or a record lacks a field (the
                message names the file and line).
        """
        from argus_ir.tables import check_exists, table_rows

        p = Path(path)
        check_exists(p)
        _, rows = table_rows(p)
        passages = []
        for where, rec in rows:
            for f in (title_field, text_field):
                if not isinstance(rec.get(f), str):
                    raise ArgusInputError(f"{where}: KB record lacks a text {f!r} field")
            desc = next((rec[f] for f in description_fields if isinstance(rec.get(f), str)), "")
            pid = rec.get(id_field) or rec[title_field]
            passages.append(Passage(str(pid), rec[title_field], rec[text_field], desc))
        return cls.from_passages(passages, show_progress=show_progress)

    @classmethod
    def default(cls, *, show_progress: bool = False, cached: bool = True) -> ReferenceKB:
        """The shipped KB: 10,033 Wikipedia lead paragraphs with Wikidata descriptions, known
        also by 69,618 Wikipedia redirects (:data:`SHIPPED_ALIASES`).

        Its BM25 index is built once and kept in the argus cache folder (``$ARGUS_CACHE_DIR`` or
        ``~/.cache/argus``; ``cached=False`` builds it in memory), keyed by the shipped files'
        content and the index format, so later processes read it back (memory-mapped) instead
        of indexing again.
        """
        folder = _shipped_cache() if cached else None
        if folder is not None and is_kb_folder(folder):
            try:
                return cls.load(folder)
            except (ArgusInputError, OSError) as exc:  # cut, foreign, or being replaced
                logger.warning("ignoring the KB cache %s (%s); building it again", folder, exc)
        with SHIPPED_LEADS.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        kb = cls.from_passages(
            (Passage(r["title"], r["title"], r["text"], r["description"]) for r in rows),
            show_progress=show_progress,
        )
        aliases, digest = shipped_aliases()
        kb = cls(kb.passages, kb.index, f"{kb.fingerprint}+aliases:{digest}", aliases)
        if folder is not None:
            try:
                kb.save(folder)
            except (OSError, ArgusInputError) as exc:
                logger.info("shipped KB index not cached at %s (%s)", folder, exc)
        return kb

    # -- lookup -----------------------------------------------------------------------------------

    def titled(self, surface: str) -> Passage | None:
        """The passage titled with the surface form itself (case- and whitespace-normalised)."""
        i = self._by_title.get(normalize(surface))
        return None if i is None else self.passages[i]

    def aliased(self, surface: str) -> Passage | None:
        """The passage one of whose :attr:`aliases` is the surface form (normalised as titles
        are), when none is titled with it."""
        key = normalize(surface)
        i = None if key in self._by_title else self._by_alias.get(key)
        return None if i is None else self.passages[i]

    def names(self) -> Iterator[str]:
        """Every name the KB knows a passage by: its titles, then its aliases."""
        yield from (p.title for p in self.passages)
        yield from (alias for alias, _ in self.aliases)

    def known(self, surface: str) -> Passage | None:
        """The passage known by the surface form: titled with it, else with it as an alias."""
        return self.titled(surface) or self.aliased(surface)

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """The top-``k`` passages for a surface form, best first, with their BM25 scores.

        A passage titled with the surface form itself (compared case- and whitespace-normalised),
        else one with it as an alias, comes first; the rest follow by BM25. Passages that share no query term (score 0) are not
        returned, so a form the KB does not know gives ``[]``. Results are cached per normalised
        form and ``k`` (the last :data:`LOOKUP_CACHE_SIZE`). ``label`` and ``context`` are
        accepted for the :class:`KnowledgeBase` protocol and not used.
        """
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        key = (normalize(surface), k)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        titled = self._by_title.get(key[0], self._by_alias.get(key[0]))
        result = [(self.passages[i], s) for i, s in rank(self.index, surface, k, titled)]
        self._cache[key] = result
        return result

    # -- persistence ------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the KB into ``folder``, all or nothing: an existing KB folder there is replaced, a
        non-empty folder that is not a KB is refused (:mod:`argus_ir.outputs`)."""
        target = check_output(
            folder,
            flag="folder",
            overwrite=True,
            folder=True,
            kind="KB folder",
            is_kind=is_kb_folder,
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            self.index.save(tmp / _INDEX)
            with open(tmp / _PASSAGES, "w", encoding="utf-8") as fh:
                for p in self.passages:
                    fh.write(json.dumps(asdict(p), ensure_ascii=False) + "\n")
            if self.aliases:
                (tmp / _ALIASES).write_text(
                    json.dumps(self.aliases, ensure_ascii=False), encoding="utf-8"
                )
            card = {
                "format_version": FORMAT_VERSION,
                "n_passages": len(self.passages),
                "fingerprint": self.fingerprint,
                "tokenizer": "bm25s.tokenize(stopwords='en')",
            }
            (tmp / CARD_FILE).write_text(json.dumps(card, indent=2), encoding="utf-8")
            replace_folder(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, mmap: bool = True) -> ReferenceKB:
        """Read a KB written by :meth:`save` (the index memory-mapped by default).

        Raises:
            ArgusInputError: The folder is not a KB folder, or is of a newer format.
        """
        src = Path(folder)
        card = read_card(src)
        if card.get("format_version", 0) > FORMAT_VERSION:
            raise ArgusInputError(
                f"{src} has KB format {card['format_version']}; this argus reads {FORMAT_VERSION}"
            )
        passages = []
        with open(src / _PASSAGES, encoding="utf-8", errors="strict") as fh:
            for n, line in enumerate(fh, start=1):
                try:
                    passages.append(Passage(**json.loads(line)))
                except (ValueError, TypeError) as exc:  # a cut or foreign line
                    raise ArgusInputError(
                        f"{src / _PASSAGES}:{n}: not a KB passage ({exc})"
                    ) from None
        if len(passages) != card["n_passages"]:
            raise ArgusInputError(
                f"{src}: {len(passages)} passages but the card says {card['n_passages']}"
            )
        index = BM25Index.load(src / _INDEX, mmap=mmap)
        aliases: list[tuple[str, str]] = []
        if (src / _ALIASES).is_file():
            try:
                aliases = [
                    (str(a), str(t)) for a, t in json.loads((src / _ALIASES).read_text("utf-8"))
                ]
            except (ValueError, TypeError) as exc:
                raise ArgusInputError(
                    f"{src / _ALIASES}: not a list of [alias, title] ({exc})"
                ) from None
        return cls(passages, index, card["fingerprint"], aliases)
