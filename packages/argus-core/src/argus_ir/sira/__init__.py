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

The modules: :mod:`argus_ir.lexical` holds the analyser and the BM25 index (``SiraIndex`` is
:class:`~argus_ir.lexical.BM25Index`, the one BM25 of argus); :mod:`~argus_ir.sira.replies` the
prompts and the reply filters; :mod:`~argus_ir.sira.expand` the corpus and query sides;
:mod:`~argus_ir.sira.evaluate` the retrieval evaluation. This package re-exports their names.
"""

from __future__ import annotations

from argus_ir.lexical import (
    DEFAULT_MAX_N,
    DEFAULT_TAU,
    DEFAULT_WEIGHT,
    INDEX_FORMAT,
    Analyzer,
    BM25Index,
    IndexStats,
)
from argus_ir.llm.cache import CallCache
from argus_ir.sira.evaluate import CONDITIONS, evaluate_sira
from argus_ir.sira.expand import SIRA_KEY, Enrichment, SiraEnricher, enrich_corpus, expand_queries
from argus_ir.sira.replies import (
    MAX_PHRASE_WORDS,
    MAX_TERMS,
    PROMPT_SERIES,
    TASKS,
    ReplyStats,
    build_prompt,
    parse_terms,
)

__all__ = [
    "CONDITIONS",
    "DEFAULT_MAX_N",
    "DEFAULT_TAU",
    "DEFAULT_WEIGHT",
    "INDEX_FORMAT",
    "MAX_PHRASE_WORDS",
    "MAX_TERMS",
    "PROMPT_SERIES",
    "SIRA_KEY",
    "TASKS",
    "Analyzer",
    "CallCache",
    "Enrichment",
    "IndexStats",
    "ReplyStats",
    "SiraEnricher",
    "SiraIndex",
    "build_prompt",
    "enrich_corpus",
    "evaluate_sira",
    "expand_queries",
    "parse_terms",
]

SiraIndex = BM25Index
"""SIRA's name for the shared BM25 index (:class:`argus_ir.lexical.BM25Index`), kept for callers."""
