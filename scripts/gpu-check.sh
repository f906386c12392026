#!/usr/bin/env bash
# The whole check of the CUDA paths, in one run on a machine with an NVIDIA GPU (under 8 minutes):
#   1. the machine: nvidia-smi, torch and its CUDA, CTranslate2's view of the GPU;
#   2. the GPU-marked tests (pytest -m gpu: tests/gpu/);
#   3. the service on the shipped models on CUDA (float16): translate and embed through HTTP;
#   4. benchmarks/bench_gpu.py: ours against CTranslate2 on the same GPU, float16 both, BLEU beside.
# Everything it prints and measures goes under $OUT (default: ./gpu-check-out).
#
#   scripts/gpu-check.sh             # on the GPU machine, in the repository root
#   scripts/gpu-check.sh --dry-run   # anywhere: checks that every step's files, modules and options exist
#
# Nothing heavy is built: the torch back end runs on CUDA (no native kernels), and the repository is
# used in place (scripts/gpu-env.sh: PYTHONPATH, and the wheels carried in ./.whl).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
PY="${PYTHON:-python3}"
PORT="${RENDITION_PORT:-8790}"
N="${GPU_CHECK_SENTENCES:-1000}"
MODELS="${RENDITION_MODELS:-translator,encoder}"  # the service's models in step 3 (and the tests' unless -k says)
PYTEST_K="${GPU_CHECK_PYTEST_K:-}"                # a pytest -k filter for step 2 ("not encoder" without the encoder)
BENCH="${GPU_CHECK_BENCH:-1}"                     # 0: no step 4 (it needs ctranslate2 with CUDA)
mkdir -p "$OUT"
source scripts/gpu-env.sh  # rendition.model / rendition.service in place, the carried wheels

step() { echo "== $* ($(date -u +%T))" | tee -a "$OUT/steps.txt"; }

if (( DRY )); then
    step "dry run: every step's pieces"
    bash -n "$0"
    "$PY" -m pytest --collect-only -q -m gpu tests/gpu | tail -1
    "$PY" -c "import rendition.service.main, rendition.model.export.ct2, rendition.model.embedding.encoder; from pathlib import Path; print('rendition.model from', Path(rendition.model.__file__).resolve().parent)"
    "$PY" benchmarks/bench_gpu.py --dry-run --n "$N"
    step "dry run passed"
    exit 0
fi

step "1. the machine"
{ nvidia-smi; "$PY" -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"; "$PY" -c "import ctranslate2; print('ctranslate2', ctranslate2.__version__, 'cuda devices', ctranslate2.get_cuda_device_count())" || echo "ctranslate2: not importable"; } 2>&1 | tee "$OUT/machine.txt"

step "2. GPU tests"
status=0
timeout 180 "$PY" -m pytest -q -m gpu tests/gpu ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$OUT/pytest-gpu.txt" || status=1

step "3. the service on CUDA"
RENDITION_MODELS="$MODELS" RENDITION_DEVICE=cuda RENDITION_DTYPE=float16 "$PY" -m rendition.service.main --port "$PORT" >"$OUT/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 90); do
    curl -sf "localhost:$PORT/health/ready" >/dev/null 2>&1 && break
    sleep 1
done
{
    curl -sS "localhost:$PORT/v1/translate" -H 'content-type: application/json' \
        -d '{"text": ["The dog is sleeping under the bed.", "Open the file."], "source": "en", "target": "fr"}'
    echo
    [[ "$MODELS" != *encoder* ]] || curl -sS "localhost:$PORT/v1/embeddings" -H 'content-type: application/json' -d '{"input": ["hello world", "bonjour le monde"]}' \
        | "$PY" -c "import json, sys; d = json.load(sys.stdin)['data']; print('embeddings', len(d), 'x', len(d[0]['embedding']))"
    curl -sS "localhost:$PORT/v1/models"
    echo
} 2>&1 | tee "$OUT/http.txt" || status=1
grep -q '"text"' "$OUT/http.txt" || status=1
kill $server 2>/dev/null || true

if [[ "$BENCH" == 0 ]]; then
    step "4. not run (GPU_CHECK_BENCH=0)"
    step "done (status $status)"
    exit $status
fi
step "4. ours against CTranslate2 on the GPU (float16 both)"
timeout 300 "$PY" benchmarks/bench_gpu.py --n "$N" --rounds 2 --output "$OUT/bench-gpu.json" 2>&1 | tee "$OUT/bench-gpu.txt" || status=1

step "done (status $status)"
exit $status
