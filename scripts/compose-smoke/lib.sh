# Shared steps of scripts/compose-smoke.sh and scripts/scale-smoke.sh (sourced, not run):
# a real Docker engine on a Debian machine that reaches only the Debian and PyPI registries.
#
# The caller sets SMOKE_NAME (log prefix), PROJECT (compose project) and LOG_SERVICES (services
# whose logs `fail` prints), then calls smoke_engine, smoke_base_image, smoke_service_image,
# smoke_standin_image, smoke_models and `"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" ...`.
# Knobs: SMOKE_WORK, SMOKE_TORCH_WHEEL, SMOKE_REBUILD_BASE=1, SMOKE_KEEP=1 (see the callers).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${SMOKE_WORK:-/var/tmp/rendition-smoke}"
BASE_TAG="rendition-smoke/base:bookworm"
PROM_TAG="rendition-smoke/prometheus:debian"
HAPROXY_TAG="rendition-smoke/haproxy:debian"
IMAGE_TAG="rendition:smoke"
CA_BUNDLE="/etc/ssl/certs/ca-certificates.crt"
SMOKE_DIR="$ROOT/scripts/compose-smoke"

STARTED_DOCKERD=""
WHEEL_LINKED=""
STACK_UP=""
COMPOSE=()
COMPOSE_FILES=()

log() { printf '[%s %s] %s\n' "$SMOKE_NAME" "$(date -u +%H:%M:%S)" "$*"; }
fail() {
    log "ERROR: $*"
    if [ -n "$STACK_UP" ]; then
        for svc in "${LOG_SERVICES[@]}"; do
            log "--- $svc logs (tail) ---"
            "${COMPOSE[@]}" "${COMPOSE_FILES[@]}" logs --tail=40 "$svc" 2>&1 | tail -40
        done
    fi
    cleanup
    echo "FAIL"
    exit 1
}

cleanup() {
    if [ -n "$STACK_UP" ] && [ -z "${SMOKE_KEEP:-}" ]; then
        log "tearing the stack down"
        "${COMPOSE[@]}" "${COMPOSE_FILES[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
        STACK_UP=""
    fi
    if [ -n "$WHEEL_LINKED" ]; then
        rm -f "$WHEEL_LINKED"
        WHEEL_LINKED=""
    fi
    if [ -n "$STARTED_DOCKERD" ] && [ -z "${SMOKE_KEEP:-}" ]; then
        log "stopping the dockerd this script started (pid $STARTED_DOCKERD)"
        kill "$STARTED_DOCKERD" 2>/dev/null || true
        for _ in $(seq 1 30); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 1; done
        STARTED_DOCKERD=""
    fi
}

# -- engine: docker.io / docker-compose / debootstrap, dockerd, the compose command -----------------
smoke_engine() {
    [ "$(id -u)" = 0 ] || { echo "run as root (it installs packages and starts dockerd)"; echo FAIL; exit 1; }
    if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null \
        || { ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; }; then
        log "installing docker.io docker-compose debootstrap"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose debootstrap >/dev/null \
            || fail "apt-get install failed"
    fi
    mkdir -p "$WORK"
    if ! docker info >/dev/null 2>&1; then
        log "starting dockerd"
        dockerd >"$WORK.dockerd.log" 2>&1 &
        STARTED_DOCKERD=$!
        for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
        docker info >/dev/null 2>&1 || fail "dockerd did not come up (see $WORK.dockerd.log)"
    fi
    if docker compose version >/dev/null 2>&1; then
        COMPOSE=(docker compose -p "$PROJECT")
    else
        # Compose v1 applies deploy.resources.limits (and deploy.replicas) only in compatibility mode.
        COMPOSE=(docker-compose --compatibility -p "$PROJECT")
    fi
    # Without the buildx plugin the docker CLI can only use the classic builder (the Dockerfile works with both).
    docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0
    log "engine: $(docker version --format '{{.Server.Version}}'), compose: ${COMPOSE[*]:0:2}"
}

# -- a stand-in for python:3.11-slim, built with debootstrap ------------------------------------------
smoke_base_image() {
    if [ -n "${SMOKE_REBUILD_BASE:-}" ] || ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
        log "building $BASE_TAG with debootstrap (a few minutes)"
        rm -rf "$WORK/rootfs"
        debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
            bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
            || fail "debootstrap failed (see $WORK/debootstrap.log)"
        # This machine's CA bundle (registry traffic is TLS-intercepted) and pip settings: test-only.
        cp "$CA_BUNDLE" "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
        printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$WORK/rootfs/etc/pip.conf"
        rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
        tar -C "$WORK/rootfs" -c . | docker import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt" \
            --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
            --change 'CMD ["python3"]' - "$BASE_TAG" >/dev/null || fail "docker import failed"
        rm -rf "$WORK/rootfs"
    fi
    log "base image: $BASE_TAG ($(docker run --rm "$BASE_TAG" python3 --version 2>&1))"
}

# -- the service image from the real Dockerfile (torch from a local CPU wheel when there is one) -------
smoke_service_image() {
    local wheel
    wheel="${SMOKE_TORCH_WHEEL:-$(ls /opt/wheels/torch-*cp311*.whl 2>/dev/null | head -1)}"
    if [ -n "$wheel" ] && [ -f "$wheel" ]; then
        WHEEL_LINKED="$ROOT/deploy/wheels/$(basename "$wheel")"
        ln -f "$wheel" "$WHEEL_LINKED" 2>/dev/null || cp "$wheel" "$WHEEL_LINKED" || fail "cannot stage $wheel"
        log "torch from local wheel $(basename "$wheel")"
    else
        log "no local torch wheel: the build downloads torch from the PyTorch CPU index"
    fi
    log "building $IMAGE_TAG from the real Dockerfile"
    docker build --force-rm --network host --build-arg BASE_IMAGE="$BASE_TAG" -t "$IMAGE_TAG" "$ROOT" >"$WORK/build.log" 2>&1 \
        || { tail -30 "$WORK/build.log"; fail "image build failed (full log: $WORK/build.log)"; }
    rm -f "$WHEEL_LINKED"; WHEEL_LINKED=""
    log "image $IMAGE_TAG: $(docker image inspect --format '{{.Size}}' "$IMAGE_TAG" | awk '{printf "%.0f MB", $1/1e6}'), user $(docker image inspect --format '{{.Config.User}}' "$IMAGE_TAG")"
}

# -- smoke_standin_image TAG DOCKERFILE: a stand-in for an official image, from Debian's package --------
smoke_standin_image() {
    if [ -n "${SMOKE_REBUILD_BASE:-}" ] || ! docker image inspect "$1" >/dev/null 2>&1; then
        log "building $1 (Debian's package)"
        docker build --force-rm --network host --build-arg BASE_IMAGE="$BASE_TAG" -t "$1" -f "$SMOKE_DIR/$2" "$SMOKE_DIR" \
            >"$WORK/$2.log" 2>&1 || { tail -20 "$WORK/$2.log"; fail "$1 build failed"; }
    fi
}

# -- tiny random models when the shipped weights are not in model/pretrained/ yet ------------------------
smoke_models() {
    if [ -f "$ROOT/model/pretrained/translator/model.safetensors" ] && [ -f "$ROOT/model/pretrained/encoder/model.safetensors" ]; then
        log "shipped weights present: the image runs as built, on its default models"
        return
    fi
    log "shipped weights missing: mounting tiny random stand-in models"
    rm -rf "$WORK/models" && mkdir -p "$WORK/models"
    docker run --rm --user 0 -v "$WORK/models:/out" -v "$SMOKE_DIR/make_standin_models.py:/tmp/make.py:ro" \
        --entrypoint python "$IMAGE_TAG" /tmp/make.py /out || fail "could not make stand-in models"
    chmod -R a+rX "$WORK/models"
    cat >"$WORK/docker-compose.models.yml" <<EOM
services:
  rendition:
    environment:
      RENDITION_TRANSLATOR_PATH: /models/translator
      RENDITION_ENCODER_PATH: /models/encoder
    volumes:
      - $WORK/models:/models:ro
EOM
    COMPOSE_FILES+=(-f "$WORK/docker-compose.models.yml")
}

# -- wait_healthy CID...: each container's health check turns healthy (10 min at most) -------------------
wait_healthy() {
    local cid status
    for cid in "$@"; do
        status=""
        for _ in $(seq 1 300); do
            status="$(docker inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$cid" 2>/dev/null)"
            [ "$status" = healthy ] && break
            [ "$(docker inspect --format '{{.State.Status}}' "$cid")" = exited ] && fail "container ${cid:0:12} exited"
            sleep 2
        done
        [ "$status" = healthy ] || fail "container ${cid:0:12} not healthy after 10 minutes (status: $status)"
    done
}
