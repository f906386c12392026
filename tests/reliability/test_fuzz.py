"""Schemathesis (v4) against the service's own OpenAPI schema, served by a real uvicorn process.

The ``schemathesis run`` CLI (its pytest plugin does not load under pytest 9) generates requests
for every operation in ``/openapi.json``, both valid per the schema and invalid ones (``--mode
all``), over its examples, coverage and fuzzing phases, and checks every response: no 5xx, a
status code the schema documents, a documented content type and headers, a body that matches the
documented schema, and invalid data rejected with a 4xx.  Independently, the server's own
``rendition_requests_total`` counter must show the cases arrived and that none got a 5xx.

The server runs small random models with tight limits (``max_length`` <= 8, beam <= 2, 4 texts of
<= 200 characters, 20 kB bodies), so model calls are cheap and the validation paths get the time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

LIMITS = dict(
    default_max_length=4, default_beam_size=1, max_length_limit=8, max_beam_size=2, max_items=4, max_queue=64,
    max_text_chars=200, max_body_bytes=20_000, max_wait_ms=1,
)
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance," \
         "response_schema_conformance,negative_data_rejection"
MIN_CASES = 1000


def requests_by_status(server) -> dict[str, float]:
    fam = server.metrics()["rendition_requests"]
    out: dict[str, float] = {}
    for s in fam.samples:
        if s.name == "rendition_requests_total":
            out[s.labels["status"]] = out.get(s.labels["status"], 0) + s.value
    return out


@pytest.mark.slow
def test_schemathesis_every_operation(start_server, tmp_path: Path):
    server = start_server(**LIMITS)
    before = requests_by_status(server)
    cmd = [
        str(Path(sys.executable).with_name("schemathesis")), "run", server.url + "/openapi.json",
        "--checks", CHECKS, "--mode", "all", "--max-examples", "180", "--seed", "20261122",
        "--request-timeout", "30", "--continue-on-failure", "--no-color",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    (tmp_path / "schemathesis.txt").write_text(out)
    m = re.search(r"(\d+) generated, (\d+) (?:passed|found)", out)
    assert m, out[-3000:]
    generated = int(m.group(1))
    summary = out[out.find("SUMMARY"):] if "SUMMARY" in out else out[-3000:]
    print(f"\nschemathesis: {generated} generated cases\n{summary}")
    assert proc.returncode == 0, out[-6000:]
    assert "passed" in m.group(0) and int(m.group(2)) == generated
    assert generated >= MIN_CASES
    after = requests_by_status(server)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    print("server-side requests by status:", dict(sorted(delta.items())))
    assert sum(delta.values()) >= MIN_CASES
    assert not any(k.startswith("5") and v for k, v in delta.items()), delta
    assert delta.get("200", 0) > 0 and delta.get("422", 0) > 0  # valid and invalid requests both arrived
    assert server.http.get("/health/ready").status_code == 200  # still healthy after the barrage
