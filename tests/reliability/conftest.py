"""Fixtures for the reliability tests: the service tests' random models and real uvicorn
servers (``tests/service/conftest.py``, loaded under its own module name so both conftests
coexist), plus ``scripts/`` on the path for the load generator and the soak driver."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

_spec = importlib.util.spec_from_file_location("service_test_fixtures", ROOT / "tests" / "service" / "conftest.py")
fixtures = importlib.util.module_from_spec(_spec)
sys.modules["service_test_fixtures"] = fixtures
_spec.loader.exec_module(fixtures)

# re-exported fixtures (pytest collects them from this module's namespace)
model_dirs = fixtures.model_dirs
start_server = fixtures.start_server
Server = fixtures.Server
server_env = fixtures.server_env
