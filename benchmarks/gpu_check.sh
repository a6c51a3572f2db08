#!/usr/bin/env bash
# GPU check of issue 12, for one GPU (sized for an H200: under 8 minutes in all).
#
# Every DocRE family at BERT-base size (random weights, MiniLM's vocabulary; nothing is downloaded) in
# bf16 autocast: training step time, inference documents/s and peak memory, new path vs the path it
# replaces (bench_models.py), and the EVRT / vanilla step ratio in time and peak memory (bench_evrt.py,
# ATLOP, fp32: that script has no bf16 switch). Everything is merged into benchmarks/results/gpu.json
# with the commands that produced it. Target: ATLOP inference >= 1,000 Re-DocRED documents/s.
#
#   benchmarks/gpu_check.sh            # on the GPU machine -> benchmarks/results/gpu.json
#   benchmarks/gpu_check.sh --smoke    # tiny random encoder on CPU, ATLOP only, a few documents
#                                      # -> benchmarks/results/gpu_smoke.json (checks that the script runs)
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false

if [[ "${1:-}" == "--smoke" ]]; then
  DEVICE=cpu ENCODER=tiny DOCS=4 BATCH=2 EPOCHS=1 INFER_DOCS=8 INFER_BATCH=4 THREADS=0 FAMILIES=(--families atlop)
  EVRT_DOCS=2 EVRT_BATCH=1 EVRT_STEPS=1 EVRT_POOL=20 LIMIT_MODELS=900 LIMIT_EVRT=600
  OUT=benchmarks/results/gpu_smoke.json
else
  DEVICE=cuda ENCODER=bert-base DOCS=32 BATCH=4 EPOCHS=2 INFER_DOCS=500 INFER_BATCH=64 THREADS=0 FAMILIES=()
  EVRT_DOCS=8 EVRT_BATCH=4 EVRT_STEPS=5 EVRT_POOL=200 LIMIT_MODELS=300 LIMIT_EVRT=150
  OUT=benchmarks/results/gpu.json
  python - <<'EOF'
import torch
assert torch.cuda.is_available(), "gpu_check.sh needs a CUDA GPU (use --smoke on CPU)"
print("GPU:", torch.cuda.get_device_name(0))
EOF
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
start=$(date +%s)

MODELS_CMD=(python benchmarks/bench_models.py --encoder "$ENCODER" --device "$DEVICE" --dtype bf16 --paths replaced new
  --docs "$DOCS" --batch-size "$BATCH" --epochs "$EPOCHS" --infer-docs "$INFER_DOCS" --infer-batch-size "$INFER_BATCH"
  --threads "$THREADS" --json-out "$TMP/models.json" "${FAMILIES[@]}")
echo "== ${MODELS_CMD[*]}"
timeout "$LIMIT_MODELS" "${MODELS_CMD[@]}" || echo "bench_models.py stopped (status $?)"

python -c "import sys; sys.path.insert(0, 'benchmarks'); from _bench_common import save_random_encoder; save_random_encoder('$ENCODER', '$TMP/encoder')"
EVRT_CMD=(python benchmarks/bench_evrt.py --encoder "$TMP/encoder" --device "$DEVICE" --docs "$EVRT_DOCS"
  --batch-size "$EVRT_BATCH" --steps "$EVRT_STEPS" --pool "$EVRT_POOL" --json "$TMP/evrt.json")
echo "== ${EVRT_CMD[*]}"
timeout "$LIMIT_EVRT" "${EVRT_CMD[@]}" || echo "bench_evrt.py stopped (status $?)"

python - "$TMP" "$OUT" "$(( $(date +%s) - start ))" "${MODELS_CMD[*]}" "${EVRT_CMD[*]}" <<'EOF'
import json, sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
from _bench_common import machine, write_json

tmp, out, seconds, models_cmd, evrt_cmd = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
result = {"script": "benchmarks/gpu_check.sh", "seconds": seconds, "machine": machine()}
for name, cmd in (("models", models_cmd), ("evrt", evrt_cmd)):
    path = tmp / f"{name}.json"
    result[name] = json.loads(path.read_text()) if path.exists() else {"error": "did not finish in its time limit"}
    result[name]["command"] = cmd.replace(str(tmp), "$TMP")
atlop = [r for r in result["models"].get("runs", []) if r["family"] == "atlop" and r["path"] == "new"]
if atlop:
    result["atlop_inference_docs_per_s"] = atlop[0]["inference_docs_per_s"]
    result["atlop_inference_target_met"] = atlop[0]["inference_docs_per_s"] >= 1000
write_json(out, result)
print(f"wrote {out} after {seconds} s")
EOF
