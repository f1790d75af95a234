"""Ingest cost of ARGUS against plain embedding, measured in one run on a BEIR corpus (SciFact).

(a) baseline: ``SentenceTransformer.encode`` of every document (title + text), what any dense
    ingest pays;
(b) ARGUS diagnosis: NER, one retriever pass per document (mention span vectors *and* the document
    vector the index needs) and the probe;
(c) full expansion ingest: (b) + KB lookups + expansion views + embedding the views. The originals'
    vectors come from (b), so (c) embeds only what is new;
(b16) (b) with the diagnosis pass under bfloat16 autocast (``precision="bf16"``), and how far its
    predictions move from (b): flag agreement, RPS correlation, document-vector cosine.

Reported: docs/s, b/a, c/a, the NER share of (b), flagged entities and views per document. Run with
``nox -s bench -- ingest`` or ``python benchmarks/ingest_bench.py --shared-data ../shared/data``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path


class Timer:
    """Accumulates wall time spent inside a wrapped callable."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            out = self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0
        return self._timed(out) if hasattr(out, "__next__") else out

    def _timed(self, iterator):
        while True:
            t0 = time.perf_counter()
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - t0
            yield item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents")
    parser.add_argument("--batch-size", type=int, default=64, help="documents per batch")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    import numpy as np
    import torch

    from argus_ir import Argus, RemedyStats
    from argus_ir.loaders import read_documents

    docs = read_documents(args.shared_data / "beir" / args.dataset / "corpus.jsonl")
    if args.limit:
        docs = docs[: args.limit]
    texts = [d.index_text for d in docs]

    argus = Argus(retriever=args.model, remedy="expansion", batch_size=args.batch_size)
    diagnoser = argus.diagnoser  # loads retriever, probe, spaCy (not timed)
    kb = argus.reference_kb
    st_model = diagnoser.encoder.sentence_transformer
    st_model.encode(texts[:64], batch_size=64)  # warm-up shared by every path
    list(argus.diagnose(docs[:64]))

    t0 = time.perf_counter()
    st_model.encode(texts, batch_size=64, show_progress_bar=False)
    a = time.perf_counter() - t0

    ner = diagnoser.mentions.extract = Timer(diagnoser.mentions.extract)
    enc = diagnoser.encoder.encode = Timer(diagnoser.encoder.encode)
    t0 = time.perf_counter()
    diagnoses = list(argus.diagnose(docs))
    b = time.perf_counter() - t0
    ner_s, enc_s = ner.seconds, enc.seconds

    stats = RemedyStats()
    t0 = time.perf_counter()
    views = [v for v in argus.augment(docs, stats=stats) if not v.is_original]
    st_model.encode([v.text for v in views], batch_size=64, show_progress_bar=False)
    c = time.perf_counter() - t0

    fast = Argus(
        retriever=args.model, remedy="expansion", batch_size=args.batch_size, precision="bf16"
    )
    list(fast.diagnose(docs[:64]))  # loads its own encoder and warms it
    t0 = time.perf_counter()
    fast_diagnoses = list(fast.diagnose(docs))
    b16 = time.perf_counter() - t0
    same = total = 0
    rps32, rps16, cosines = [], [], []
    for d32, d16 in zip(diagnoses, fast_diagnoses, strict=True):
        for e32, e16 in zip(d32.entities, d16.entities, strict=True):
            total += 1
            same += e32.flagged == e16.flagged
            rps32.append(e32.rps)
            rps16.append(e16.rps)
        v32, v16 = d32.doc_vector, d16.doc_vector
        cosines.append(float(v32 @ v16 / (np.linalg.norm(v32) * np.linalg.norm(v16))))

    n = len(docs)
    row = {
        "dataset": args.dataset,
        "model": diagnoser.encoder.info.retriever_id,
        "documents": n,
        "kb_passages": len(kb),
        "a_embed_s": round(a, 2),
        "b_diagnose_s": round(b, 2),
        "c_expansion_ingest_s": round(c, 2),
        "a_docs_per_s": round(n / a, 1),
        "b_docs_per_s": round(n / b, 1),
        "c_docs_per_s": round(n / c, 1),
        "b_over_a": round(b / a, 3),
        "c_over_a": round(c / a, 3),
        "ner_s": round(ner_s, 2),
        "encoder_s": round(enc_s, 2),
        "ner_share_of_b": round(ner_s / b, 3),
        "b16_diagnose_bf16_s": round(b16, 2),
        "b16_over_a": round(b16 / a, 3),
        "bf16_flag_agreement": round(same / max(total, 1), 4),
        "bf16_rps_pearson": round(float(np.corrcoef(rps32, rps16)[0, 1]), 4),
        "bf16_rps_max_abs_diff": round(float(np.max(np.abs(np.subtract(rps32, rps16)))), 4),
        "bf16_doc_cosine_min": round(min(cosines), 5),
        "flagged_per_doc": round(sum(len(d.flagged) for d in diagnoses) / n, 3),
        "docs_with_flags": sum(bool(d.flagged) for d in diagnoses),
        "views_per_doc": round(stats.views / n, 3),
        "index_growth": round(stats.index_growth, 3),
        "no_kb_hit": stats.no_kb_hit,
        "torch_threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"ingest-{args.dataset}-{row['model'].split('/')[-1]}{f'-{n}' if args.limit else ''}"
    (args.out / f"{name}.json").write_text(json.dumps(row, indent=2) + "\n")
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
