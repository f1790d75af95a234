"""Ingest cost of ARGUS against plain embedding, measured in one run on a BEIR corpus (SciFact).

(a) baseline: ``SentenceTransformer.encode`` of every document (title + text), what any dense
    ingest pays (fp32, sentence-transformers' default);
(a16) the same under bfloat16 autocast: the like-for-like baseline for a bf16 diagnosis pass;
(b) ARGUS diagnosis at its default precision (``"auto"``: bf16 where the CPU or GPU has it
    natively, else fp32): NER, one windowed retriever pass per document (mention span vectors *and*
    the document vector) and the probe;
(b32) (b) forced to fp32, and how far (b)'s predictions sit from it: flag agreement, RPS
    correlation, document-vector cosine;
(c) full expansion ingest at the default: (b) + KB lookups + expansion views + embedding the views
    with sentence-transformers.

Reported: docs/s, b/a (the goal), b/a16, b32/a, c/a, the NER share of (b) (NER timed alone: inside
(b) it runs in a thread beside the encoder, so the shares overlap), flagged entities and views per
document. Run with ``nox -s bench -- ingest`` or
``python benchmarks/ingest_bench.py --shared-data ../shared/data``.
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
    from argus_ir.audit.loaders import read_documents

    docs = read_documents(args.shared_data / "beir" / args.dataset / "corpus.jsonl")
    if args.limit:
        docs = docs[: args.limit]
    texts = [d.index_text for d in docs]

    argus = Argus(retriever=args.model, remedy="expansion", batch_size=args.batch_size)
    diagnoser = argus.diagnoser  # loads retriever, probe, spaCy (not timed)
    kb = argus.reference_kb
    st_model = diagnoser.encoder.sentence_transformer
    autocast = torch.autocast(st_model.device.type, dtype=torch.bfloat16)
    st_model.encode(texts[:64], batch_size=64)  # warm-up shared by every path
    with autocast:
        st_model.encode(texts[:64], batch_size=64)
    list(argus.diagnose(docs[:64]))

    t0 = time.perf_counter()
    st_model.encode(texts, batch_size=64, show_progress_bar=False)
    a = time.perf_counter() - t0
    t0 = time.perf_counter()
    with autocast:
        st_model.encode(texts, batch_size=64, show_progress_bar=False)
    a16 = time.perf_counter() - t0

    t0 = time.perf_counter()
    diagnoser.mentions.extract(texts)  # NER alone: inside (b) it runs beside the encoder
    ner_s = time.perf_counter() - t0

    enc = diagnoser.encoder.encode = Timer(diagnoser.encoder.encode)
    t0 = time.perf_counter()
    diagnoses = list(argus.diagnose(docs))
    b = time.perf_counter() - t0
    enc_s = enc.seconds
    del diagnoser.encoder.encode  # back to the class's method

    exact = Argus(
        retriever=args.model, remedy="expansion", batch_size=args.batch_size, precision="fp32"
    )
    list(exact.diagnose(docs[:64]))  # loads its own encoder and warms it
    t0 = time.perf_counter()
    exact_diagnoses = list(exact.diagnose(docs))
    b32 = time.perf_counter() - t0

    stats = RemedyStats()
    t0 = time.perf_counter()
    views = [v for v in argus.augment(docs, stats=stats) if not v.is_original]
    st_model.encode([v.text for v in views], batch_size=64, show_progress_bar=False)
    c = time.perf_counter() - t0

    same = total = 0
    rps_default, rps32, cosines = [], [], []
    for d, d32 in zip(diagnoses, exact_diagnoses, strict=True):
        for e, e32 in zip(d.entities, d32.entities, strict=True):
            total += 1
            same += e.flagged == e32.flagged
            rps_default.append(e.rps)
            rps32.append(e32.rps)
        v, v32 = d.doc_vector, d32.doc_vector
        cosines.append(float(v @ v32 / (np.linalg.norm(v) * np.linalg.norm(v32))))

    n = len(docs)
    row = {
        "dataset": args.dataset,
        "model": diagnoser.encoder.info.retriever_id,
        "documents": n,
        "kb_passages": len(kb),
        "precision": diagnoser.encoder.precision,
        "a_embed_s": round(a, 2),
        "a16_embed_bf16_s": round(a16, 2),
        "b_diagnose_s": round(b, 2),
        "b32_diagnose_fp32_s": round(b32, 2),
        "c_expansion_ingest_s": round(c, 2),
        "a_docs_per_s": round(n / a, 1),
        "b_docs_per_s": round(n / b, 1),
        "c_docs_per_s": round(n / c, 1),
        "b_over_a": round(b / a, 3),
        "b_over_a16": round(b / a16, 3),
        "b32_over_a": round(b32 / a, 3),
        "c_over_a": round(c / a, 3),
        "ner_alone_s": round(ner_s, 2),
        "encoder_s_in_b": round(enc_s, 2),
        "ner_share_of_b": round(ner_s / b, 3),
        "flag_agreement_with_fp32": round(same / max(total, 1), 4),
        "rps_pearson_with_fp32": round(float(np.corrcoef(rps_default, rps32)[0, 1]), 4),
        "rps_max_abs_diff_from_fp32": round(
            float(np.max(np.abs(np.subtract(rps_default, rps32)))), 4
        ),
        "doc_cosine_min_with_fp32": round(min(cosines), 5),
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
