"""Semantic stratification: entity-based strata of a corpus, how well a query set covers them, and
retrieval scores per stratum ("Coverage, Not Averages", Klearman et al.).

1. **Strata.** Named entities of every document (the NER backends, or an LLM's list of names
   grounded in the text, :class:`~argus_ir.text.mentions.LLMMentions`; statistics such as
   "p<0.05" and section headings such as "Background" are not names, :func:`is_name`) are
   embedded with an encoder and clustered (Ward agglomerative clustering of the unit vectors, cut
   into ``n_clusters``; the entities in at least ``min_df`` documents, at most ``max_entities`` of
   the most frequent, define the clusters and every other entity joins its nearest centroid). A
   document's strata are its entities' clusters; its primary stratum is the most frequent one.
   Each stratum is labelled by its three most frequent entities.
2. **Query stratification.** A query's entities map to clusters; its coverage vector is their
   share. A query without a known entity is placed by its own embedding at the nearest centroid
   (counted).
3. **Coverage.** Minimum Semantic Coverage (MSC): the share of strata touched by at least one
   query; document-weighted coverage: the share of documents whose primary stratum is touched;
   the Jensen-Shannon divergence (base 2, 0 to 1) between the queries' and the corpus's
   distributions over strata.
4. **Stratified evaluation.** Per-query scores grouped by the query's primary stratum: micro
   average (every query equal) and macro average (every stratum equal), and bootstrap win rates of
   one retriever over another under both.
5. **Gap filling.** For strata no query touches, an LLM writes a question from sampled documents
   of the stratum; each is marked synthetic, keeps its document as the one relevant answer and is
   scored separately.
"""

from __future__ import annotations

# ``name as name``: public names importable from here but outside ``__all__``, as before.
from argus_ir.coverage.audit import audit_coverage as audit_coverage
from argus_ir.coverage.entities import HEADING_WORDS as HEADING_WORDS
from argus_ir.coverage.entities import entities_of, is_name
from argus_ir.coverage.gaps import PROMPT_VERSION as PROMPT_VERSION
from argus_ir.coverage.gaps import SyntheticQuery, gap_queries
from argus_ir.coverage.report import CoverageReport as CoverageReport
from argus_ir.coverage.report import coverage_markdown as coverage_markdown
from argus_ir.coverage.report import write_coverage_report as write_coverage_report
from argus_ir.coverage.stats import bootstrap_win_rate, coverage_metrics, stratified_means
from argus_ir.coverage.strata import NO_ENTITIES, Strata, build_strata, stratify_queries
from argus_ir.coverage.strata import Embed as Embed
from argus_ir.coverage.strata import primary_of as primary_of

__all__ = [
    "NO_ENTITIES",
    "Strata",
    "SyntheticQuery",
    "bootstrap_win_rate",
    "build_strata",
    "coverage_metrics",
    "entities_of",
    "gap_queries",
    "is_name",
    "stratified_means",
    "stratify_queries",
]
