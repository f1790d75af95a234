"""Reading BEIR-format datasets for :func:`argus_ir.eval.evaluate`: corpus, judged queries, qrels.

:func:`load_beir` reads one split or several (``"dev,test"``) into a :class:`BeirData`, counting
everything it leaves out; :func:`subsample` cuts a dataset down for slow conditions.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from argus_ir.audit.loaders import Document
from argus_ir.errors import ArgusInputError
from argus_ir.io import iter_jsonl

__all__ = ["BeirData", "load_beir", "subsample"]


@dataclass
class BeirData:
    """A BEIR dataset: corpus, the queries that have judgements in ``split``, and the qrels.

    Attributes:
        notes: What loading left out or found odd, as ``reason -> count`` (queries without
            judgements, judgements of documents not in the corpus, empty documents, ...); nothing
            is dropped without a count here.
        subset: Whether :func:`subsample` cut queries or documents.
    """

    name: str
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"
    notes: dict[str, int] = field(default_factory=dict)
    subset: bool = False
    query_split: dict[str, str] = field(default_factory=dict)


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """Read ``corpus.jsonl``, ``queries_<split>.jsonl`` or ``queries.jsonl`` and ``qrels/<split>.tsv``.

    ``split`` may name several splits, comma-separated (``"dev,test"``): their queries are indexed
    together, and :attr:`BeirData.query_split` says which split each query came from, so one
    indexing serves them all (:meth:`EvalResult.split_by`). A query id judged in two splits is an
    error.

    Only queries with at least one relevant judgement in the split are kept; judged documents
    missing from the corpus are dropped from the qrels (BEIR subsets such as msmarco5k have them).
    Each such drop is counted in :attr:`BeirData.notes`. Integer ids are read as strings.

    Raises:
        ArgusInputError: A missing file or split (naming the splits there are), a malformed line,
            a query without id or text (file and line).
    """
    from argus_ir.documents import read_documents
    from argus_ir.tables import as_id

    splits = [part.strip() for part in split.split(",") if part.strip()]
    if len(splits) > 1:
        parts = [load_beir(folder, one) for one in splits]
        merged = parts[0]
        query_split = {q: splits[0] for q in merged.queries}
        for one, part in zip(splits[1:], parts[1:]):
            clash = sorted(set(part.queries) & set(query_split))
            if clash:
                raise ArgusInputError(
                    f"{folder}: query {clash[0]!r} is judged in split {query_split[clash[0]]!r} "
                    f"and in {one!r} ({len(clash)} such queries)"
                )
            merged.queries.update(part.queries)
            merged.qrels.update(part.qrels)
            query_split.update(dict.fromkeys(part.queries, one))
            for reason, n in part.notes.items():
                if not reason.startswith("documents with"):  # the corpus is the same
                    merged.notes[reason] = merged.notes.get(reason, 0) + n
        merged.split = ",".join(splits)
        merged.query_split = query_split
        return merged
    root = Path(folder)
    corpus_file = root / "corpus.jsonl"
    qrels_file = root / "qrels" / f"{split}.tsv"
    if not corpus_file.is_file():
        raise ArgusInputError(f"{root} is not a BEIR dataset: corpus.jsonl not found")
    if not qrels_file.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise ArgusInputError(
            f"{root}: no qrels for split {split!r} ({qrels_file} not found); "
            + (f"splits there: {', '.join(splits)}" if splits else "no qrels/*.tsv at all")
        )
    corpus = read_documents(corpus_file)
    known = {d.id for d in corpus}
    notes: dict[str, int] = {}

    def note(reason: str, n: int = 1) -> None:
        if n:
            notes[reason] = notes.get(reason, 0) + n

    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_file, encoding="utf-8", newline="") as fh:
        for line_no, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (line_no == 1 and row[0] == "query-id"):
                continue
            if len(row) != 3:
                raise ArgusInputError(
                    f"{qrels_file}:{line_no}: expected query-id, corpus-id, score"
                )
            qid, did, rel = (cell.strip() for cell in row)
            try:
                grade = int(rel)
            except ValueError:
                raise ArgusInputError(
                    f"{qrels_file}:{line_no}: score {rel!r} is not an integer"
                ) from None
            if did in known:
                qrels.setdefault(qid, {})[did] = grade
            else:
                note("judgements of documents not in the corpus")
    queries_file = next(
        (p for p in (root / f"queries_{split}.jsonl", root / "queries.jsonl") if p.is_file()), None
    )
    if queries_file is None:
        raise ArgusInputError(f"{root}: no queries_{split}.jsonl or queries.jsonl")
    queries: dict[str, str] = {}
    for line_no, rec in iter_jsonl(queries_file):
        where = f"{queries_file}:{line_no}"
        key = next((k for k in ("_id", "id") if rec.get(k) not in (None, "")), None)
        if key is None:
            raise ArgusInputError(f"{where}: query has no id (looked for '_id', 'id')")
        qid = as_id(rec[key], "query id", where)
        if qid not in qrels:
            note(f"queries without judgements in {split}")
            continue
        text = rec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ArgusInputError(f"{where}: query {qid!r} has no text")
        queries[qid] = text
    note("judged queries missing from the queries file", len(set(qrels) - set(queries)))
    unjudged = [q for q in queries if not any(v > 0 for v in qrels[q].values())]
    note("queries with no relevant document", len(unjudged))
    qrels = {q: qrels[q] for q in queries if q not in unjudged}
    queries = {q: t for q, t in queries.items() if q in qrels}
    note(
        "documents with neither title nor text (indexed, nothing to diagnose)",
        sum(not d.index_text.strip() for d in corpus),
    )
    note(
        "documents with a title but no text (title indexed; not diagnosed, no views)",
        sum(bool(d.title.strip()) and not d.text.strip() for d in corpus),
    )
    return BeirData(
        root.name, corpus, queries, qrels, split, notes, False, dict.fromkeys(queries, split)
    )


def subsample(
    data: BeirData, *, max_queries: int = 0, max_docs: int = 0, seed: int = 0
) -> BeirData:
    """A smaller copy of ``data`` for slow conditions (LLM synthesis on a CPU).

    Keeps the first ``max_queries`` queries by id (0: all) and, with ``max_docs``, a corpus of
    every document relevant to those queries plus a seeded uniform sample of the others (judged
    non-relevant ones included) up to ``max_docs`` in all (more when the relevant documents alone
    exceed it). Scores on a subset are
    comparable only with other conditions on the same subset.
    """
    queries = dict(data.queries)
    if max_queries:
        keep = sorted(queries)[:max_queries]
        queries = {q: queries[q] for q in keep}
    qrels = {q: data.qrels[q] for q in queries}
    corpus = data.corpus
    name = data.name
    if max_docs and max_docs < len(corpus):
        judged = {d for r in qrels.values() for d, grade in r.items() if grade > 0}
        others = [i for i, d in enumerate(corpus) if d.id not in judged]
        room = max(max_docs - (len(corpus) - len(others)), 0)
        picked = set(np.random.default_rng(seed).choice(len(others), room, replace=False).tolist())
        chosen = {others[i] for i in picked}
        corpus = [d for i, d in enumerate(corpus) if d.id in judged or i in chosen]
        name = f"{data.name}-sub{len(corpus)}"
    notes = dict(data.notes)
    if len(queries) < len(data.queries):
        notes["queries left out by max_queries"] = len(data.queries) - len(queries)
    cut = len(queries) < len(data.queries) or len(corpus) < len(data.corpus)
    query_split = {q: data.query_split.get(q, data.split) for q in queries}
    return BeirData(
        name, corpus, queries, qrels, data.split, notes, data.subset or cut, query_split
    )
