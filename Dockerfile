# syntax=docker/dockerfile:1
# Rendition: translation + sentence-embedding inference service.
#
#   docker build -t rendition:cpu .                                     # CPU image (default)
#   docker build -t rendition:gpu --build-arg TORCH_VARIANT=cu126 .     # CUDA build of torch
#
# Multi-stage: the builder installs torch + the package (with the shipped models under
# model/pretrained/) into /opt/venv; the runtime stage copies only that virtualenv onto a slim
# base and runs `rendition serve` as an unprivileged user. All service configuration comes from
# RENDITION_* environment variables (see docs/service.md and docs/deploy.md).
#
# Build arguments:
#   BASE_IMAGE       Python 3.11 base with `python3 -m venv` (default python:3.11-slim)
#   TORCH_VERSION    torch release to install (default 2.13.0)
#   TORCH_VARIANT    cpu | cu126 | cu128 | ... : picks https://download.pytorch.org/whl/<variant>
#   TORCH_INDEX_URL  overrides the index derived from TORCH_VARIANT
#   deploy/wheels/   optional local wheels: a torch-*.whl found there is installed instead of
#                    downloading one (empty by default; used by offline builds and the smoke test)
# Written for both BuildKit and the classic builder (no RUN --mount), so it builds anywhere.

ARG BASE_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder

ARG TORCH_VERSION=2.13.0
ARG TORCH_VARIANT=cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/${TORCH_VARIANT}

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# torch first (the big layer, cached independently of the source code).
COPY deploy/wheels/ /tmp/wheels/
RUN set -eux; \
    if ls /tmp/wheels/torch-*.whl >/dev/null 2>&1; then \
        pip install /tmp/wheels/torch-*.whl; \
    else \
        pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"; \
    fi; \
    python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

# The package itself; model/pretrained/** ships as package data (the default models).
WORKDIR /src
COPY pyproject.toml README.md* ./
COPY model/ model/
COPY service/ service/
RUN set -eux; \
    pip install . ; \
    python -c "import model, service; from model.translator import DEFAULT_TRANSLATOR; print(sorted(p.name for p in DEFAULT_TRANSLATOR.iterdir()))"

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

LABEL org.opencontainers.image.title="rendition" \
      org.opencontainers.image.description="Machine translation + sentence embeddings inference service" \
      org.opencontainers.image.licenses="MIT"

RUN set -eux; \
    (groupadd --system --gid 10001 rendition && useradd --system --uid 10001 --gid rendition --home-dir /home/rendition --create-home --shell /usr/sbin/nologin rendition) \
    || (addgroup -S -g 10001 rendition && adduser -S -u 10001 -G rendition -h /home/rendition rendition)

COPY --from=builder /opt/venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RENDITION_HOST=0.0.0.0 \
    RENDITION_PORT=8000

USER rendition
WORKDIR /home/rendition
EXPOSE 8000

# Readiness (models loaded, queue accepting work); python instead of curl: the slim base has none.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; port = os.environ.get('RENDITION_PORT', '8000'); sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/health/ready', timeout=4).status == 200 else 1)"]

ENTRYPOINT ["rendition", "serve"]
CMD []
