"""argus in Haystack 3: indexing and query pipelines, with a YAML round trip.

Run: python examples/haystack_quickstart.py   (needs sentence-transformers-haystack; offline)
"""

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore

from argus_ir.encoder.models import resolve_model
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersTextEmbedder,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser

DOCS = [
    (
        "film-1",
        "Humphrey Bogart once filmed a scene in Lucknow, and the crew still talks about the heat.",
    ),
    ("film-3", "Casablanca's old medina is crowded with tourists every summer."),
    ("film-4", "The Moroccan port of Casablanca handles most of the country's trade."),
    ("sci-2", "Niels Bohr argued with Albert Einstein about quantum theory for decades."),
    ("music-2", "Johann Sebastian Bach wrote the cantata for a Sunday service in Leipzig."),
]
QUERY = "the actor who starred in Casablanca and The Maltese Falcon"
MODEL = str(resolve_model("minilm"))  # all-MiniLM-L6-v2 from its offline package


def main() -> None:
    store = InMemoryDocumentStore()
    indexing = Pipeline()
    # embed=True: every document comes out with its embedding (the originals' from argus's
    # diagnosis pass), as SentenceTransformersDocumentEmbedder would give it: no embedder here
    indexing.add_component("argus", ArgusAugmenter(retriever="minilm", embed=True))
    indexing.add_component("writer", DocumentWriter(document_store=store))
    indexing.connect("argus.documents", "writer.documents")

    indexing = Pipeline.loads(indexing.dumps())  # the YAML round trip: it loads back and runs
    store = indexing.get_component("writer").document_store
    docs = [Document(id=doc_id, content=text) for doc_id, text in DOCS]
    out = indexing.run({"argus": {"documents": docs}}, include_outputs_from={"argus"})
    print(
        "argus stats:",
        {k: out["argus"]["stats"][k] for k in ("documents", "flagged_entities", "views")},
    )

    query = Pipeline()
    query.add_component(
        "text_embedder",
        SentenceTransformersTextEmbedder(model=MODEL, local_files_only=True, progress_bar=False),
    )
    query.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=20))
    query.add_component("collapser", ArgusCollapser(top_k=1, document_store=store))
    query.connect("text_embedder.embedding", "retriever.query_embedding")
    query.connect("retriever.documents", "collapser.documents")
    result = query.run({"text_embedder": {"text": QUERY}}, include_outputs_from={"retriever"})
    first_raw = result["retriever"]["documents"][0]
    print(
        "best raw hit:",
        first_raw.id[:12],
        first_raw.meta.get("argus_view"),
        "of",
        first_raw.meta.get("argus_source_id"),
    )
    print("with argus:  ", [(d.id, round(d.score, 3)) for d in result["collapser"]["documents"]])


if __name__ == "__main__":
    main()
