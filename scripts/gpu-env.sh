# Sourced (not run) by scripts/gpu-check.sh and scripts/gpu-train.sh, in the repository root, with
# PY (the Python) and DRY (1: a dry run) set.
#
# The packages import as rendition.model and rendition.service (an install maps model/ and service/
# there); used in place, a temporary folder of two links gives the same names.  Python packages the
# machine lacks can come as wheels in ./.whl: they are installed with pip --no-index into /tmp/site
# (once: a script that finds /tmp/site on PYTHONPATH already skips it).
GPU_SHIM="$(mktemp -d)"
mkdir -p "$GPU_SHIM/rendition"
ln -s "$PWD/model" "$GPU_SHIM/rendition/model"
ln -s "$PWD/service" "$GPU_SHIM/rendition/service"
export PYTHONPATH="$GPU_SHIM${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
if (( ! DRY )) && [[ ":$PYTHONPATH:" != *":/tmp/site:"* ]] && compgen -G ".whl/*.whl" >/dev/null; then
    echo "== installing the carried wheels"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
