# syntax=docker/dockerfile:1
# Rendition: translation + sentence-embedding inference service.
#
#   docker build -t rendition:cpu .                                     # CPU image (default)
#   docker build -t rendition:gpu --build-arg TORCH_VARIANT=cu126 .     # CUDA build of torch
#
# Multi-stage: `deps` installs torch + the dependencies into /opt/venv, `wheel` builds the package
# (the native CPU kernels compiled there, one library per instruction set, and the shipped models
# under model/pretrained/), and the runtime stage copies that virtualenv onto a slim base, installs
# the wheel into it and runs `rendition serve` as an unprivileged user.  No compiler in the runtime. All service configuration comes from
# RENDITION_* environment variables (see docs/configuration.md and docs/deploy.md).
#
# Build arguments:
#   BASE_IMAGE       Python 3.11 base with `python3 -m venv` (default python:3.11-slim)
#   TORCH_VERSION    torch release to install (default 2.13.0)
#   TORCH_VARIANT    cpu | cu126 | cu128 | ... : picks https://download.pytorch.org/whl/<variant>
#   TORCH_INDEX_URL  overrides the index derived from TORCH_VARIANT
#   EXTRAS           optional dependency groups of pyproject.toml to add, e.g. "otel" (tracing)
#   deploy/wheels/   optional local wheels: a torch-*.whl found there is installed instead of
#                    downloading one (empty by default; used by offline builds and the smoke test)
# Written for both BuildKit and the classic builder (no RUN --mount), so it builds anywhere.

ARG BASE_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
# deps: torch + the package's dependencies in /opt/venv; depends only on pyproject.toml, so
# code and model changes do not rebuild (or re-copy) this big layer.
FROM ${BASE_IMAGE} AS deps

ARG TORCH_VERSION=2.13.0
ARG TORCH_VARIANT=cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/${TORCH_VARIANT}

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

COPY deploy/wheels/ /tmp/wheels/
RUN set -eux; \
    if ls /tmp/wheels/torch-*.whl >/dev/null 2>&1; then \
        pip install /tmp/wheels/torch-*.whl; \
    else \
        pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"; \
    fi; \
    python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

# The runtime dependencies listed in pyproject.toml ([project] dependencies, plus the EXTRAS groups).
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml ./
RUN set -eux; \
    python -c "import sys, tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print(*p['dependencies'], *(d for e in sys.argv[1].split(',') if e for d in p['optional-dependencies'][e]), sep='\n')" "${EXTRAS}" > /tmp/requirements.txt; \
    cat /tmp/requirements.txt; \
    pip install -r /tmp/requirements.txt; \
    rm -f /tmp/requirements.txt pyproject.toml

# ---------------------------------------------------------------------------------------------
# wheel: the package itself; model/pretrained/** ships inside it as package data (the default
# models the service loads).
# The native kernels (model/kernels/csrc, see setup.py) are built here with gcc; RENDITION_REQUIRE_NATIVE=1
# makes a kernel that does not build fail the image build instead of installing without it.
FROM deps AS wheel
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev; \
    rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py README.md* ./
COPY model/ model/
COPY service/ service/
RUN RENDITION_REQUIRE_NATIVE=1 pip wheel --no-deps --wheel-dir /dist .

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

LABEL org.opencontainers.image.title="rendition" \
      org.opencontainers.image.description="Machine translation + sentence embeddings inference service" \
      org.opencontainers.image.licenses="MIT"

RUN set -eux; \
    (groupadd --system --gid 10001 rendition && useradd --system --uid 10001 --gid rendition --home-dir /home/rendition --create-home --shell /usr/sbin/nologin rendition) \
    || (addgroup -S -g 10001 rendition && adduser -S -u 10001 -G rendition -h /home/rendition rendition)

COPY --from=deps /opt/venv /opt/venv

# The native kernels' OpenMP runtime (the only system library they need beyond libc).
RUN set -eux; \
    if ! ldconfig -p | grep -q libgomp.so.1; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1; \
        rm -rf /var/lib/apt/lists/*; \
    fi

COPY --from=wheel /dist/ /tmp/dist/
RUN set -eux; \
    /opt/venv/bin/pip install --no-cache-dir --no-deps --no-index /tmp/dist/*.whl; \
    rm -rf /tmp/dist; \
    /opt/venv/bin/python -c "import rendition.service.main; from rendition.model.translation.translator import DEFAULT_TRANSLATOR; from rendition.model.embedding.encoder import DEFAULT_ENCODER; print('shipped models:', [str(p) for d in (DEFAULT_TRANSLATOR, DEFAULT_ENCODER) if d.is_dir() for p in sorted(d.iterdir())])"; \
    RENDITION_REQUIRE_NATIVE=1 /opt/venv/bin/python -c "from rendition.model.kernels import native; print('native kernels:', native.built(), 'using', native.isa())"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RENDITION_HOST=0.0.0.0 \
    RENDITION_PORT=8000

USER rendition
WORKDIR /home/rendition
EXPOSE 8000

# Readiness (models loaded, queue accepting work); python instead of curl: the slim base has none.
HEALTHCHECK --interval=15s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; port = os.environ.get('RENDITION_PORT', '8000'); sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/health/ready', timeout=4).status == 200 else 1)"]

ENTRYPOINT ["rendition", "serve"]
CMD []
