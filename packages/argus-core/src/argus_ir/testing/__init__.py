"""Shared test material for argus adapters (imports pytest; not loaded by ``import argus_ir``).

- :data:`SCENARIO`: one small corpus, one query and the document argus must rescue; every
  framework's end-to-end test indexes the same corpus and asks the same query.
- :data:`SCENARIO_QUERIES`: twelve film, city and other queries over that corpus, each with the
  document it is about.
- :data:`FORGED`: the texts and queries of the forged-lineage (tenant) tests.
- :class:`AdapterContract`: the behaviour every adapter promises, as pytest tests; a framework's
  test suite subclasses it and implements a few hooks.
- :class:`LifecycleContract`: what a store holds after any single fault and one rerun (a kill
  at each boundary of the recipe, two writers, splitters that make random ids), the same table
  of scenarios for every framework × store, one comparator (:mod:`argus_ir.testing.lifecycle`).
- :class:`ScriptedLLM`: an LLM backend that replies from a script (plumbing tests).
- :data:`STORE_KB_ENTRIES`, :data:`STORE_KB_DOCUMENT`: a small product wiki each adapter puts in
  its framework's store to test the store as the KB.
- :func:`lead_documents`, :data:`LEAD_QUERIES`: 160 documents with metadata and queries over
  them (embed-once tests).
- :func:`cosine_reference`: what a collapse over a real store must return, computed with numpy.
- :data:`KNOWN_TEXTS`, :data:`KNOWN_KB`, :func:`write_passages`, :func:`cosine`: posts and a
  passages file that knows their venues (in-place enrichment tests).
"""

from argus_ir.testing.contract import AdapterContract, contract_kb
from argus_ir.testing.knowledge import KNOWN_KB, KNOWN_TEXTS, cosine, write_passages
from argus_ir.testing.lifecycle import SCENARIOS, LifecycleContract
from argus_ir.testing.llm import ScriptedLLM
from argus_ir.testing.reference import cosine_reference
from argus_ir.testing.scenario import (
    FORGED,
    LEAD_QUERIES,
    SCENARIO,
    SCENARIO_QUERIES,
    STORE_KB_DOCUMENT,
    STORE_KB_ENTRIES,
    Scenario,
    lead_documents,
    minilm_path,
)

__all__ = [
    "FORGED",
    "KNOWN_KB",
    "KNOWN_TEXTS",
    "LEAD_QUERIES",
    "SCENARIO",
    "SCENARIOS",
    "SCENARIO_QUERIES",
    "STORE_KB_DOCUMENT",
    "STORE_KB_ENTRIES",
    "AdapterContract",
    "LifecycleContract",
    "Scenario",
    "ScriptedLLM",
    "contract_kb",
    "cosine",
    "cosine_reference",
    "lead_documents",
    "minilm_path",
    "write_passages",
]
