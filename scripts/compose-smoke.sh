#!/usr/bin/env bash
# End-to-end check of the compose deployment on a real Docker engine, offline-friendly.
#
#   sudo scripts/compose-smoke.sh            # prints PASS or FAIL as its last line (exit 0 / 1)
#
# As root on a Debian machine whose only reachable registries are Debian and PyPI (no Docker Hub):
#   1. installs docker.io / docker-compose / debootstrap if missing and starts dockerd if needed;
#   2. builds a stand-in base image with debootstrap (bookworm + python3 + venv, this machine's CA
#      bundle and pip config) - it replaces python:3.11-slim for this test only;
#   3. builds the service image from the real Dockerfile (BASE_IMAGE = the stand-in, torch from the
#      local CPU wheel put in deploy/wheels/ for the duration of the build);
#   4. starts `rendition` + `prometheus` from docker-compose.yml plus smoke-only overrides
#      (a Prometheus stand-in built from Debian's package; Grafana is left out - its files are
#      only checked: JSON parses, every dashboard query is valid PromQL on the live Prometheus);
#   5. waits for the container health check, fetches the web page (/, its script and style) and
#      translates as the page does, sends a translation and an embeddings request through
#      the published port, checks non-root user + memory limit, checks that Prometheus scrapes the
#      service (targets API: up) and loaded the alert rules; then tears everything down.
# Random tiny models are mounted when the shipped weights are not in model/pretrained/ yet.
#
# Environment knobs: SMOKE_WORK (scratch dir, default /var/tmp/rendition-smoke), SMOKE_PORT (18000),
# SMOKE_PROM_PORT (19090), SMOKE_TORCH_WHEEL (a local torch wheel; default: /opt/wheels/torch-*.whl),
# SMOKE_REBUILD_BASE=1 (rebuild the debootstrap base), SMOKE_KEEP=1 (leave the stack running).
set -uo pipefail

SMOKE_NAME=compose-smoke
PROJECT="rendition-smoke"
LOG_SERVICES=(rendition prometheus)
PORT="${SMOKE_PORT:-18000}"
PROM_PORT="${SMOKE_PROM_PORT:-19090}"
# shellcheck source=compose-smoke/lib.sh
. "$(dirname "$0")/compose-smoke/lib.sh"
trap 'fail "interrupted"' INT TERM

# -- 1-3. engine, stand-in base image, images -----------------------------------------------------------
smoke_engine
smoke_base_image
smoke_service_image
smoke_standin_image "$PROM_TAG" prometheus.Dockerfile
docker run --rm -v "$ROOT/deploy/prometheus:/etc/prometheus:ro" --entrypoint promtool "$PROM_TAG" \
    check config /etc/prometheus/prometheus.yml >"$WORK/promtool.log" 2>&1 \
    || { cat "$WORK/promtool.log"; fail "promtool rejects deploy/prometheus"; }
log "promtool: $(grep -c SUCCESS "$WORK/promtool.log") files SUCCESS (config + rules)"

# -- 4. models + stack ----------------------------------------------------------------------------
COMPOSE_FILES=(-f "$ROOT/docker-compose.yml" -f "$ROOT/deploy/compose/prometheus-port.yml" -f "$SMOKE_DIR/docker-compose.smoke.yml")
smoke_models
# Grafana is not started, but the compose file requires its password (the stack refuses to start without one).
export RENDITION_IMAGE="$IMAGE_TAG" SMOKE_PROMETHEUS_IMAGE="$PROM_TAG" \
    RENDITION_PUBLISHED_PORT="$PORT" PROMETHEUS_PUBLISHED_PORT="$PROM_PORT" GRAFANA_ADMIN_PASSWORD=smoke-not-started
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" config -q || fail "compose files do not validate"
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
log "starting rendition + prometheus (grafana is not available offline; its files are checked below)"
STACK_UP=1
"${COMPOSE[@]}" "${COMPOSE_FILES[@]}" up -d --no-build rendition prometheus || fail "compose up failed"

# -- 5. checks ------------------------------------------------------------------------------------
CID="$("${COMPOSE[@]}" "${COMPOSE_FILES[@]}" ps -q rendition)"
[ -n "$CID" ] || fail "no rendition container"
log "waiting for the container health check"
wait_healthy "$CID"
log "rendition is healthy"

uid="$(docker exec "$CID" id -u)"
[ "$uid" != 0 ] || fail "service runs as root"
mem="$(docker inspect --format '{{.HostConfig.Memory}}' "$CID")"
[ "${mem:-0}" -gt 0 ] || fail "no memory limit on the container"
restart="$(docker inspect --format '{{.HostConfig.RestartPolicy.Name}}' "$CID")"
[ "$(docker inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$CID")" = true ] || fail "root filesystem is writable"
docker exec "$CID" sh -c 'touch /home/rendition/x' 2>/dev/null && fail "could write to the root filesystem"
log "container: uid $uid, memory limit $((mem / 1024 / 1024)) MiB, restart policy $restart, read-only root fs"

BASE_URL="http://127.0.0.1:$PORT"
curl -fsS "$BASE_URL/health/live" >/dev/null || fail "/health/live"
body="$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' \
    -d '{"text": "The service is running in a container.", "source": "en", "target": "fr"}' "$BASE_URL/v1/translate")"
code="${body##*$'\n'}"; body="${body%$'\n'*}"
[ "$code" = 200 ] || fail "POST /v1/translate -> $code: $body"
python3 - "$body" <<'EOF' || fail "bad translation response: $body"
import json, sys
r = json.loads(sys.argv[1])
assert len(r["results"]) == 1 and isinstance(r["results"][0]["text"], str), r
assert r["usage"]["source_tokens"] > 0, r
print(f"[compose-smoke] translate ok: {json.dumps(r, ensure_ascii=False)[:200]}")
EOF
# The web page as a browser loads it (GET / with a browser's Accept header, then its script and style),
# and a translation sent the way the page sends it (LibreTranslate's POST /translate).
for path in / /ui/app.js /ui/style.css; do
    code="$(curl -sS -o "$WORK/page.out" -w '%{http_code}' -H 'Accept: text/html,application/xhtml+xml,*/*;q=0.8' "$BASE_URL$path")"
    [ "$code" = 200 ] || fail "GET $path -> $code: $(head -c 300 "$WORK/page.out")"
    [ "$(wc -c <"$WORK/page.out")" -gt 1000 ] || fail "GET $path: only $(wc -c <"$WORK/page.out") bytes"
    [ "$path" != / ] || grep -q '<title>Rendition</title>' "$WORK/page.out" || fail "GET / does not serve the page"
done
body="$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' \
    -d '{"q": "The service is running in a container.", "source": "auto", "target": "fr", "format": "text", "alternatives": 2, "api_key": ""}' \
    "$BASE_URL/translate")"
code="${body##*$'\n'}"; body="${body%$'\n'*}"
[ "$code" = 200 ] || fail "POST /translate (as the page sends it) -> $code: $body"
python3 - "$body" <<'EOF' || fail "bad /translate response: $body"
import json, sys
r = json.loads(sys.argv[1])
assert isinstance(r["translatedText"], str) and r["translatedText"], r
print(f"[compose-smoke] page ok: /, app.js, style.css; /translate -> {r['translatedText'][:100]!r}")
EOF
body="$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' \
    -d '{"input": ["A tool for translation.", "Un outil de traduction."]}' "$BASE_URL/v1/embeddings")"
code="${body##*$'\n'}"; body="${body%$'\n'*}"
[ "$code" = 200 ] || fail "POST /v1/embeddings -> $code: $body"
python3 - "$body" <<'EOF' || fail "bad embeddings response: ${body:0:300}"
import json, math, sys
r = json.loads(sys.argv[1])
vecs = [d["embedding"] for d in r["data"]]
assert len(vecs) == 2 and len(vecs[0]) == len(vecs[1]) > 0, r
assert all(math.isfinite(x) for v in vecs for x in v)
print(f"[compose-smoke] embeddings ok: {len(vecs)} vectors of dim {len(vecs[0])}, object={r.get('object')}")
EOF
# /metrics lives on the internal metrics port (RENDITION_METRICS_PORT=9100), not on the published API port.
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE_URL/metrics")" = 404 ] || fail "/metrics is served on the published API port"
docker exec "$CID" python -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9100/metrics', timeout=5).read().decode())" \
    | grep -q '^rendition_requests_total' || fail "metrics port 9100 lacks rendition_requests_total"

PROM="http://127.0.0.1:$PROM_PORT"
log "waiting for Prometheus to scrape the service"
up=""
for _ in $(seq 1 60); do
    up="$(curl -fsS "$PROM/api/v1/targets" 2>/dev/null | python3 -c '
import json, sys
t = [x for x in json.load(sys.stdin)["data"]["activeTargets"] if x["labels"]["job"] == "rendition"]
print(",".join(x["scrapeUrl"] + "=" + x["health"] for x in t))' 2>/dev/null)"
    case "$up" in *=up*) break ;; esac
    sleep 2
done
case "$up" in *=up*) log "prometheus targets: $up" ;; *) fail "prometheus does not scrape rendition (targets: ${up:-none})" ;; esac
# The counters of the two requests above must reach Prometheus (needs one scrape after them).
seen=""
for _ in $(seq 1 30); do
    seen="$(curl -fsS "$PROM/api/v1/query" --data-urlencode 'query=sum(rendition_requests_total{route=~".*translate.*|.*embeddings.*"})' \
        | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")')"
    [ -n "$seen" ] && [ "${seen%.*}" -ge 2 ] 2>/dev/null && break
    sleep 2
done
[ -n "$seen" ] && [ "${seen%.*}" -ge 2 ] 2>/dev/null || fail "prometheus has not recorded the test requests (got '${seen}')"
log "prometheus recorded $seen translate/embeddings requests"
rules="$(curl -fsS "$PROM/api/v1/rules" | python3 -c '
import json, sys
g = [r for grp in json.load(sys.stdin)["data"]["groups"] for r in grp["rules"]]
bad = [r["name"] for r in g if r.get("health") not in ("ok", "unknown")]
print(len(g), " ".join(r["name"] for r in g), "BAD:" + ",".join(bad) if bad else "")')"
case "$rules" in 0*|*BAD:*) fail "alert rules not loaded/healthy: $rules" ;; esac
log "alert rules loaded: $rules"

# Grafana files: JSON/YAML parse, datasource uid matches, and every dashboard query is valid PromQL.
python3 - "$ROOT" "$PROM" <<'EOF' || fail "grafana provisioning check failed"
import json, sys, urllib.parse, urllib.request
from pathlib import Path
root, prom = Path(sys.argv[1]), sys.argv[2]
dash = json.loads((root / "deploy/grafana/dashboards/rendition.json").read_text())
ds = (root / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text()
assert "uid: prometheus" in ds and "http://prometheus:9090" in ds
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
with_data = 0
for e in exprs:
    q = e.replace("$instance", ".*")
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    r = json.load(urllib.request.urlopen(url, timeout=10))
    assert r["status"] == "success", (e, r)
    with_data += bool(r["data"]["result"])
print(f"[compose-smoke] grafana dashboard: {len(dash['panels'])} panels, {len(exprs)} queries valid on Prometheus, {with_data} with data now")
EOF

cleanup
log "all checks passed"
echo "PASS"
