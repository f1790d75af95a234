"""langchain-argus SIRA: the enricher keeps page_content, the retriever ranks by eq. 2."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.documents import Document

from argus_ir.llm import Generation
from argus_ir.sira import SIRA_KEY
from argus_ir.sira import SiraEnricher as CoreEnricher
from argus_ir.testing import ScriptedLLM
from langchain_argus import SiraEnricher, SiraRetriever

DOCS = [
    Document(page_content="Aspirin reduces fever and pain in adults.", id="d1", metadata={"a": 1}),
    Document(page_content="Statins lower cholesterol in adults.", id="d2"),
    Document(page_content="Influenza vaccines prevent seasonal flu.", id="d3"),
    Document(page_content="Vaccines train the immune system.", id="d4"),
]


def _enricher(*replies):
    enricher = SiraEnricher()
    enricher._enricher = CoreEnricher(ScriptedLLM(replies))  # plumbing: no real LLM here
    return enricher


def test_enricher_adds_terms_and_never_edits_the_text():
    enricher = _enricher("antipyretic\nNSAID", Generation(None, "timeout"), "flu shot", "")
    out = enricher.transform_documents(DOCS)
    assert [d.page_content for d in out] == [d.page_content for d in DOCS]
    assert [d.id for d in out] == ["d1", "d2", "d3", "d4"]
    assert [d.metadata[SIRA_KEY] for d in out] == [["antipyretic", "NSAID"], [], ["flu shot"], []]
    assert out[0].metadata["a"] == 1 and SIRA_KEY not in DOCS[0].metadata  # inputs untouched
    stats = enricher.last_stats
    assert (stats["calls"], stats["failed"], stats["empty"]) == (4, 1, 1)


def test_retriever_finds_a_document_through_its_enrichment_only():
    docs = _enricher("antipyretic", "", "", "").transform_documents(DOCS)
    retriever = SiraRetriever.from_documents(docs, llm=None, k=2, tau=0.5)
    hits = retriever.invoke("antipyretic drugs")
    assert [d.id for d in hits] == ["d1"] and hits[0].page_content == DOCS[0].page_content
    plain = SiraRetriever.from_documents(DOCS, llm=None, k=2, tau=0.5)
    assert plain.invoke("antipyretic drugs") == []


def test_retriever_adds_the_weighted_query_sketch():
    retriever = SiraRetriever.from_documents(DOCS, llm="unused", k=4, tau=0.5, weight=0.5)
    retriever._llm = ScriptedLLM(["immune system\nvaccines"])  # plumbing: no real LLM here
    hits = retriever.invoke("flu in adults")
    index = retriever.index
    terms, _ = index.expansion_terms(["immune system", "vaccines"], "flu in adults")
    expected = index.score("flu in adults", terms, 0.5)
    order = [index.ids[i] for i in np.argsort(-expected, kind="stable") if expected[i] > 0]
    assert [d.id for d in hits] == order[:4]
    assert hits[0].metadata["sira_score"] == pytest.approx(float(expected.max()), rel=1e-5)
    assert "d4" in [d.id for d in hits]  # reached only through the sketch
