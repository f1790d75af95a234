"""Retriever bias audit after ColDeR (Fayyaz et al., §3.3-3.4): paired documents built from
Re-DocRED, each pair differing in one factor, scored by a retriever and compared by paired t-tests.

A *sample* is one Re-DocRED relation ``(head, r, tail)`` whose evidence is a single sentence holding
both a head and a tail mention; its query is the relation's template (Table A.5 of the paper) filled
with the head's longest name. From one sample's document the six settings build two documents:

================== =================================================== ==========================
setting            D1                                                  D2
================== =================================================== ==========================
answer_importance  evidence sentence, then the neutral sentences       a head-only sentence, then
                                                                       the same neutral sentences
position           evidence sentence first, then the neutral ones      the neutral ones, evidence last
literal            the document with every head mention in the         ... in the longest name
                   query's (shortest) name
brevity            the evidence sentence alone                         evidence + the neutral ones
repetition         evidence + two head-only sentences                  evidence + two neutral
                                                                       sentences of nearest length
foil               evidence inside four unrelated sentences, repeated  the head's name twice and a
                   (answer present, long, late)                        head-only sentence (no
                                                                       answer; short, early, literal)
================== =================================================== ==========================

*Neutral* sentences mention neither head nor tail; *head-only* sentences mention the head but not
the tail (neither may contain the tail's names as text). ``t > 0`` means the retriever scores D1
higher: a preference for the answer, for early evidence, for matching name forms, for brevity, for
repetition; in ``foil`` a negative ``t`` means the foil wins (the paper: over 90% of pairs for every
dense retriever it tests).

>>> docs, notes = load_redocred("dev_revised.json")           # doctest: +SKIP
>>> pairs, notes = build_pairs(docs, n=250, seed=0)           # doctest: +SKIP
>>> stats = score_settings(pairs, dense_scorer(encoder))      # doctest: +SKIP
"""

from __future__ import annotations

# ``name as name``: public names importable from here but outside ``__all__``, as before.
from argus_ir.bias.audit import audit_biases
from argus_ir.bias.data import Mention as Mention
from argus_ir.bias.data import RedocDoc, load_redocred, load_templates
from argus_ir.bias.pairs import FOIL_FILLER as FOIL_FILLER
from argus_ir.bias.pairs import SETTINGS, Pair, build_pairs, pairs_fingerprint
from argus_ir.bias.pairs import pair_corpus as pair_corpus
from argus_ir.bias.report import D1_MEANS as D1_MEANS
from argus_ir.bias.report import BiasReport as BiasReport
from argus_ir.bias.report import bias_markdown, load_bias_report, write_bias_report
from argus_ir.bias.samples import Sample, find_samples
from argus_ir.bias.scoring import Scorer as Scorer
from argus_ir.bias.scoring import augmented_scorer, bm25_scorer, dense_scorer, score_settings
from argus_ir.bias.stats import BiasStat, paired_stat

__all__ = [
    "SETTINGS",
    "BiasStat",
    "Pair",
    "RedocDoc",
    "Sample",
    "audit_biases",
    "augmented_scorer",
    "bias_markdown",
    "bm25_scorer",
    "build_pairs",
    "dense_scorer",
    "find_samples",
    "load_bias_report",
    "load_redocred",
    "load_templates",
    "paired_stat",
    "pairs_fingerprint",
    "score_settings",
    "write_bias_report",
]
