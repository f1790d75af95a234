"""Audit wall time against encoding the same paragraphs once, measured in one run.

Baseline (a): ``SentenceTransformer.encode`` of every distinct paragraph the audit encodes.
Measured (b): ``run_audit`` end to end (encode + pool mentions + rank + sampled and expected RPS for
every k + reliability + curves), without a warm cache.

The ratio b / a is what the audit costs over the floor of any audit: one forward pass per
paragraph. Run with ``nox -s bench`` (or ``python benchmarks/audit_bench.py --shared-data PATH``).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, help="shared data folder (else the sample)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=0, help="audit only the first N entities")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    import torch

    from argus_ir.audit import AuditSettings, run_audit
    from argus_ir.encoder import SentenceTransformerEncoder

    if args.shared_data and (args.shared_data / "kb").exists():
        from argus_ir.audit.shared_data import load_shared

        data = load_shared(args.shared_data)
    else:
        from argus_ir.audit.sample import load_sample

        data = load_sample()
    if args.limit:
        from argus_ir.audit.entities import AuditData, EntityGraph

        keep = args.limit
        pairs = [(int(a), int(b)) for a, b in data.graph.edge_pairs() if a < keep and b < keep]
        data = AuditData(
            list(data.entities)[:keep], EntityGraph.from_edges(keep, pairs), data.report, data.name
        )
    encoder = SentenceTransformerEncoder(args.model, device="cpu", batch_size=args.batch_size)
    texts = list(dict.fromkeys(e.text for e in data.entities))
    st_model = encoder.sentence_transformer
    st_model.encode(texts[:64], batch_size=args.batch_size)  # warm-up, both paths share it

    t0 = time.perf_counter()
    st_model.encode(texts, batch_size=args.batch_size, show_progress_bar=False)
    baseline = time.perf_counter() - t0

    settings = AuditSettings(n_neutrals=min(800, data.graph.n // 2))
    t0 = time.perf_counter()
    result = run_audit(data, encoder, settings, show_progress=False)
    audit = time.perf_counter() - t0

    row = {
        "data": data.name,
        "model": encoder.info.retriever_id,
        "paragraphs": len(texts),
        "targets": len(result.ids),
        "pairs": int(np.sum(result.n_related)),
        "N": settings.n_neutrals,
        "ks": list(settings.ks),
        "encode_once_s": round(baseline, 2),
        "audit_s": round(audit, 2),
        "ratio": round(audit / baseline, 3),
        "torch_threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"audit-{data.name}-{encoder.info.retriever_id.split('/')[-1]}"
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", stem) + ".json"
    (args.out / name).write_text(json.dumps(row, indent=2))
    print(json.dumps(row, indent=2))
    print(
        f"| {row['data']} | {row['model']} | {row['paragraphs']} | {row['pairs']} | "
        f"{row['encode_once_s']} | {row['audit_s']} | {row['ratio']} |"
    )


if __name__ == "__main__":
    main()
