"""Audit the installed dependencies for known vulnerabilities with pip-audit, failing *clearly*
when the audit could not actually run.

pip-audit reports "No known vulnerabilities found" even when it could not look a single package
up (e.g. behind a PyPI mirror without the JSON/vulnerability API, or with OSV unreachable): every
dependency then carries a ``skip_reason``.  This wrapper reads pip-audit's JSON and exits

    0  every dependency (except the local project) was audited, and none has a known vulnerability
    1  at least one known vulnerability (listed, with the fixed versions)
    2  the audit did not cover the dependencies (service unreachable / packages unknown): NOT a pass

    python scripts/audit_deps.py                 # the current environment, PyPI's advisory service
    python scripts/audit_deps.py --service osv   # the OSV database instead
CI runs it after installing the project (needs ``pip install pip-audit``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

LOCAL = {"rendition"}  # this project: not on PyPI, nothing to audit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--service", choices=["pypi", "osv"], default="pypi")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--min-coverage", type=float, default=0.9, help="share of dependencies that must be audited")
    args = ap.parse_args(argv)
    exe = shutil.which("pip-audit")
    if exe is None:
        print("pip-audit is not installed (pip install pip-audit): audit NOT performed", file=sys.stderr)
        return 2
    cmd = [exe, "--format", "json", "--progress-spinner", "off", "--vulnerability-service", args.service]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"pip-audit timed out after {args.timeout} s: audit NOT performed", file=sys.stderr)
        return 2
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(f"pip-audit failed (exit {proc.returncode}): audit NOT performed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return 2
    deps = [d for d in report["dependencies"] if d["name"] not in LOCAL]
    skipped = [d for d in deps if "skip_reason" in d]
    audited = [d for d in deps if "skip_reason" not in d]
    vulnerable = [d for d in audited if d.get("vulns")]
    print(f"pip-audit ({args.service}): {len(deps)} dependencies, {len(audited)} audited, {len(skipped)} skipped, "
          f"{len(vulnerable)} with known vulnerabilities")
    for d in vulnerable:
        for v in d["vulns"]:
            print(f"  {d['name']} {d['version']}: {v['id']} (fixed in {', '.join(v.get('fix_versions', [])) or 'no fix yet'})")
    if vulnerable:
        return 1
    if not deps or len(audited) / len(deps) < args.min_coverage:
        print(f"only {len(audited)} of {len(deps)} dependencies could be audited "
              f"(e.g. {skipped[0]['skip_reason'] if skipped else '-'}): audit NOT performed, this is not a pass",
              file=sys.stderr)
        return 2
    print("no known vulnerabilities")
    return 0


if __name__ == "__main__":
    sys.exit(main())
