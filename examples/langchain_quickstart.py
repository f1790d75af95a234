"""argus in LangChain: a query that misses its document without argus, and finds it with argus.

Run: python examples/langchain_quickstart.py   (offline: MiniLM, spaCy and the KB ship as packages)
"""

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from sentence_transformers import SentenceTransformer

from argus_ir.encoder.models import resolve_model
from langchain_argus import ArgusDocumentTransformer, ArgusRetriever

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


class MiniLM(Embeddings):
    """all-MiniLM-L6-v2 from its offline package (HuggingFaceEmbeddings does the same online)."""

    def __init__(self) -> None:
        self.model = SentenceTransformer(str(resolve_model("minilm")), device="cpu")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def main() -> None:
    embeddings = MiniLM()
    docs = [Document(page_content=text, id=doc_id) for doc_id, text in DOCS]

    plain = InMemoryVectorStore(embedding=embeddings)
    plain.add_documents(docs)
    print("without argus:", [d.id for d in plain.similarity_search(QUERY, k=1)])

    argus = ArgusDocumentTransformer(retriever="minilm", remedy="expansion", k_aug=2)
    augmented = argus.transform_documents(docs)  # originals first, each followed by its views
    print(
        "argus:",
        argus.last_stats["views"],
        "views for",
        argus.last_stats["flagged_entities"],
        "flagged entities",
    )
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents(list(augmented))
    found = ArgusRetriever(vectorstore=store, k=1).invoke(QUERY)
    print("with argus:   ", [d.id for d in found])


if __name__ == "__main__":
    main()
