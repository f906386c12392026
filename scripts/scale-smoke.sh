#!/usr/bin/env bash
# Replicas on one host, for real: 3 service replicas behind HAProxy on a real Docker engine.
#
#   sudo scripts/scale-smoke.sh            # prints PASS or FAIL as its last line (exit 0 / 1)
#
# Same offline set-up as scripts/compose-smoke.sh (scripts/compose-smoke/lib.sh: docker.io from
# Debian, a debootstrap stand-in for python:3.11-slim, the image from the real Dockerfile, and
# stand-ins for prom/prometheus and haproxy built from Debian's packages), then:
#   1. starts docker-compose.yml + deploy/compose/replicas.yml with --scale rendition=3: three
#      replicas, HAProxy in front (deploy/compose/haproxy.cfg), Prometheus;
#   2. waits until every replica is healthy and HAProxy has all three UP;
#   3. drives a bounded closed-loop load (scripts/loadgen.py) through HAProxy on loopback and
#      records the throughput with 3 replicas;
#   4. checks that Prometheus discovered and scrapes all three replicas (DNS service discovery)
#      and that each of them served translations;
#   5. kills one replica (SIGKILL to its init process: a crash) in the middle of a second load run:
#      the client must see zero failed requests (HAProxy retries), and the replica must be
#      restarted by Docker (restart: unless-stopped) and rejoin the pool;
#   6. scales down to 1 replica and measures the throughput again; prints both.
# Knobs: SMOKE_LB_PORT (18080), SMOKE_PROM_PORT (19091), SMOKE_STATS_PORT (18404),
# SMOKE_THREADS (torch threads and CPU limit per replica, default 1), SMOKE_CONCURRENCY (12),
# SMOKE_LOAD_SECONDS (20), SMOKE_PYTHON (a python with httpx; default .venv/bin/python), and the
# knobs of lib.sh (SMOKE_WORK, SMOKE_TORCH_WHEEL, SMOKE_REBUILD_BASE, SMOKE_KEEP).
set -uo pipefail

SMOKE_NAME=scale-smoke
PROJECT="rendition-scale"
LOG_SERVICES=(rendition lb)
LB_PORT="${SMOKE_LB_PORT:-18080}"
PROM_PORT="${SMOKE_PROM_PORT:-19091}"
STATS_PORT="${SMOKE_STATS_PORT:-18404}"
THREADS="${SMOKE_THREADS:-1}"
CONCURRENCY="${SMOKE_CONCURRENCY:-12}"
LOAD_SECONDS="${SMOKE_LOAD_SECONDS:-20}"
REPLICAS=3
# shellcheck source=compose-smoke/lib.sh
. "$(dirname "$0")/compose-smoke/lib.sh"
trap 'fail "interrupted"' INT TERM
PY="${SMOKE_PYTHON:-$ROOT/.venv/bin/python}"
"$PY" -c "import httpx" 2>/dev/null || { echo "SMOKE_PYTHON ($PY) needs httpx (pip install -e '.[test]')"; echo FAIL; exit 1; }

# -- images -------------------------------------------------------------------------------------------
smoke_engine
smoke_base_image
smoke_service_image
smoke_standin_image "$PROM_TAG" prometheus.Dockerfile
smoke_standin_image "$HAPROXY_TAG" haproxy.Dockerfile
docker run --rm -v "$ROOT/deploy/compose/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" "$HAPROXY_TAG" \
    haproxy -c -f /usr/local/etc/haproxy/haproxy.cfg >"$WORK/haproxy-check.log" 2>&1 \
    || { cat "$WORK/haproxy-check.log"; fail "haproxy rejects deploy/compose/haproxy.cfg"; }
log "haproxy -c: $(tail -1 "$WORK/haproxy-check.log")"

# -- 1. stack -----------------------------------------------------------------------------------------
cat >"$WORK/docker-compose.scale-smoke.yml" <<EOM
# smoke only: the HAProxy stats page on loopback, to count the servers that are UP
services:
  lb:
    ports:
      - "127.0.0.1:$STATS_PORT:8404"
EOM
COMPOSE_FILES=(-f "$ROOT/docker-compose.yml" -f "$ROOT/deploy/compose/replicas.yml" -f "$ROOT/deploy/compose/prometheus-port.yml"
    -f "$SMOKE_DIR/docker-compose.smoke.yml" -f "$WORK/docker-compose.scale-smoke.yml")
smoke_models
export RENDITION_IMAGE="$IMAGE_TAG" SMOKE_PROMETHEUS_IMAGE="$PROM_TAG" HAPROXY_IMAGE="$HAPROXY_TAG" \
    RENDITION_PUBLISHED_PORT="127.0.0.1:" LB_PUBLISHED_PORT="$LB_PORT" PROMETHEUS_PUBLISHED_PORT="$PROM_PORT" \
    RENDITION_TORCH_THREADS="$THREADS" RENDITION_CPUS="$THREADS" RENDITION_REPLICAS="$REPLICAS" \
    GRAFANA_ADMIN_PASSWORD=smoke-not-started
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" config -q || fail "compose files do not validate"
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
log "starting $REPLICAS replicas ($THREADS torch thread(s) and CPU(s) each) + haproxy + prometheus"
STACK_UP=1
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" up -d --no-build --scale rendition=$REPLICAS rendition lb prometheus || fail "compose up failed"

replicas() { "${COMPOSE[@]}" "${COMPOSE_FILES[@]}" ps -q rendition; }
servers_up() {  # servers HAProxy has UP in the rendition backend
    curl -fsS "http://127.0.0.1:$STATS_PORT/stats;csv" 2>/dev/null | awk -F, '$1 == "rendition" && $2 != "BACKEND" && $18 == "UP"' | wc -l
}
wait_servers_up() {
    local n=""
    for _ in $(seq 1 60); do n="$(servers_up)"; [ "$n" = "$1" ] && return 0; sleep 1; done
    fail "haproxy has $n servers UP, expected $1"
}
run_load() {  # run_load NAME SECONDS: closed loop through haproxy, every record in $WORK/NAME.json
    "$PY" "$ROOT/scripts/loadgen.py" --url "http://127.0.0.1:$LB_PORT" --concurrency "$CONCURRENCY" --seconds "$2" \
        --timeout 60 --json "$WORK/$1.json" >/dev/null
}
summary() {
    "$PY" - "$WORK/$1.json" <<'EOM'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(f"{s['requests']} requests, {s['ok']} ok, {s['errors'] + s['rejected_429']} failed {s['error_statuses']}, "
      f"{s['goodput_per_s']} req/s, p50 {s['ok_p50_ms']} ms, p99 {s['ok_p99_ms']} ms")
EOM
}
load() { run_load "$1" "$2" || fail "load generator failed ($1)"; summary "$1"; }
retries() {  # retries and redispatches HAProxy made in the rendition backend so far
    curl -fsS "http://127.0.0.1:$STATS_PORT/stats;csv" | awk -F, '$1 == "rendition" && $2 == "BACKEND" {print "retries " $16 ", redispatches " $17}'
}
failed() { "$PY" -c "import json, sys; s = json.load(open(sys.argv[1]))['summary']; print(s['errors'] + s['rejected_429'])" "$WORK/$1.json"; }
goodput() { "$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['summary']['goodput_per_s'])" "$WORK/$1.json"; }
prom() {  # prom QUERY: the first result's value ('' if none)
    curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" 2>/dev/null \
        | "$PY" -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

# -- 2. all healthy, all in the pool ------------------------------------------------------------------
mapfile -t CIDS < <(replicas)
[ "${#CIDS[@]}" = "$REPLICAS" ] || fail "expected $REPLICAS rendition containers, got ${#CIDS[@]}"
log "waiting for ${#CIDS[@]} replicas to be healthy"
wait_healthy "${CIDS[@]}"
wait_servers_up "$REPLICAS"
log "haproxy: $REPLICAS servers UP (found through Docker DNS); replicas: $(for c in "${CIDS[@]}"; do docker inspect --format '{{.Name}}={{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$c"; done | tr '\n' ' ')"

# -- 3. throughput with 3 replicas --------------------------------------------------------------------
load warmup3 5 >/dev/null
log "3 replicas, $CONCURRENCY clients, ${LOAD_SECONDS} s: $(load three "$LOAD_SECONDS")"
[ "$(failed three)" = 0 ] || fail "requests failed with 3 healthy replicas"

# -- 4. prometheus: every replica discovered, scraped and serving -------------------------------------
log "waiting for prometheus to scrape all $REPLICAS replicas"
up=""; served=""
for _ in $(seq 1 60); do
    up="$(prom 'count(up{job="rendition"} == 1)')"
    served="$(prom 'count(sum by (instance) (rendition_requests_total{route="/v1/translate"}) > 0)')"
    [ "$up" = "$REPLICAS" ] && [ "$served" = "$REPLICAS" ] && break
    sleep 2
done
[ "$up" = "$REPLICAS" ] || fail "prometheus has ${up:-0} rendition targets up, expected $REPLICAS"
[ "$served" = "$REPLICAS" ] || fail "only ${served:-0} replicas have served translations, expected $REPLICAS"
log "prometheus: $up targets up; translations served per replica: $(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query" \
    --data-urlencode 'query=sum by (instance) (rendition_requests_total{route="/v1/translate"})' \
    | "$PY" -c 'import json, sys; print(" ".join(r["metric"]["instance"] + "=" + r["value"][1] for r in json.load(sys.stdin)["data"]["result"]))')"
log "memory per replica: $(docker stats --no-stream --format '{{.Name}}={{.MemUsage}}' "${CIDS[@]}" | tr '\n' ' ')"
log "native kernels (built into the image, read-only root fs): $(docker exec "${CIDS[0]}" python -c 'from rendition.model.kernels import native; print(native.built(), "using", native.isa())')"

# -- 5. kill one replica mid-load ---------------------------------------------------------------------
VICTIM="${CIDS[1]}"
restarts0="$(docker inspect --format '{{.RestartCount}}' "$VICTIM")"
KILL_SECONDS=$((LOAD_SECONDS + 10))
retries_before="$(retries)"
run_load killed "$KILL_SECONDS" &
LOAD_PID=$!
sleep $((KILL_SECONDS / 3))
pid="$(docker inspect --format '{{.State.Pid}}' "$VICTIM")"
log "SIGKILL to replica $(docker inspect --format '{{.Name}}' "$VICTIM") (host pid $pid) under load"
kill -9 "$pid" || fail "could not kill the replica"
wait "$LOAD_PID" || fail "load run during the kill failed"
log "during the kill: $(summary killed); haproxy $(retries) (before: $retries_before)"
[ "$(failed killed)" = 0 ] || fail "$(failed killed) requests failed at the client while a replica died"
restarts1="$(docker inspect --format '{{.RestartCount}}' "$VICTIM")"
[ "$restarts1" -gt "$restarts0" ] || fail "the killed replica was not restarted (restart count $restarts1)"
wait_healthy "$VICTIM"
wait_servers_up "$REPLICAS"
log "the killed replica was restarted by Docker (restart count $restarts1), is healthy and back in the pool"

# -- 6. throughput with 1 replica ---------------------------------------------------------------------
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" up -d --no-build --scale rendition=1 rendition >/dev/null 2>&1 || fail "scale down failed"
wait_servers_up 1
load warmup1 5 >/dev/null
log "1 replica,  $CONCURRENCY clients, ${LOAD_SECONDS} s: $(load one "$LOAD_SECONDS")"
[ "$(failed one)" = 0 ] || fail "requests failed with 1 replica"
log "throughput: 3 replicas $(goodput three) req/s, 1 replica $(goodput one) req/s ($("$PY" -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$(goodput three)" "$(goodput one)")x) on $(nproc) cores, $THREADS thread(s) per replica"

cleanup
log "all checks passed"
echo "PASS"
