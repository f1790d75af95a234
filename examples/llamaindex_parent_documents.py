"""argus with LlamaIndex's AutoMergingRetriever: documents split into a hierarchy, the leaves and
argus's views in the vector index, the fold before the merge; contexts are the parser's nodes.

Run: python examples/llamaindex_parent_documents.py   (offline)
"""

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
from llama_index.core.retrievers import AutoMergingRetriever
from llama_index.core.schema import Document
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.embeddings.huggingface import HuggingFaceEmbedding

from argus_ir.encoder.models import resolve_model
from argus_llamaindex import ArgusPostprocessor, ArgusRetriever, ArgusTransform

DOCS = {
    "film-1": "Humphrey Bogart once filmed a scene in Lucknow, and the crew still talks about "
    "the heat. The shoot took three days in a courtyard near the old bazaar. Local extras "
    "were paid in sweets and tea, and the generator failed twice. The reels were flown out "
    "through Delhi, and the scene was cut from the final print.",
    "film-3": "Casablanca's old medina is crowded with tourists every summer. Guides lead groups "
    "through the narrow lanes before the afternoon heat. The stalls sell leather, lamps and "
    "spices, and most close for the evening prayer. Hotels near the corniche fill up by June.",
    "film-4": "The Moroccan port of Casablanca handles most of the country's trade. Container "
    "ships unload grain and fuel on the eastern quays. A new terminal opened last year for "
    "car exports. Rail lines connect the docks with the phosphate mines inland.",
    "sci-2": "Niels Bohr argued with Albert Einstein about quantum theory for decades. Their "
    "letters fill several volumes. The debate turned on whether the theory was complete. "
    "Neither convinced the other, and both kept writing until Einstein's death.",
    "music-2": "Johann Sebastian Bach wrote the cantata for a Sunday service in Leipzig. The "
    "choir had four days to learn it. The score calls for two oboes, strings and a continuo. "
    "The manuscript survives in a library in Berlin.",
}
QUESTION = "the actor who starred in Casablanca and The Maltese Falcon"


def merging_retriever(embeddings, nodes, fold: bool) -> AutoMergingRetriever:
    """The docstore holds every node (the merge reads parents from it); the index the leaves."""
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    context = StorageContext.from_defaults(docstore=docstore)
    index = VectorStoreIndex(get_leaf_nodes(nodes), storage_context=context, embed_model=embeddings)
    hits = index.as_retriever(similarity_top_k=8)
    if fold:  # views fold into their leaves before the merge counts them
        hits = ArgusRetriever(hits, ArgusPostprocessor(index=index))
    return AutoMergingRetriever(hits, context)


def names(found) -> str:
    return " ".join(n.node.ref_doc_id for n in found)


def main() -> None:
    # all-MiniLM-L6-v2 from its offline package (online: "sentence-transformers/all-MiniLM-L6-v2")
    embeddings = HuggingFaceEmbedding(model_name=str(resolve_model("minilm")), device="cpu")
    docs = [Document(id_=doc_id, text=text) for doc_id, text in DOCS.items()]
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[256, 50], chunk_overlap=0)

    plain = IngestionPipeline(transformations=[parser]).run(documents=docs)
    print("without argus:", names(merging_retriever(embeddings, plain, False).retrieve(QUESTION)))

    # argus after the parser: views of the leaves only (a parent gets none). remedy="expansion"
    # here, not the default: over these 50-token leaves the default ranks film-3 first; it
    # costs about 1.9 x a plain ingest against the default's 1.2 x (docs/benchmarks.md)
    argus = ArgusTransform(retriever="minilm", remedy="expansion", k_aug=2)
    nodes = IngestionPipeline(transformations=[parser, argus]).run(documents=docs)
    print("argus views:", argus.last_stats["views"])
    found = merging_retriever(embeddings, nodes, True).retrieve(QUESTION)
    print("with argus:", names(found))
    texts = {n.node_id: n.text for n in nodes if n.metadata["argus_view"] == "original"}
    print(
        "contexts are the parser's nodes:",
        all(n.node.text == texts.get(n.node.node_id) for n in found),
    )


if __name__ == "__main__":
    main()
