"""argus with Haystack's SentenceWindowRetriever: argus runs over the splits, the collapser folds
views into their split, and the windows are built around originals only.

Run: python examples/haystack_parent_documents.py   (needs sentence-transformers-haystack; offline)
"""

from haystack import Document, Pipeline
from haystack.components.preprocessors import DocumentSplitter
from haystack.components.retrievers import SentenceWindowRetriever
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore

from argus_ir.encoder.models import resolve_model
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser

DOCS = {
    "film-1": "Humphrey Bogart once filmed a scene in Lucknow, and the crew still talks about "
    "the heat.",
    "film-3": "Casablanca's old medina is crowded with tourists every summer.",
    "film-4": "The Moroccan port of Casablanca handles most of the country's trade.",
    "geo-2": "Kathmandu sits in a valley ringed by hills, and its air stays cool in spring.",
    "music-2": "Johann Sebastian Bach wrote the cantata for a Sunday service in Leipzig.",
}
QUESTION = "the actor who starred in Casablanca and The Maltese Falcon"
MODEL = str(resolve_model("minilm"))  # all-MiniLM-L6-v2 from its offline package


def index(store: InMemoryDocumentStore, argus: bool) -> None:
    """Split each document into numbered five-word splits (``source_id``, ``split_id``), then
    embed and write them; with argus, the augmenter runs over the splits and embeds them and
    their views itself (``embed=True``)."""
    pipe = Pipeline()
    pipe.add_component("splitter", DocumentSplitter(split_by="word", split_length=5))
    if argus:
        embedder = ArgusAugmenter(retriever="minilm", embed=True, progress_bar=False)
    else:
        embedder = SentenceTransformersDocumentEmbedder(
            model=MODEL, local_files_only=True, progress_bar=False
        )
    pipe.add_component("embedder", embedder)
    pipe.add_component("writer", DocumentWriter(document_store=store))
    pipe.connect("splitter.documents", "embedder.documents")
    pipe.connect("embedder.documents", "writer.documents")
    docs = [Document(id=doc_id, content=text) for doc_id, text in DOCS.items()]
    pipe.run({"splitter": {"documents": docs}})


def windows(store: InMemoryDocumentStore, argus: bool) -> tuple[list[str], list[str]]:
    """The documents the windows come from, best first, and the windows' text."""
    pipe = Pipeline()
    pipe.add_component(
        "text_embedder",
        SentenceTransformersTextEmbedder(model=MODEL, local_files_only=True, progress_bar=False),
    )
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=10))
    last = "retriever"
    if argus:  # fold views into their split *before* the windows are built
        pipe.add_component("collapser", ArgusCollapser(top_k=3, document_store=store))
        pipe.connect("retriever.documents", "collapser.documents")
        last = "collapser"
    pipe.add_component("windows", SentenceWindowRetriever(document_store=store, window_size=2))
    pipe.connect("text_embedder.embedding", "retriever.query_embedding")
    pipe.connect(f"{last}.documents", "windows.retrieved_documents")
    out = pipe.run({"text_embedder": {"text": QUESTION}}, include_outputs_from={last})
    hits = out[last]["documents"][:3]
    return [d.meta["source_id"] for d in hits], out["windows"]["context_windows"][:3]


def main() -> None:
    plain = InMemoryDocumentStore()
    index(plain, argus=False)
    print("without argus:", " ".join(windows(plain, argus=False)[0]))

    store = InMemoryDocumentStore()
    index(store, argus=True)
    sources, texts = windows(store, argus=True)
    print("with argus:", " ".join(sources))
    print("first window:", texts[0])
    print("contexts are originals:", all(any(t in d for d in DOCS.values()) for t in texts))


if __name__ == "__main__":
    main()
