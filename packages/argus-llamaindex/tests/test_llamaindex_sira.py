"""argus-llamaindex SIRA: the enricher in an IngestionPipeline keeps node text and hides its key."""

from __future__ import annotations

from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document, MetadataMode

from argus_ir.sira import SIRA_KEY, SiraIndex
from argus_ir.sira import SiraEnricher as CoreEnricher
from argus_ir.testing import ScriptedLLM
from argus_llamaindex import SiraEnricher


def test_enricher_in_a_pipeline_keeps_text_and_hides_the_terms():
    docs = [
        Document(text="Aspirin reduces fever and pain in adults.", id_="d1"),
        Document(text="Statins lower cholesterol in adults.", id_="d2"),
        Document(text="", id_="empty"),
    ]
    enricher = SiraEnricher()
    enricher._enricher = CoreEnricher(ScriptedLLM(["antipyretic\nNSAID", "LDL"]))  # plumbing
    nodes = IngestionPipeline(transformations=[enricher]).run(documents=docs)
    assert [n.get_content() for n in nodes] == [d.text for d in docs]
    assert [n.metadata.get(SIRA_KEY) for n in nodes] == [["antipyretic", "NSAID"], ["LDL"], None]
    assert "antipyretic" not in nodes[0].get_content(metadata_mode=MetadataMode.EMBED)
    assert "antipyretic" not in nodes[0].get_content(metadata_mode=MetadataMode.LLM)
    assert SIRA_KEY not in docs[0].metadata
    assert enricher.last_stats["calls"] == 2  # the empty document costs no call
    index = SiraIndex.build(
        [(n.node_id, n.get_content()) for n in nodes if n.get_content()],
        enrichment={n.node_id: n.metadata[SIRA_KEY] for n in nodes if n.metadata.get(SIRA_KEY)},
        tau=0.5,
    )
    assert [d for d, _ in index.search("NSAID")] == ["d1"]
