#!/usr/bin/env bash
# A translator training run on a lent GPU machine, in one call, with the CUDA check beside it.
#
# Needs, carried into the repository (both ignored by git):
#   .gpu/init.i8.safetensors   the starting weights (scripts/gpu_bundle.py pack MODEL_DIR ...)
#   .gpu/corpus.tsv.xz         the training corpus (xz of data/build/corpus/train.en-fr.tsv or a variant)
#   .whl/*.whl                 the Python packages the machine lacks (fastapi, uvicorn, pydantic, ...)
# The machine's transfers are capped at 64 MiB each way, so the shipped weights do not travel: the
# starting weights stand in for the translator, and the encoder is left out of the check.
#
# Brings back under $OUT: the exported average (float16) in parts of at most 15 MiB
# (`cat model.safetensors.part-* > model.safetensors`) and run.tgz (training log, configs, curves, the
# check's output).
#
#   TRAIN_ARGS="--lr 3e-4 --warmup 200 ..." scripts/gpu-train.sh             # on the GPU machine
#   TRAIN_DEVICE=cpu TRAIN_MINUTES=0.3 scripts/gpu-train.sh --dry-run       # here: every step, briefly
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
OUT="${OUT:-$PWD/gpu-train-out}"
DEVICE="${TRAIN_DEVICE:-cuda}"
MINUTES="${TRAIN_MINUTES:-7}"
DEADLINE="${TRAIN_DEADLINE_S:-540}" # seconds after the start: the training is stopped then, whatever it is doing
CORPUS_XZ="${TRAIN_CORPUS_XZ:-.gpu/corpus.tsv.xz}"
INIT="${TRAIN_INIT:-.gpu/init.i8.safetensors}"
read -r -a EXTRA <<<"${TRAIN_ARGS:-}"
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
RUN="$WORK/run"
mkdir -p "$OUT" "$RUN" "$WORK/init"

say() { echo "== $* (+$((SECONDS - START)) s)" | tee -a "$WORK/steps.txt"; }

source scripts/gpu-env.sh  # rendition.model / rendition.service in place, the carried wheels

say "unpacking the starting weights and the corpus"
"$PY" scripts/gpu_bundle.py unpack "$INIT" "$WORK/init" || exit 1
cp model/pretrained/translator/config.json model/pretrained/translator/sentencepiece.model "$WORK/init/"
cp model/pretrained/translator/sentencepiece.model "$RUN/"
xz -dc "$CORPUS_XZ" >"$WORK/corpus.tsv" || exit 1
if (( ! DRY )) && [[ ! -f model/pretrained/translator/model.safetensors ]]; then
    cp "$WORK/init/model.safetensors" model/pretrained/translator/
fi

say "training on $DEVICE for $MINUTES minutes: ${EXTRA[*]}"
"$PY" -m rendition.model.training.train --run-dir "$RUN" --corpus "$WORK/corpus.tsv" --pairs en-fr \
    --init-from "$WORK/init" --device "$DEVICE" --max-minutes "$MINUTES" "${EXTRA[@]}" >"$WORK/train.log" 2>&1 &
train=$!

if (( DRY )); then
    say "the check, dry"
    OUT="$WORK/check" scripts/gpu-check.sh --dry-run >"$WORK/check.log" 2>&1
elif [[ "${GPU_CHECK_SKIP:-0}" == 1 ]]; then
    say "the check skipped (GPU_CHECK_SKIP=1: a second call on a machine already checked)"
else
    say "the check, on the translator alone"
    OUT="$WORK/check" RENDITION_MODELS=translator GPU_CHECK_PYTEST_K="not encoder" GPU_CHECK_BENCH=0 \
        scripts/gpu-check.sh >"$WORK/check.log" 2>&1
fi
say "the check ended with status $?"

while kill -0 "$train" 2>/dev/null; do
    if (( SECONDS - START > DEADLINE )); then
        say "deadline: stopping the training"
        kill "$train"
        sleep 5
        break
    fi
    sleep 2
done
wait "$train"
say "training ended with status $?"
tail -c 2000 "$WORK/train.log" | tr '\r' '\n' | tail -5

"$PY" scripts/gpu_bundle.py average "$RUN" "$WORK/export" --last "${TRAIN_AVERAGE:-6}" && \
    split -b 15M "$WORK/export/model.safetensors" "$OUT/model.safetensors.part-"
say "exported"
cp "$WORK/steps.txt" "$WORK/steps-copy.txt"
tar czf "$OUT/run.tgz" -C "$WORK" --ignore-failed-read steps-copy.txt train.log check.log check \
    run/log.jsonl run/config.json run/train_config.json run/curves.png export/averaged.json export/config.json 2>/dev/null
ls -la "$OUT"
rm -rf "$WORK"
