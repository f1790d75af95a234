"""Remedies: support views indexed beside each untouched original (paper §5, App. D).

- ``expansion`` (the paper's KB expansion): one view ``d || p`` per (flagged entity, KB passage),
  so a document with ``N_d`` flagged entities becomes ``1 + k_aug * N_d`` index entries when the KB
  has ``k_aug`` hits for each.
- ``merged`` (no LLM; beyond the paper): one view ``d || p_1 || ... || p_m`` holding every KB
  passage of every flagged entity, so the index grows like synthesis (one view per flagged
  document) without an LLM.
- ``descriptor`` (no LLM; beyond the paper): one view of the document with a short KB description
  inserted after the first mention of each flagged entity.
- ``focus`` (no LLM; beyond the paper): one short view per sentence that mentions flagged
  entities: the document's opening line, then that sentence with each entity's short KB
  description after its mention. The view fits the retriever's window whatever the document's
  length, and it is about the entity in its context rather than the whole document.
- ``enrich`` (no LLM; beyond the paper, document expansion in place): no view; the knowledge of
  each flagged entity, one sentence each, is written into the *vector* of the original (the index
  embeds the original's own string, then ``argus_knowledge``), while its stored text stays the
  user's. It needs the vector argus computes (``embed=True``, ``--vectors``, ``argus
  evaluate``); elsewhere the knowledge of flagged entities becomes a descriptor view.
- ``auto`` (the default): trust decides place. Knowledge from the user's own KB that names the
  entity exactly (title or alias) goes into the original's vector, for every entity it knows,
  flagged or not; everything else (the shipped KB, BM25 answers) goes into a descriptor view
  beside the original, for flagged entities only, so a description that can be wrong never moves
  the original away from the queries it answered.
- ``synthesis`` (the paper's KB-guided LLM synthesis): one view written by an LLM with the Fig. 8
  prompt, accepted only when it is the original plus short insertions
  (:func:`argus_ir.remedy.synthesis.check_rewrite`); a rejected reply is retried once, then the document
  gets its descriptor view instead (counted in :class:`RemedyStats`).

A view budget ``max_views`` (beyond the paper) caps the views of one document: its flagged entities
are taken riskiest first (lowest predicted RPS), each with its passages in KB order, until the
budget is spent; ``merged``, ``descriptor`` and ``synthesis`` views then hold those entities only.

An optional :class:`ContextCheck` (beyond the paper) drops KB passages whose embedding is too far
from the document's, so "half past nine" never gets the album's paragraph.

Every view carries its lineage in metadata (``argus_source_id``, ``argus_view``, ``argus_entity``,
``argus_kb_id``, ``argus_rps``) and a stable id: a hash of the source id, view kind, entity, KB
passage and the settings fingerprint. The original always passes through, first, even when
building its views fails; the failure is counted and described in :class:`RemedyStats`.
"""

from argus_ir.remedy.apply import Plan, apply_remedy, plan_remedy
from argus_ir.remedy.context import CONTEXT_CACHE_SIZE, DEFAULT_CONTEXT_THRESHOLD, ContextCheck
from argus_ir.remedy.stats import RemedyStats
from argus_ir.remedy.synthesis import insertions_only
from argus_ir.remedy.texts import (
    descriptor_text,
    focus_texts,
    masked_passage,
    passage_text,
    sentence_spans,
    view_id,
    view_key,
)
from argus_ir.remedy.view import (
    DEFAULT_REMEDY,
    GENERATED_PREFIX,
    IN_PLACE,
    KINDS,
    ORIGINAL,
    WINDOW_ONLY,
    View,
)

__all__ = [
    "CONTEXT_CACHE_SIZE",
    "DEFAULT_CONTEXT_THRESHOLD",
    "DEFAULT_REMEDY",
    "GENERATED_PREFIX",
    "IN_PLACE",
    "KINDS",
    "ORIGINAL",
    "WINDOW_ONLY",
    "ContextCheck",
    "Plan",
    "RemedyStats",
    "View",
    "apply_remedy",
    "descriptor_text",
    "focus_texts",
    "insertions_only",
    "masked_passage",
    "passage_text",
    "plan_remedy",
    "sentence_spans",
    "view_id",
    "view_key",
]
