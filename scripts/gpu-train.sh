#!/usr/bin/env bash
# A translator training run on a lent GPU machine, in one call.
#
# TRAIN_PAIR=en-fr (the default): a stage continuing the shipped translator, with the CUDA check
# beside it.  Needs, carried into the repository (both ignored by git):
#   .gpu/init.i8.safetensors   the starting weights (scripts/gpu_bundle.py pack MODEL_DIR ...)
#   .gpu/corpus.tsv.xz         the training corpus (xz of data/build/corpus/train.en-fr.tsv or a variant)
#   .whl/*.whl                 the Python packages the machine lacks (fastapi, uvicorn, pydantic, ...)
# The machine's transfers are capped at 64 MiB each way, so the shipped weights do not travel: the
# starting weights stand in for the translator, and the encoder is left out of the check.
#
# TRAIN_PAIR=en-de: a translator from scratch (or from the en-fr body: gpu_bundle.py transplant),
# then sacreBLEU on data/splits/test.en-de.tsv both ways.  Needs .gpu/en-de/ (scripts/gpu_bundle.py
# bundle en-de ...: corpus.tsv.xz, sentencepiece.model, config.json; init.i8.safetensors where the
# run starts from the en-fr body) and the sentencex wheel in .whl (the evaluation's sentence
# splitter); no check.
#
# Brings back under $OUT: the exported average (float16) in parts of at most 15 MiB
# (`cat model.safetensors.part-* > model.safetensors`), run.tgz (training log, configs, curves, the
# check's output) and, for en-de, eval.json (the scores) and the export's config.json (its
# sentencepiece.model is the bundle's).
#
#   TRAIN_ARGS="--lr 3e-4 --warmup 200 ..." scripts/gpu-train.sh             # on the GPU machine
#   TRAIN_PAIR=en-de scripts/gpu-train.sh                                    # on the GPU machine
#   TRAIN_DEVICE=cpu TRAIN_MINUTES=0.3 scripts/gpu-train.sh --dry-run       # here: every step, briefly
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
OUT="${OUT:-$PWD/gpu-train-out}"
DEVICE="${TRAIN_DEVICE:-cuda}"
PAIR="${TRAIN_PAIR:-en-fr}"
if [[ "$PAIR" == en-fr ]]; then
    MINUTES="${TRAIN_MINUTES:-7}"
    DEADLINE="${TRAIN_DEADLINE_S:-540}" # seconds after the start: the training is stopped then, whatever it is doing
    CORPUS_XZ="${TRAIN_CORPUS_XZ:-.gpu/corpus.tsv.xz}"
    INIT="${TRAIN_INIT:-.gpu/init.i8.safetensors}"
    read -r -a EXTRA <<<"${TRAIN_ARGS:-}"
else  # the bundle's tokenizer and shape; from its init.i8.safetensors where it has one, else TRAIN_INIT, else from scratch
    BUNDLE="${TRAIN_BUNDLE:-.gpu/$PAIR}"
    MINUTES="${TRAIN_MINUTES:-6.5}"
    DEADLINE="${TRAIN_DEADLINE_S:-480}"  # earlier than en-fr's: the average and the evaluation follow within the call
    CORPUS_XZ="${TRAIN_CORPUS_XZ:-$BUNDLE/corpus.tsv.xz}"
    INIT="${TRAIN_INIT:-}"
    [[ -z "$INIT" && -f "$BUNDLE/init.i8.safetensors" ]] && INIT="$BUNDLE/init.i8.safetensors"
    read -r -a EXTRA <<<"${TRAIN_ARGS:---amp bf16 --max-tokens 64000 --lr 1.2e-3 --warmup 500 --save-every 200 \
        --keep-checkpoints 8 --eval-every 1000 --bleu-sentences 0 --cap dict=100000 --upsample dialogue=3,ddtp=2 \
        --valid-sets $PAIR,everyday.$PAIR}"
    EXTRA+=(--model-config "$BUNDLE/config.json")
    GPU_CHECK_SKIP=1  # the check is the shipped (en-fr) translator's
fi
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
RUN="$WORK/run"
mkdir -p "$OUT" "$RUN" "$WORK/init"

say() { echo "== $* (+$((SECONDS - START)) s)" | tee -a "$WORK/steps.txt"; }

source scripts/gpu-env.sh  # rendition.model / rendition.service in place, the carried wheels

if [[ "$PAIR" == en-fr ]]; then
    say "unpacking the starting weights and the corpus"
    "$PY" scripts/gpu_bundle.py unpack "$INIT" "$WORK/init" || exit 1
    cp model/pretrained/translator/config.json model/pretrained/translator/sentencepiece.model "$WORK/init/"
    cp model/pretrained/translator/sentencepiece.model "$RUN/"
    if (( ! DRY )) && [[ ! -f model/pretrained/translator/model.safetensors ]]; then
        cp "$WORK/init/model.safetensors" model/pretrained/translator/
    fi
    EXTRA+=(--init-from "$WORK/init")
else
    say "unpacking the $PAIR bundle"
    cp "$BUNDLE/sentencepiece.model" "$RUN/" || exit 1
    if [[ -n "$INIT" ]]; then
        "$PY" scripts/gpu_bundle.py unpack "$INIT" "$WORK/init" || exit 1
        EXTRA+=(--init-from "$WORK/init")
    fi
fi
xz -dc "$CORPUS_XZ" >"$WORK/corpus.tsv" || exit 1

say "training $PAIR on $DEVICE for $MINUTES minutes: ${EXTRA[*]}"
"$PY" -m rendition.model.training.train --run-dir "$RUN" --corpus "$WORK/corpus.tsv" --pairs "$PAIR" \
    --device "$DEVICE" --max-minutes "$MINUTES" "${EXTRA[@]}" >"$WORK/train.log" 2>&1 &
train=$!

if [[ "${GPU_CHECK_SKIP:-0}" == 1 ]]; then
    say "the check skipped (GPU_CHECK_SKIP=1: a second call on a machine already checked, or not en-fr)"
elif (( DRY )); then
    say "the check, dry"
    OUT="$WORK/check" scripts/gpu-check.sh --dry-run >"$WORK/check.log" 2>&1
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
if [[ "$PAIR" != en-fr ]]; then
    cp "$WORK/export/config.json" "$OUT/"  # (the tokenizer is the bundle's: 8 files at most come back)
    compute=float16
    [[ "$DEVICE" == cpu ]] && compute=float32
    limit=()
    (( DRY )) && limit=(--limit "${TRAIN_EVAL_LIMIT:-8}")
    say "evaluating on the $PAIR test split (beam 4, $compute)"
    timeout "${TRAIN_EVAL_S:-75}" "$PY" -m rendition.model.training.evaluate --model-dir "$WORK/export" --sets "$PAIR" \
        --compute-type "$compute" --output "$OUT/eval.json" "${limit[@]}" 2>&1 | tee "$WORK/eval.log"
    say "evaluated"
fi
cp "$WORK/steps.txt" "$WORK/steps-copy.txt"
tar czf "$OUT/run.tgz" -C "$WORK" --ignore-failed-read steps-copy.txt train.log check.log check eval.log \
    run/log.jsonl run/config.json run/train_config.json run/curves.png export/averaged.json export/config.json 2>/dev/null
ls -la "$OUT"
rm -rf "$WORK"
