"""argus with LangChain's ParentDocumentRetriever: one vector store holds the parents, their
child chunks and argus's views; hits on a view's chunks come back as the view's original.

Run: python examples/langchain_parent_documents.py   (offline: MiniLM, spaCy and the KB ship as packages)
"""

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_huggingface import HuggingFaceEmbeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter

from argus_ir.encoder.models import resolve_model
from langchain_argus import ArgusDocstore, ArgusDocumentTransformer, ArgusParentDocumentRetriever

PARENTS = {
    "film-1": "Humphrey Bogart once filmed a scene in Lucknow, and the crew still talks about "
    "the heat.",
    "film-3": "Casablanca's old medina is crowded with tourists every summer.",
    "film-4": "The Moroccan port of Casablanca handles most of the country's trade.",
    "geo-2": "Kathmandu sits in a valley ringed by hills, and its air stays cool in spring.",
    "music-2": "Johann Sebastian Bach wrote the cantata for a Sunday service in Leipzig.",
}
QUESTION = "the actor who starred in Casablanca and The Maltese Falcon"


def parent_retriever(embeddings: HuggingFaceEmbeddings, docs: list[Document]):
    """A ParentDocumentRetriever whose docstore is the vector store it searches (argus's: each
    hit must carry its parent's metadata)."""
    store = InMemoryVectorStore(embedding=embeddings)
    retriever = ArgusParentDocumentRetriever(
        vectorstore=store,
        docstore=ArgusDocstore(store),  # parents are read back from `store` by id
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=0),
        search_kwargs={"k": 6},  # hits (children and parents), not documents
    )
    # each parent keeps its own id: argus's views name their original by it
    retriever.add_documents(docs, ids=[d.id for d in docs])
    return retriever


def main() -> None:
    # all-MiniLM-L6-v2 from its offline package (online: model_name="sentence-transformers/all-MiniLM-L6-v2")
    embeddings = HuggingFaceEmbeddings(model_name=str(resolve_model("minilm")))
    docs = [Document(page_content=text, id=doc_id) for doc_id, text in PARENTS.items()]

    plain = parent_retriever(embeddings, docs).invoke(QUESTION)
    print("without argus:", " ".join(d.id for d in plain))

    # argus first: its originals and views become the parents that the retriever splits
    argus = ArgusDocumentTransformer(
        retriever="minilm",
    )
    augmented = list(argus.transform_documents(docs))
    print("argus views:", argus.last_stats["views"])
    found = parent_retriever(embeddings, augmented).invoke(QUESTION)
    print("with argus:", " ".join(d.id for d in found))
    print("contexts are originals:", all(d.page_content in PARENTS.values() for d in found))


if __name__ == "__main__":
    main()
