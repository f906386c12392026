"""The compose files parse (YAML) and keep the safe defaults: Prometheus unpublished and without the
lifecycle API, Grafana's password required from the environment, metrics on the internal port
that Prometheus scrapes, read-only root filesystem.  ``scripts/compose-smoke.sh`` and
``scripts/scale-smoke.sh`` run the same files on a real Docker engine."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from rendition.service.app import create_app
from rendition.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def test_prometheus_is_private_and_has_no_lifecycle_api():
    prom = load("docker-compose.yml")["services"]["prometheus"]
    assert "ports" not in prom
    assert not any("enable-lifecycle" in c for c in prom["command"])
    opt_in = load("deploy/compose/prometheus-port.yml")["services"]["prometheus"]["ports"]
    assert all(p.startswith("127.0.0.1:") for p in opt_in)  # the opt-in publishes on loopback only


def test_grafana_password_is_required_from_the_environment():
    env = load("docker-compose.yml")["services"]["grafana"]["environment"]
    # ${VAR:?message}: compose refuses to start (and `config` fails) when it is unset or empty
    assert re.fullmatch(r"\$\{GRAFANA_ADMIN_PASSWORD:\?[^}]+\}", env["GF_SECURITY_ADMIN_PASSWORD"])
    assert "admin" not in env["GF_SECURITY_ADMIN_PASSWORD"].split(":?")[0]


def test_metrics_on_the_internal_port_that_prometheus_scrapes_and_read_only_root():
    svc = load("docker-compose.yml")["services"]["rendition"]
    env = svc["environment"]
    port = int(env["RENDITION_METRICS_PORT"])
    assert all(str(port) not in str(p) for p in svc["ports"])  # not published
    jobs = {j["job_name"]: j for j in load("deploy/prometheus/prometheus.yml")["scrape_configs"]}
    (sd,) = jobs["rendition"]["dns_sd_configs"]
    assert sd["port"] == port and sd["names"] == ["rendition"]  # every replica, by DNS service discovery
    assert svc["read_only"] is True
    assert "RENDITION_KERNEL_DIR" not in env and any(t.startswith("/tmp:") for t in svc["tmpfs"])  # kernels built into the image
    assert env["RENDITION_CORS_ORIGINS"] == "${RENDITION_CORS_ORIGINS:-}"  # CORS off unless set


def test_replicas_stack_load_balances_with_health_checks_and_safe_retries():
    files = [load("docker-compose.yml"), load("deploy/compose/replicas.yml")]
    lb = files[1]["services"]["lb"]
    assert "./deploy/compose/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in lb["volumes"]
    assert files[1]["services"]["rendition"]["deploy"]["replicas"] == "${RENDITION_REPLICAS:-3}"
    cfg = (ROOT / "deploy/compose/haproxy.cfg").read_text()
    assert "option httpchk GET /health/ready" in cfg and "http-check expect status 200" in cfg
    assert re.search(r"server-template rendition \d+ rendition:8000", cfg)  # DNS discovery of every replica
    retry_on = re.search(r"^\s+retry-on (.+)$", cfg, re.M).group(1).split()
    assert {"conn-failure", "empty-response"} <= set(retry_on)
    # L7 retries only for the idempotent routes (all of them today) and GET/HEAD
    acl = set(re.search(r"^\s+acl idempotent_post path (.+)$", cfg, re.M).group(1).split())
    assert "http-request disable-l7-retry if METH_POST !idempotent_post" in cfg
    paths = create_app(Settings(models=[])).openapi()["paths"]
    posts = {path for path, ops in paths.items() if set(ops) - {"get", "head"}}  # POST, PUT, ... routes
    assert posts == {
        "/v1/translate", "/translate", "/detect", "/translate_file", "/v1/embeddings", "/v1/similarity",
        "/", "/embed", "/similarity", "/rerank", "/tokenize", "/decode",
    }, "a new POST route: is it idempotent?"
    assert acl == posts  # every POST route is retried by the load balancer, and only those


def test_the_drain_deadline_ends_the_shutdown_inside_the_grace_period():
    svc = load("docker-compose.yml")["services"]["rendition"]
    default = lambda v: float(re.fullmatch(r"\$\{\w+:-([\d.]+)\}", v).group(1))  # noqa: E731
    drain, deadline = default(svc["environment"]["RENDITION_DRAIN_SECONDS"]), default(svc["environment"]["RENDITION_DRAIN_DEADLINE_S"])
    grace = float(svc["stop_grace_period"].removesuffix("s"))
    # after SIGTERM: ready=503 for drain, work still running at the deadline answered 503, a 5 s backstop, then exit
    assert drain < deadline and deadline + 5 < grace
    assert Settings(drain_seconds=drain, drain_deadline_s=deadline).drain_deadline_s == deadline
