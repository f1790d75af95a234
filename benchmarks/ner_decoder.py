"""spaCy's NER decoded in NumPy against spaCy's own loop: the same entities, and what it saves.

For each corpus, every document's text (whole, not only the retriever's window, so that long texts
are checked too) goes through the shipped NER twice in this process, both under the ops argus
sets (NumPy's matmul on one BLAS thread): once by ``nlp.pipe`` (spaCy's transition loop), once by
:class:`argus_ir.text.spacy_greedy.GreedyNer` (what ``SpacyMentions`` runs), both through
``spacy_greedy.entity_spans``, the function ``SpacyMentions`` reads them with. Reported: documents,
entities, documents whose entities differ in any span or label, and the CPU seconds of each
(``time.process_time``, after a warm-up on the first 50 texts).

``python benchmarks/ner_decoder.py --corpus <corpus.jsonl> [--corpus ...] [--limit N]``
(``nox -s bench -- ner-decoder ...``); rows appended to ``benchmarks/results/ner-decoder.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def compare(texts: list[str], batch_size: int = 64) -> dict:
    from argus_ir.text.mentions import SpacyMentions
    from argus_ir.text.spacy_greedy import GreedyNer, entity_spans
    from argus_ir.text.spacy_ops import one_blas_thread

    ner = SpacyMentions(batch_size=batch_size)
    nlp = ner.nlp
    greedy = GreedyNer.of(nlp)
    if greedy is None:
        raise SystemExit(f"the NumPy decoder does not know this pipeline: {nlp.pipe_names}")

    def spacy_loop(texts: list[str]) -> list[list[tuple[int, int, str]]]:
        return list(entity_spans(nlp, None, texts, batch_size))

    def numpy_loop(texts: list[str]) -> list[list[tuple[int, int, str]]]:
        return list(entity_spans(nlp, greedy, texts, batch_size))

    row = {"documents": len(texts)}
    found = {}
    with nlp.memory_zone(), one_blas_thread():
        for name, run in (("spacy", spacy_loop), ("numpy", numpy_loop)):
            run(texts[:50])
            clock = time.process_time()
            found[name] = run(texts)
            row[f"{name}_cpu_s"] = round(time.process_time() - clock, 2)
    row["entities"] = sum(map(len, found["spacy"]))
    row["documents_differ"] = sum(a != b for a, b in zip(found["spacy"], found["numpy"]))
    row["speedup"] = round(row["spacy_cpu_s"] / max(row["numpy_cpu_s"], 1e-9), 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "ner-decoder.jsonl")
    args = parser.parse_args()

    from argus_ir.audit.loaders import read_documents

    for corpus in args.corpus:
        docs = read_documents(corpus)[: args.limit]
        row = {"corpus": str(corpus), **compare([d.index_text for d in docs])}
        print(json.dumps(row), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
