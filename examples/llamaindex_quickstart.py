"""argus in LlamaIndex: an IngestionPipeline step and a node postprocessor.

Run: python examples/llamaindex_quickstart.py   (offline)
"""

from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document
from pydantic import PrivateAttr
from sentence_transformers import SentenceTransformer

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


class MiniLM(BaseEmbedding):
    """all-MiniLM-L6-v2 from its offline package (HuggingFaceEmbedding does the same online)."""

    _model: Any = PrivateAttr()

    def __init__(self) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2")
        self._model = SentenceTransformer(str(resolve_model("minilm")), device="cpu")

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._model.encode(query, normalize_embeddings=True).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_query_embedding(text)


def main() -> None:
    embed_model = MiniLM()
    docs = [Document(id_=doc_id, text=text) for doc_id, text in DOCS]

    plain = VectorStoreIndex.from_documents(docs, embed_model=embed_model)
    print(
        "without argus:",
        [n.node.ref_doc_id for n in plain.as_retriever(similarity_top_k=1).retrieve(QUERY)],
    )

    pipeline = IngestionPipeline(transformations=[ArgusTransform(remedy="expansion"), embed_model])
    nodes = pipeline.run(documents=docs)
    print("nodes:", len(docs), "documents ->", len(nodes), "nodes (originals + views)")
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    hits = index.as_retriever(similarity_top_k=20).retrieve(QUERY)
    found = ArgusPostprocessor(top_k=1, docstore=index.docstore).postprocess_nodes(hits)
    print("with argus:   ", [(n.node.node_id, round(n.score or 0.0, 3)) for n in found])


if __name__ == "__main__":
    main()
