"""The BM25 index of argus's lexical layer (Lucene variant), with room for injected postings.

:class:`BM25Index` scores every document for a bag of analysed terms from a sparse (documents x
terms) matrix of per-term BM25 contributions, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` as
``bm25s`` computes it with ``method="lucene"``. Besides a document's own text it can hold extra
postings (SIRA's enrichment n-grams) that add terms without changing the document's length, and
a DF filter over terms. SIRA builds on it (as ``SiraIndex``); the ColDeR bias audit and semantic
coverage use it as their plain BM25. :func:`top_k` cuts a score vector to its best documents.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from argus_ir.errors import ArgusInputError
from argus_ir.io import atomic_path, iter_jsonl
from argus_ir.lexical.analyzer import DEFAULT_MAX_N, Analyzer

__all__ = [
    "DEFAULT_TAU",
    "DEFAULT_WEIGHT",
    "INDEX_FORMAT",
    "BM25Index",
    "IndexStats",
    "top_k",
]

DEFAULT_TAU = 0.05
"""DF filter: a term is kept when it occurs in at most this share of the documents."""
DEFAULT_WEIGHT = 0.3
"""Weight ``w`` of the expansion in eq. 2."""
INDEX_FORMAT = 1
"""Version of the folder layout :meth:`BM25Index.save` writes (``card.json`` records it)."""


@dataclass
class IndexStats:
    """What building an index did with the enrichment it was given.

    Attributes:
        documents: Documents indexed.
        enriched_documents: Documents that received at least one new posting.
        phrases: Enrichment phrases given.
        injected_postings: New (document, term) postings.
        already_present: N-grams skipped because the document already has that term.
        too_common: Unigrams skipped because their DF in the original index exceeds τ·|C|.
    """

    documents: int = 0
    enriched_documents: int = 0
    phrases: int = 0
    injected_postings: int = 0
    already_present: int = 0
    too_common: int = 0


class BM25Index:
    """BM25 over the original text of each document plus injected n-gram postings.

    Build with :meth:`build`; reload with :meth:`load`. Scores come from a sparse
    (documents x terms) matrix of per-term BM25 contributions.
    """

    def __init__(
        self,
        ids: list[str],
        matrix: sparse.csc_matrix,
        vocab: dict[str, int],
        df: np.ndarray,
        *,
        analyzer: Analyzer,
        enrichment: dict[str, list[str]],
        injected: dict[str, list[str]],
        k1: float,
        b: float,
        tau: float,
        max_n: int,
        stats: IndexStats,
    ) -> None:
        self.ids = ids
        self.matrix = matrix
        self.vocab = vocab
        self.doc_freq = df
        self.analyzer = analyzer
        self.enrichment = enrichment
        self.injected = injected
        self.k1, self.b, self.tau, self.max_n = k1, b, tau, max_n
        self.stats = stats

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(
        cls,
        documents: Iterable[tuple[str, str]],
        *,
        enrichment: Mapping[str, Sequence[str]] | None = None,
        analyzer: Analyzer | None = None,
        tau: float = DEFAULT_TAU,
        max_n: int = DEFAULT_MAX_N,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25Index:
        """Index ``(id, text)`` pairs, injecting each document's enrichment phrases.

        A phrase becomes its n-grams (:meth:`Analyzer.ngrams`). An n-gram the document already
        contains adds nothing; a single word that occurs in more than ``tau`` of the original
        documents is skipped as too common (longer n-grams are new terms and always kept). Every
        other n-gram adds one posting (term frequency 1) without changing the document's length.

        Raises:
            ArgusInputError: No document, a repeated id, enrichment for an unknown id, or a bad
                ``tau``/``max_n``.
        """
        if not 0 < tau <= 1:
            raise ArgusInputError(f"tau must be in (0, 1], got {tau}")
        if max_n < 1:
            raise ArgusInputError(f"max_n must be at least 1, got {max_n}")
        analyzer = analyzer or Analyzer()
        ids: list[str] = []
        token_lists: list[list[str]] = []
        seen: set[str] = set()
        for doc_id, text in documents:
            if doc_id in seen:
                raise ArgusInputError(f"duplicate document id {doc_id!r}")
            seen.add(doc_id)
            ids.append(doc_id)
            token_lists.append(analyzer.tokens(text))
        if not ids:
            raise ArgusInputError("the corpus has no document")
        given = {k: list(v) for k, v in (enrichment or {}).items() if v}
        unknown = sorted(set(given) - seen)
        if unknown:
            raise ArgusInputError(
                f"enrichment for {len(unknown)} unknown document id(s), e.g. {unknown[0]!r}"
            )
        original_df: Counter[str] = Counter()
        for toks in token_lists:
            original_df.update(set(toks))
        limit = tau * len(ids)
        stats = IndexStats(documents=len(ids))
        injected: dict[str, list[str]] = {}
        position = {doc_id: i for i, doc_id in enumerate(ids)}
        for doc_id, phrases in given.items():
            present = set(token_lists[position[doc_id]])
            new: list[str] = []
            stats.phrases += len(phrases)
            for phrase in phrases:
                for g in analyzer.ngrams(phrase, max_n):
                    if g in present:
                        stats.already_present += 1
                    elif "_" not in g and original_df[g] > limit:
                        stats.too_common += 1
                    else:
                        present.add(g)
                        new.append(g)
            if new:
                injected[doc_id] = new
                stats.enriched_documents += 1
                stats.injected_postings += len(new)
        matrix, vocab, df = _bm25_matrix(ids, token_lists, injected, k1, b)
        return cls(
            ids,
            matrix,
            vocab,
            df,
            analyzer=analyzer,
            enrichment=given,
            injected=injected,
            k1=k1,
            b=b,
            tau=tau,
            max_n=max_n,
            stats=stats,
        )

    # -- statistics -------------------------------------------------------------------------------

    def df(self, term: str) -> int:
        """Documents whose entry holds ``term`` (an analysed term or ``_``-joined n-gram)."""
        j = self.vocab.get(term)
        return 0 if j is None else int(self.doc_freq[j])

    def filter_terms(
        self, terms: Iterable[str], *, require_present: bool
    ) -> tuple[list[str], Counter[str]]:
        """The DF filter: keep terms with DF ≤ τ·|C| (and DF > 0 when ``require_present``).

        Returns:
            ``(kept, dropped)`` where ``dropped`` counts ``too_common`` and ``absent`` terms.
        """
        limit = self.tau * len(self.ids)
        kept: list[str] = []
        dropped: Counter[str] = Counter()
        for t in terms:
            d = self.df(t)
            if d > limit:
                dropped["too_common"] += 1
            elif require_present and d == 0:
                dropped["absent"] += 1
            elif t not in kept:
                kept.append(t)
        return kept, dropped

    # -- scoring ----------------------------------------------------------------------------------

    def bm25(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 of every document for a bag of terms (repeats count; unknown terms score 0)."""
        counts = Counter(self.vocab[t] for t in terms if t in self.vocab)
        if not counts:
            return np.zeros(len(self.ids), dtype=np.float32)
        cols = np.fromiter(counts, dtype=np.int64)
        weights = np.fromiter(counts.values(), dtype=np.float32)
        return np.asarray(self.matrix[:, cols] @ weights, dtype=np.float32).ravel()

    def score(
        self, query: str, expansion: Sequence[str] = (), weight: float = DEFAULT_WEIGHT
    ) -> np.ndarray:
        """Eq. 2: ``BM25(q_orig, d) + w · BM25(q_exp, d)`` for every document.

        ``expansion`` holds index terms (already filtered, see :func:`expansion_terms`).
        """
        scores = self.bm25(self.analyzer.tokens(query))
        if expansion and weight:
            scores = scores + np.float32(weight) * self.bm25(expansion)
        return scores

    def search(
        self,
        query: str,
        *,
        expansion: Sequence[str] = (),
        weight: float = DEFAULT_WEIGHT,
        k: int = 10,
        phrases: bool = True,
    ) -> list[tuple[str, float]]:
        """The top ``k`` documents with a positive score, best first.

        ``expansion`` is a list of phrases (``phrases=True``: cut into n-grams and DF-filtered
        against this index) or of index terms already filtered (``phrases=False``).
        """
        terms = self.expansion_terms(expansion, query)[0] if phrases else list(expansion)
        scores = self.score(query, terms, weight)
        return top_k(self.ids, scores, k)

    def expansion_terms(
        self, phrases: Iterable[str], query: str = ""
    ) -> tuple[list[str], Counter[str]]:
        """Query-side filter: a sketch's n-grams minus the query's own terms, with
        ``0 < DF ≤ τ·|C|``. Returns ``(terms, dropped counts)``."""
        own = set(self.analyzer.tokens(query))
        grams: list[str] = []
        dropped: Counter[str] = Counter()
        for p in phrases:
            for g in self.analyzer.ngrams(p, self.max_n):
                if g in own:
                    dropped["in_query"] += 1
                else:
                    grams.append(g)
        kept, more = self.filter_terms(grams, require_present=True)
        dropped.update(more)
        return kept, dropped

    # -- persistence ------------------------------------------------------------------------------

    def save(self, folder: str | Path, documents: Iterable[tuple[str, str]] = ()) -> Path:
        """Write the index (``index.npz``, ``vocab.json``, ``enrichment.jsonl``, ``card.json``).

        ``documents`` (``(id, text)``), when given, are written unchanged to ``documents.jsonl``
        so ``argus sira search`` can show them.
        """
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        m = self.matrix.tocsc()
        with atomic_path(out / "index.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, data=m.data, indices=m.indices, indptr=m.indptr, df=self.doc_freq)
        with atomic_path(out / "vocab.json") as tmp:
            tmp.write_text(json.dumps({"ids": self.ids, "vocab": self.vocab}), "utf-8")
        with atomic_path(out / "enrichment.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for doc_id in self.ids:
                if doc_id in self.enrichment or doc_id in self.injected:
                    row = {
                        "id": doc_id,
                        "phrases": self.enrichment.get(doc_id, []),
                        "injected": self.injected.get(doc_id, []),
                    }
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        docs = list(documents)
        if docs:
            with (
                atomic_path(out / "documents.jsonl") as tmp,
                open(tmp, "w", encoding="utf-8") as fh,
            ):
                for doc_id, text in docs:
                    fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
        card = {
            "format": INDEX_FORMAT,
            # the kind keeps the index's first name, so folders written before still load
            "kind": "argus-sira-index",
            "documents": len(self.ids),
            "k1": self.k1,
            "b": self.b,
            "tau": self.tau,
            "max_n": self.max_n,
            "stemmer": self.analyzer.stemmer,
            "analyzer": self.analyzer.fingerprint,
            "stats": self.stats.__dict__,
        }
        with atomic_path(out / "card.json") as tmp:
            tmp.write_text(json.dumps(card, indent=2) + "\n", "utf-8")
        return out

    @classmethod
    def load(cls, folder: str | Path) -> BM25Index:
        """Read an index written by :meth:`save` (``allow_pickle=False``).

        Raises:
            ArgusInputError: A missing file or an unknown format (named).
        """
        folder = Path(folder)
        card_path = folder / "card.json"
        if not card_path.exists():
            raise ArgusInputError(f"{folder}: not a SIRA index (no card.json)")
        card = json.loads(card_path.read_text("utf-8"))
        if card.get("kind") != "argus-sira-index" or card.get("format") != INDEX_FORMAT:
            raise ArgusInputError(
                f"{card_path}: not a SIRA index of format {INDEX_FORMAT} "
                f"(kind {card.get('kind')!r}, format {card.get('format')!r})"
            )
        names = json.loads((folder / "vocab.json").read_text("utf-8"))
        with np.load(folder / "index.npz", allow_pickle=False) as z:
            shape = (len(names["ids"]), len(names["vocab"]))
            matrix = sparse.csc_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
            df = z["df"]
        enrichment: dict[str, list[str]] = {}
        injected: dict[str, list[str]] = {}
        path = folder / "enrichment.jsonl"
        if path.exists():
            for _, row in iter_jsonl(path):
                if row["phrases"]:
                    enrichment[row["id"]] = row["phrases"]
                if row["injected"]:
                    injected[row["id"]] = row["injected"]
        return cls(
            names["ids"],
            matrix,
            names["vocab"],
            df,
            analyzer=Analyzer(card["stemmer"]),
            enrichment=enrichment,
            injected=injected,
            k1=card["k1"],
            b=card["b"],
            tau=card["tau"],
            max_n=card["max_n"],
            stats=IndexStats(**card["stats"]),
        )


def _bm25_matrix(
    ids: Sequence[str],
    token_lists: Sequence[Sequence[str]],
    injected: Mapping[str, Sequence[str]],
    k1: float,
    b: float,
) -> tuple[sparse.csc_matrix, dict[str, int], np.ndarray]:
    """Lucene BM25 contributions per (document, term); lengths are the original token counts."""
    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    tfs: list[float] = []
    lengths = np.array([len(t) for t in token_lists], dtype=np.float64)
    for i, (doc_id, toks) in enumerate(zip(ids, token_lists)):
        counts = Counter(toks)
        counts.update(injected.get(doc_id, ()))
        for term, count in counts.items():
            rows.append(i)
            cols.append(vocab.setdefault(term, len(vocab)))
            tfs.append(count)
    r = np.array(rows, dtype=np.int64)
    c = np.array(cols, dtype=np.int64)
    tf = np.array(tfs, dtype=np.float64)
    df = np.bincount(c, minlength=len(vocab)).astype(np.int64)
    n = len(ids)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
    avgdl = lengths.mean() if lengths.mean() > 0 else 1.0
    norm = k1 * (1.0 - b + b * lengths[r] / avgdl)
    data = (idf[c] * tf / (tf + norm)).astype(np.float32)
    matrix = sparse.csc_matrix((data, (r, c)), shape=(n, len(vocab)))
    return matrix, vocab, df


def top_k(ids: Sequence[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` best ``(id, score)`` pairs with a positive score, best first (ties: index order).

    ``scores`` holds one score per id, as :meth:`BM25Index.score` returns them.
    """
    positive = np.flatnonzero(scores > 0)
    if not len(positive):
        return []
    if len(positive) > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    order = positive[np.lexsort((positive, -scores[positive]))]
    return [(ids[i], float(scores[i])) for i in order]
