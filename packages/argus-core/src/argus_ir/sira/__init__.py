"""SIRA: LLM vocabulary enrichment for BM25 (Yang et al., §3, eq. 2).

Two sides close the vocabulary gap between queries and documents:

- **Corpus side** (once per corpus): an LLM lists search vocabulary a document lacks (synonyms,
  abbreviations, alternate names, domain phrasings). A document-frequency filter drops phrases
  made only of words too common to discriminate (DF > τ·|C|). What survives is cut into
  sliding-window n-grams and injected into that document's index entry as extra postings. The
  original text is not edited: the phrases are kept beside it (:attr:`SiraIndex.enrichment`), and
  the injected postings do not count towards the document's length, so they change scores only
  through the terms they add.
- **Query side** (per query): an LLM sketches the vocabulary a relevant document would use that
  the query lacks, never the answer itself; its n-grams are kept when ``0 < DF ≤ τ·|C|`` in the
  (enriched) index. One weighted call ranks: ``score(d) = BM25(q_orig, d) + w · BM25(q_exp, d)``.

BM25 is the Lucene variant (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), the one ``bm25s``
computes with ``method="lucene"``; the tests check every score against it. Every LLM reply is
kept in a :class:`CallCache` keyed by prompt version, model and input, so a rerun costs nothing.
Unusable replies (empty, unparseable, copied from the input, answer-like) are counted in the
stats and skipped, never raised.

>>> docs = [("d1", "Aspirin lowers fever"), ("d2", "Heart attack risk"), ("d3", "Flu season")]
>>> index = SiraIndex.build(docs, tau=0.5)
>>> [doc for doc, _ in index.search("myocardial infarction", expansion=["heart attack"])]
['d2']
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from argus_ir.errors import ArgusInputError
from argus_ir.io import atomic_path, iter_jsonl
from argus_ir.llm.base import LLM, Generation
from argus_ir.llm.cache import CallCache, cached_generate

__all__ = [
    "DEFAULT_MAX_N",
    "DEFAULT_TAU",
    "DEFAULT_WEIGHT",
    "SIRA_KEY",
    "TASKS",
    "Analyzer",
    "CallCache",
    "Enrichment",
    "SiraEnricher",
    "SiraIndex",
    "build_prompt",
    "enrich_corpus",
    "evaluate_sira",
    "expand_queries",
    "parse_terms",
]

DEFAULT_TAU = 0.05
"""DF filter: a term is kept when it occurs in at most this share of the documents."""
DEFAULT_WEIGHT = 0.3
"""Weight ``w`` of the expansion in eq. 2."""
DEFAULT_MAX_N = 3
"""Longest n-gram cut from an enrichment phrase."""
MAX_TERMS = 12
"""Phrases a prompt asks for."""
MAX_PHRASE_WORDS = 6
"""Longer 'phrases' are sentences, not search terms, and are dropped."""
TASKS = ("fact", "argument", "duplicate", "qa")
"""Task-aware prompt variants (prompt files ``sira-{corpus,query}-TASK-v1.txt``)."""
PROMPT_SERIES = "v1"
INDEX_FORMAT = 1

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_BULLET = re.compile(r"^\s*(?:[-*•·]+|\d+[.)]|\(\d+\)|[a-z][.)](?=\s))\s*", re.I)
_LABEL = re.compile(
    r"^\s*(?:search\s+)?(?:terms?|keywords?|phrases?|vocabulary|output|answer)\s*:\s*", re.I
)
_VERDICTS = frozenset(
    [
        "true",
        "false",
        "yes",
        "no",
        "supported",
        "refuted",
        "support",
        "refute",
        "correct",
        "incorrect",
    ]
)
_NUMERIC = re.compile(r"^[\d\s.,%/:-]+$")


# -- text analysis ----------------------------------------------------------------------------------


class Analyzer:
    """Lowercased word tokens without English stopwords, Snowball-stemmed (PyStemmer).

    Args:
        stemmer: A Snowball language (``"english"``) or ``None`` for no stemming.
        stopwords: Words to drop (default: bm25s's English list).
    """

    def __init__(
        self, stemmer: str | None = "english", stopwords: Iterable[str] | None = None
    ) -> None:
        if stopwords is None:
            from bm25s.stopwords import STOPWORDS_EN

            stopwords = STOPWORDS_EN
        self.stopwords = frozenset(w.lower() for w in stopwords)
        self.stemmer = stemmer
        self._stem: Any = None
        if stemmer is not None:
            try:
                import Stemmer
            except ImportError:  # pragma: no cover - a core dependency
                raise ImportError("stemming needs PyStemmer: pip install PyStemmer") from None
            self._stem = Stemmer.Stemmer(stemmer)
        self._memo: dict[str, str] = {}

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256("\n".join(sorted(self.stopwords)).encode()).hexdigest()[:12]
        return f"stem={self.stemmer};stop={digest}"

    def words(self, text: str) -> list[str]:
        """Lowercased words of ``text`` (stopwords kept, not stemmed)."""
        return [w.lower() for w in _WORD.findall(text)]

    def tokens(self, text: str) -> list[str]:
        """Index terms of ``text``: words minus stopwords and one-letter words, stemmed."""
        out = []
        for w in self.words(text):
            if len(w) < 2 or w in self.stopwords:
                continue
            s = self._memo.get(w)
            if s is None:
                s = self._stem.stemWord(w) if self._stem is not None else w
                self._memo[w] = s
            out.append(s)
        return out

    def ngrams(self, phrase: str, max_n: int = DEFAULT_MAX_N) -> list[str]:
        """Sliding-window n-grams (n = 1..``max_n``) of a phrase's terms; longer ones join with ``_``.

        >>> Analyzer().ngrams("acute myocardial infarction", 2)
        ['acut', 'myocardi', 'infarct', 'acut_myocardi', 'myocardi_infarct']
        """
        toks = self.tokens(phrase)
        grams: list[str] = []
        for n in range(1, min(max_n, len(toks)) + 1):
            for i in range(len(toks) - n + 1):
                g = "_".join(toks[i : i + n])
                if g not in grams:
                    grams.append(g)
        return grams


# -- the index --------------------------------------------------------------------------------------


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


class SiraIndex:
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
    ) -> SiraIndex:
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
        return _top(self.ids, scores, k)

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
    def load(cls, folder: str | Path) -> SiraIndex:
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


def _top(ids: Sequence[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    positive = np.flatnonzero(scores > 0)
    if not len(positive):
        return []
    if len(positive) > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    order = positive[np.lexsort((positive, -scores[positive]))]
    return [(ids[i], float(scores[i])) for i in order]


# -- LLM replies ------------------------------------------------------------------------------------


def build_prompt(side: str, task: str, text: str, max_terms: int = MAX_TERMS) -> tuple[str, str]:
    """``(prompt version, prompt)`` for one document (``side="corpus"``) or query (``"query"``).

    Raises:
        ValueError: An unknown side or task.
    """
    from argus_ir.remedy.synthesis import load_prompt

    if side not in ("corpus", "query"):
        raise ValueError(f"side must be 'corpus' or 'query', got {side!r}")
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
    version = f"sira-{side}-{task}-{PROMPT_SERIES}"
    return version, load_prompt(version).substitute(text=text.strip(), max_terms=max_terms)


def parse_terms(reply: str) -> list[str]:
    """Phrases from a reply: one per line or separated by ``, `` or ``;``; bullets, numbering,
    quotes and ``Terms:`` labels removed; a JSON list is read as such. May return ``[]``."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").partition("\n")[2]
    items: list[str] | None = None
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            items = [v for v in value if isinstance(v, str)]
    if items is None:
        items = []
        for line in text.splitlines():
            line = _LABEL.sub("", _BULLET.sub("", line))
            items.extend(re.split(r";|,\s", line))  # "1,000" stays one number
    phrases: list[str] = []
    for item in items:
        p = _BULLET.sub("", item).strip().strip("\"'`*.:").strip()
        if _WORD.search(p) and p.lower() not in (q.lower() for q in phrases):
            phrases.append(p)
    return phrases


@dataclass
class ReplyStats:
    """Counts of what the filters did with LLM replies (the issue's bad-input list and more).

    Attributes:
        calls: Prompts that needed a reply; ``cache_hits`` of them came from the cache.
        failed: Calls that returned an error (the item is left unenriched).
        empty: Empty replies.
        unparseable: Replies that held no usable phrase.
        repeats_input: Replies most of whose words copy the input text verbatim.
        phrases: Phrases parsed; then ``kept`` plus those dropped for a reason below.
        too_long: Phrases longer than a search phrase (sentences).
        copied: Phrases whose words are all already in the input (nothing new).
        answer_like: Query side: numbers, dates, verdicts or, for QA, proper names absent from
            the query (the prompt forbids guessing the answer).
    """

    calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    empty: int = 0
    unparseable: int = 0
    repeats_input: int = 0
    phrases: int = 0
    too_long: int = 0
    copied: int = 0
    answer_like: int = 0
    kept: int = 0
    llm_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["llm_s"] = round(self.llm_s, 2)
        out["errors"] = self.errors[:5]
        return out


def _answer_like(phrase: str, query_words: set[str], task: str) -> bool:
    words = phrase.split()
    if _NUMERIC.match(phrase) or phrase.lower().strip(".!") in _VERDICTS:
        return True
    if task == "qa":
        capital = [w for w in words if w[:1].isupper()]
        if capital and len(capital) == len(words):
            return not all(w.lower() in query_words for w in words)
    return False


def _clean(
    reply: Generation, source: str, analyzer: Analyzer, stats: ReplyStats, side: str, task: str
) -> list[str]:
    """The usable phrases of one reply (counted into ``stats``)."""
    if not reply.ok:
        stats.failed += 1
        if reply.error:
            stats.errors.append(reply.error)
        return []
    text = (reply.text or "").strip()
    if not text:
        stats.empty += 1
        return []
    source_words = analyzer.words(source)
    reply_words = analyzer.words(text)
    if len(reply_words) >= 8 and _copied_share(reply_words, source_words) >= 0.6:
        stats.repeats_input += 1
        return []
    phrases = parse_terms(text)
    stats.phrases += len(phrases)
    present = set(analyzer.tokens(source))
    query_words = set(source_words)
    kept: list[str] = []
    for p in phrases:
        toks = analyzer.tokens(p)
        if len(p.split()) > MAX_PHRASE_WORDS:
            stats.too_long += 1
        elif not toks or all(t in present for t in toks):
            stats.copied += 1
        elif side == "query" and _answer_like(p, query_words, task):
            stats.answer_like += 1
        else:
            kept.append(p)
    if not kept and not phrases:
        stats.unparseable += 1
    stats.kept += len(kept)
    return kept


def _copied_share(reply: Sequence[str], source: Sequence[str], n: int = 4) -> float:
    """Share of the reply's words that sit in a run of ``n`` words found verbatim in the source."""
    if len(reply) < n:
        return 0.0
    grams = {tuple(source[i : i + n]) for i in range(len(source) - n + 1)}
    covered = [False] * len(reply)
    for i in range(len(reply) - n + 1):
        if tuple(reply[i : i + n]) in grams:
            for j in range(i, i + n):
                covered[j] = True
    return sum(covered) / len(reply)


# -- the call cache ---------------------------------------------------------------------------------


def _ask(
    llm: LLM,
    prompts: Sequence[tuple[str, str]],
    cache: CallCache | None,
    stats: ReplyStats,
    max_tokens: int,
    show_progress: bool,
) -> list[Generation]:
    """Replies to ``(version, prompt)`` pairs (cached), counted into ``stats``."""
    replies, count = cached_generate(
        llm, prompts, cache, max_tokens=max_tokens, show_progress=show_progress
    )
    stats.calls += count.calls
    stats.cache_hits += count.cache_hits
    stats.llm_s += count.seconds
    return replies


# -- the two sides ----------------------------------------------------------------------------------


@dataclass
class Enrichment:
    """Phrases the LLM proposed per item (documents or queries), after the reply filters."""

    phrases: dict[str, list[str]]
    stats: ReplyStats


def enrich_corpus(
    documents: Sequence[tuple[str, str]],
    llm: LLM,
    *,
    task: str = "fact",
    cache: CallCache | None = None,
    max_terms: int = MAX_TERMS,
    max_tokens: int = 96,
    analyzer: Analyzer | None = None,
    show_progress: bool = False,
) -> Enrichment:
    """Corpus side: ask the LLM for each document's missing search vocabulary.

    The DF filter and the n-gram cut happen when the phrases go into
    :meth:`SiraIndex.build` (``enrichment=result.phrases``).
    """
    return _enrich(
        "corpus", documents, llm, task, cache, max_terms, max_tokens, analyzer, show_progress
    )


def expand_queries(
    queries: Mapping[str, str],
    llm: LLM,
    *,
    task: str = "fact",
    cache: CallCache | None = None,
    max_terms: int = MAX_TERMS,
    max_tokens: int = 96,
    analyzer: Analyzer | None = None,
    show_progress: bool = False,
) -> Enrichment:
    """Query side: each query's expected-response sketch, as phrases.

    Filter them against an index with :meth:`SiraIndex.expansion_terms` before scoring.
    """
    return _enrich(
        "query", list(queries.items()), llm, task, cache, max_terms, max_tokens, analyzer,
        show_progress,
    )  # fmt: skip


def _enrich(
    side: str,
    items: Sequence[tuple[str, str]],
    llm: LLM,
    task: str,
    cache: CallCache | None,
    max_terms: int,
    max_tokens: int,
    analyzer: Analyzer | None,
    show_progress: bool,
) -> Enrichment:
    """One prompt per ``(id, text)`` of ``side``; the usable phrases by id, and the counts."""
    analyzer = analyzer or Analyzer()
    stats = ReplyStats()
    prompts = [build_prompt(side, task, text, max_terms) for _, text in items]
    replies = _ask(llm, prompts, cache, stats, max_tokens, show_progress)
    phrases = {}
    for (key, text), reply in zip(items, replies):
        kept = _clean(reply, text, analyzer, stats, side, task)
        if kept:
            phrases[key] = kept
    return Enrichment(phrases, stats)


# -- the ingest step of the adapters ----------------------------------------------------------------

SIRA_KEY = "sira_terms"
"""Metadata key under which the adapters store a document's enrichment phrases."""


class SiraEnricher:
    """Corpus-side enrichment of plain texts, as the framework adapters use it.

    Args:
        llm: A backend or an ``argus --llm`` spec (loaded on first use).
        task: Prompt variant (:data:`TASKS`).
        cache: Folder of the reply cache (``None``: no cache).
        max_terms: Phrases a prompt asks for.
    """

    def __init__(
        self,
        llm: str | LLM = "transformers",
        *,
        task: str = "fact",
        cache: str | Path | None = None,
        max_terms: int = MAX_TERMS,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
        self.spec = llm
        self.task = task
        self.max_terms = max_terms
        self.cache = None if cache is None else CallCache(cache)
        self._llm: LLM | None = llm if isinstance(llm, LLM) else None

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from argus_ir.llm import load_llm

            self._llm = load_llm(str(self.spec))
        return self._llm

    def __call__(
        self, texts: Sequence[str], *, show_progress: bool = False
    ) -> tuple[list[list[str]], ReplyStats]:
        """Phrases for each text (``[]`` where the reply was unusable) and the reply stats."""
        items = [(str(i), t) for i, t in enumerate(texts)]
        result = enrich_corpus(
            items,
            self.llm,
            task=self.task,
            cache=self.cache,
            max_terms=self.max_terms,
            show_progress=show_progress,
        )
        return [result.phrases.get(str(i), []) for i in range(len(texts))], result.stats


# -- evaluation -------------------------------------------------------------------------------------

CONDITIONS = ("original", "sira-corpus", "sira-query", "sira-both")
"""BM25 over the original text, then SIRA with corpus-side, query-side or both enrichments."""


def evaluate_sira(
    data: Any,
    llm: LLM | None,
    *,
    conditions: Sequence[str] = CONDITIONS,
    task: str = "fact",
    tau: float = DEFAULT_TAU,
    weight: float | Sequence[float] = DEFAULT_WEIGHT,
    cache: CallCache | None = None,
    analyzer: Analyzer | None = None,
    depth: int = 100,
    show_progress: bool = False,
) -> Any:
    """Score BM25 and the SIRA conditions on a :class:`~argus_ir.eval.BeirData`.

    Every condition is compared with ``"original"`` (plain BM25) by a paired t-test. ``llm_calls``
    is what a condition costs without a cache (one prompt per document and/or query);
    ``stats`` holds the reply filters' counts, the LLM time and the cache hits.
    A ``weight`` sequence adds one query-side condition per extra value (``sira-query-w0.5``).

    Returns:
        An :class:`~argus_ir.eval.EvalResult` with retriever ``"bm25"``.
    """
    from argus_ir.eval import ORIGINAL, Condition, EvalResult, paired_test, score_run

    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown SIRA condition {unknown[0]!r} (one of {', '.join(CONDITIONS)})")
    needs_llm = [c for c in conditions if c != ORIGINAL]
    if needs_llm and llm is None:
        raise ValueError(f"conditions {', '.join(needs_llm)} need an LLM")
    weights = [weight] if isinstance(weight, (int, float)) else list(weight)
    analyzer = analyzer or Analyzer()
    docs = [(d.id, d.index_text) for d in data.corpus]
    queries = {q: data.queries[q] for q in data.qrels if q in data.queries}

    t0 = time.perf_counter()
    plain = SiraIndex.build(docs, analyzer=analyzer, tau=tau)
    plain_s = time.perf_counter() - t0
    indexes: dict[str, tuple[SiraIndex, float, dict[str, Any]]] = {"plain": (plain, plain_s, {})}
    if {"sira-corpus", "sira-both"} & set(conditions):
        assert llm is not None
        t0 = time.perf_counter()
        enriched = enrich_corpus(
            docs, llm, task=task, cache=cache, analyzer=analyzer, show_progress=show_progress
        )
        index = SiraIndex.build(docs, enrichment=enriched.phrases, analyzer=analyzer, tau=tau)
        build_s = time.perf_counter() - t0 - enriched.stats.llm_s
        built = {"corpus": enriched.stats.as_dict(), "index": dict(index.stats.__dict__)}
        indexes["enriched"] = (index, enriched.stats.llm_s + build_s, built)
    sketch: Enrichment | None = None
    if {"sira-query", "sira-both"} & set(conditions):
        assert llm is not None
        sketch = expand_queries(
            queries, llm, task=task, cache=cache, analyzer=analyzer, show_progress=show_progress
        )

    def run_of(index: SiraIndex, w: float, expand: bool) -> tuple[dict, Counter[str], int]:
        run: dict[str, dict[str, float]] = {}
        dropped: Counter[str] = Counter()
        used = 0
        for qid, text in queries.items():
            terms: list[str] = []
            if expand and sketch is not None:
                terms, why = index.expansion_terms(sketch.phrases.get(qid, []), text)
                dropped.update(why)
                used += bool(terms)
            run[qid] = dict(_top(index.ids, index.score(text, terms, w), depth))
        return run, dropped, used

    plan: list[tuple[str, str, bool, float]] = []
    for name in conditions:
        kind = "enriched" if name in ("sira-corpus", "sira-both") else "plain"
        expand = name in ("sira-query", "sira-both")
        for i, w in enumerate(weights if expand else weights[:1]):
            label = name if i == 0 else f"{name}-w{w:g}"
            plan.append((label, kind, expand, w))
    out: dict[str, Condition] = {}
    for label, kind, expand, w in plan:
        index, ingest_s, shared = indexes[kind]
        stats: dict[str, Any] = {**shared, "tau": tau, "task": task, "stemmer": analyzer.stemmer}
        run, dropped, used = run_of(index, w, expand)
        calls = len(docs) if kind == "enriched" else 0
        if expand and sketch is not None:
            calls += len(queries)
            stats.update(
                weight=w,
                query=sketch.stats.as_dict(),
                query_terms_dropped=dict(dropped),
                queries_expanded=used,
            )
        aggregate, per_query = score_run(data.qrels, run)
        out[label] = Condition(
            label,
            len(docs),
            1.0,
            ingest_s,
            calls,
            stats,
            aggregate,
            per_query,
        )
    base = out.get(ORIGINAL)
    if base is not None:
        for c in out.values():
            if c is not base:
                c.significance = {
                    m: paired_test(
                        {q: v[m] for q, v in base.per_query.items()},
                        {q: v[m] for q, v in c.per_query.items()},
                    )
                    for m in c.aggregate
                }
    return EvalResult(
        data.name,
        "bm25",
        len(queries),
        len(docs),
        out,
        notes=dict(data.notes),
        subset=bool(data.subset),
    )
