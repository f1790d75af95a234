"""Retrieval evaluation of argus remedies on BEIR-format datasets (the paper's protocol, §6).

One retriever embeds the corpus, diagnoses it and ranks (the strict retriever-consistent rule; only
the KB lookup is lexical). Each condition indexes the originals (``"original"``) or the originals
plus one remedy's views; search is exact (inner product over all entries), hits over views are
collapsed to their source documents (:func:`argus_ir.collapse.collapse`, best score), and the
ranked sources are scored with ``ir-measures``. Every remedy is compared with ``"original"`` by a
paired t-test over queries, which the paper does not report.

The package is laid out as the protocol runs: :mod:`~argus_ir.eval.beir` reads the dataset,
:mod:`~argus_ir.eval.search` embeds and searches, :mod:`~argus_ir.eval.measures` and
:mod:`~argus_ir.eval.significance` score and compare, :mod:`~argus_ir.eval.ablations` and
:mod:`~argus_ir.eval.remedies` choose and run the conditions into :mod:`~argus_ir.eval.results`,
and :mod:`~argus_ir.eval.report` writes them; :mod:`~argus_ir.eval.explain` says why single
queries moved.

>>> data = load_beir("beir/scifact")                            # doctest: +SKIP
>>> result = evaluate(data, remedies=("original", "expansion"))  # doctest: +SKIP
>>> result.conditions["expansion"].aggregate["nDCG@10"]          # doctest: +SKIP
"""

from __future__ import annotations

# the names imported "as" themselves are public here too, though not in __all__
from argus_ir.eval.ablations import ABLATABLE, ablation_name, parse_ablations
from argus_ir.eval.ablations import parse_variant as parse_variant
from argus_ir.eval.beir import BeirData, load_beir, subsample
from argus_ir.eval.measures import METRICS, score_run
from argus_ir.eval.remedies import evaluate
from argus_ir.eval.remedies import explain_result as explain_result
from argus_ir.eval.report import report_markdown, results_markdown, write_results
from argus_ir.eval.results import Condition, EvalResult
from argus_ir.eval.search import dense_rankings as dense_rankings
from argus_ir.eval.search import dense_run, embed_texts
from argus_ir.eval.significance import Significance, half_width, paired_test, rps_of_gold
from argus_ir.remedy import ORIGINAL as ORIGINAL

__all__ = [
    "ABLATABLE",
    "METRICS",
    "BeirData",
    "Condition",
    "EvalResult",
    "Significance",
    "ablation_name",
    "dense_run",
    "embed_texts",
    "evaluate",
    "half_width",
    "load_beir",
    "paired_test",
    "parse_ablations",
    "report_markdown",
    "results_markdown",
    "rps_of_gold",
    "score_run",
    "subsample",
    "write_results",
]
