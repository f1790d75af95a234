"""argus's lexical layer: text analysis and the BM25 index every system shares.

:mod:`~argus_ir.lexical.analyzer` turns text into index terms (:class:`Analyzer`) and measures
verbatim copying (:func:`copied_share`); :mod:`~argus_ir.lexical.bm25` holds the Lucene-variant
BM25 index (:class:`BM25Index`). SIRA (:mod:`argus_ir.sira`) enriches this index with LLM
vocabulary; the ColDeR bias audit and semantic coverage use it as their plain BM25.
"""

from __future__ import annotations

from argus_ir.lexical.analyzer import DEFAULT_MAX_N, WORD, Analyzer, copied_share
from argus_ir.lexical.bm25 import (
    DEFAULT_TAU,
    DEFAULT_WEIGHT,
    INDEX_FORMAT,
    BM25Index,
    IndexStats,
    top_k,
)

__all__ = [
    "DEFAULT_MAX_N",
    "DEFAULT_TAU",
    "DEFAULT_WEIGHT",
    "INDEX_FORMAT",
    "WORD",
    "Analyzer",
    "BM25Index",
    "IndexStats",
    "copied_share",
    "top_k",
]
