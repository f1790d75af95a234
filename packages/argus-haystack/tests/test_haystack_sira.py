"""argus-haystack SIRA: the enricher keeps content, serialises, and counts bad replies."""

from __future__ import annotations

import pytest
from haystack import Document, Pipeline

from argus_ir.llm import Generation
from argus_ir.sira import SIRA_KEY
from argus_ir.sira import SiraEnricher as CoreEnricher
from argus_ir.testing import ScriptedLLM
from haystack_integrations.components.augmenters.argus import SiraEnricher


def test_enricher_keeps_content_and_adds_terms():
    docs = [
        Document(content="Aspirin reduces fever and pain in adults.", id="d1"),
        Document(content="Statins lower cholesterol in adults.", id="d2"),
        Document(content=None, id="nothing"),
    ]
    enricher = SiraEnricher(progress_bar=False)
    enricher._enricher = CoreEnricher(ScriptedLLM(["antipyretic", Generation(None, "HTTP 500")]))
    result = enricher.run(documents=docs)
    out = result["documents"]
    assert [d.content for d in out] == [d.content for d in docs]
    assert [d.id for d in out] == ["d1", "d2", "nothing"]
    assert out[0].meta[SIRA_KEY] == ["antipyretic"] and out[1].meta[SIRA_KEY] == []
    assert out[2] is docs[2] and SIRA_KEY not in docs[0].meta
    assert result["stats"]["failed"] == 1 and result["stats"]["errors"] == ["HTTP 500"]


def test_enricher_round_trips_through_yaml():
    pipe = Pipeline()
    pipe.add_component("sira", SiraEnricher(llm="openai:http://127.0.0.1:9/v1@m", task="qa"))
    again = Pipeline.loads(pipe.dumps())
    component = again.get_component("sira")
    assert (component.llm, component.task) == ("openai:http://127.0.0.1:9/v1@m", "qa")
    with pytest.raises(ValueError, match="unknown task"):
        SiraEnricher(task="chat")
