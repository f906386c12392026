#!/usr/bin/env bash
# Install the CPU build of torch into the active virtualenv (sourced by serve.sh and test.sh).
#
# A plain `pip install torch` on Linux x86-64 brings the CUDA build from PyPI (~900 MB wheel plus
# ~2.5 GB of nvidia-* wheels). PyTorch's own CPU index serves the CPU-only build (~190 MB, no
# nvidia-* packages), so it is used whenever it can be reached; where it cannot (machines that
# reach only PyPI or a mirror), the default index is used instead: there a local CPU wheel from
# pip's find-links (as on our build machines) or, failing that, PyPI's default build is taken.
#   TORCH_VERSION     default 2.13.0
#   TORCH_INDEX_URL   default https://download.pytorch.org/whl/cpu (e.g. .../whl/cu126 for CUDA)
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
TORCH_INDEX_URL="${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"

if python -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
    echo "torch $TORCH_VERSION already installed"
elif python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip('/') + '/torch/', timeout=10)" "$TORCH_INDEX_URL" 2>/dev/null; then
    echo "installing torch $TORCH_VERSION from $TORCH_INDEX_URL"
    pip install -q --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"
else
    echo "$TORCH_INDEX_URL is not reachable: installing torch $TORCH_VERSION from the default index"
    pip install -q "torch==$TORCH_VERSION"
fi
