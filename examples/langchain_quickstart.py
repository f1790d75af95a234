"""argus in LangChain: a query that misses its document without argus, and finds it with argus.

Run: python examples/langchain_quickstart.py   (offline: MiniLM, spaCy and the KB ship as packages)
"""

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_huggingface import HuggingFaceEmbeddings

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


def main() -> None:
    # all-MiniLM-L6-v2 from its offline package (online: model_name="sentence-transformers/all-MiniLM-L6-v2")
    embeddings = HuggingFaceEmbeddings(model_name=str(resolve_model("minilm")))
    docs = [Document(page_content=text, id=doc_id) for doc_id, text in DOCS]

    plain = InMemoryVectorStore(embedding=embeddings)
    plain.add_documents(docs)
    print("without argus:", [d.id for d in plain.similarity_search(QUERY, k=1)])

    # embed=True: argus computes every vector it returns (the originals' come from its diagnosis
    # pass), and the store built with argus.embeddings(...) takes them instead of embedding again
    argus = ArgusDocumentTransformer(retriever="minilm", embed=True)
    augmented = argus.transform_documents(docs)  # originals first, each followed by its views
    print(
        "argus:",
        argus.last_stats["views"],
        "views for",
        argus.last_stats["flagged_entities"],
        "flagged entities",
    )
    store = InMemoryVectorStore(embedding=argus.embeddings(embeddings))
    store.add_documents(list(augmented))
    found = ArgusRetriever(vectorstore=store, k=1).invoke(QUERY)
    print("with argus:   ", [d.id for d in found])


if __name__ == "__main__":
    main()
