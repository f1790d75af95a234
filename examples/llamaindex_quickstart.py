"""argus in LlamaIndex: an IngestionPipeline step and a node postprocessor.

Run: python examples/llamaindex_quickstart.py   (offline)
"""

from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document
from llama_index.embeddings.huggingface import HuggingFaceEmbedding

from argus_ir.encoder.models import resolve_model
from argus_llamaindex import ArgusPostprocessor, ArgusTransform

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


def main() -> None:
    # all-MiniLM-L6-v2 from its offline package (online: "sentence-transformers/all-MiniLM-L6-v2")
    embed_model = HuggingFaceEmbedding(model_name=str(resolve_model("minilm")), device="cpu")
    docs = [Document(id_=doc_id, text=text) for doc_id, text in DOCS]

    plain = VectorStoreIndex.from_documents(docs, embed_model=embed_model)
    print(
        "without argus:",
        [n.node.ref_doc_id for n in plain.as_retriever(similarity_top_k=1).retrieve(QUERY)],
    )

    # embed=True: every node comes out with its embedding (the originals' from argus's diagnosis
    # pass), so the pipeline needs no embed model and the index embeds only the queries
    pipeline = IngestionPipeline(transformations=[ArgusTransform(embed=True)])
    nodes = pipeline.run(documents=docs)
    print("nodes:", len(docs), "documents ->", len(nodes), "nodes (originals + views)")
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    hits = index.as_retriever(similarity_top_k=20).retrieve(QUERY)
    found = ArgusPostprocessor(top_k=1, docstore=index.docstore).postprocess_nodes(hits)
    print("with argus:   ", [(n.node.node_id, round(n.score or 0.0, 3)) for n in found])


if __name__ == "__main__":
    main()
