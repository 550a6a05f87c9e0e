"""One verdict of real_tasks.py as a row: its status under each base-failures policy, its
tests, pytest's own time, and whether a gold miss was only the sandbox's lack of a network."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from swebounty.baseline import POLICIES, status_under
from swebounty.netfail import network_evidence, pytest_sections, section_name
from swebounty.verdicts import Verdict


def junit_seconds(path: Path) -> float | None:
    """pytest's own time for the run (the top testsuite's `time`)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    try:
        return round(sum(float(s.get("time", "0")) for s in suites), 2)
    except ValueError:
        return None


def verdict_row(v: Verdict | None) -> dict[str, Any]:
    if v is None:
        return {"status": None}
    f2p = [t for t in v.tests if t.expected == "FAIL_TO_PASS"]
    p2p = [t for t in v.tests if t.expected == "PASS_TO_PASS"]
    junit = Path(v.log_dir or "") / "junit.xml"
    return {
        "status": v.status,
        "f2p_passed": sum(t.status == "passed" for t in f2p),
        "f2p": len(f2p),
        "p2p_passed": sum(t.status == "passed" for t in p2p),
        "p2p": len(p2p),
        "seconds": round(v.seconds or 0.0, 2),
        "pytest_seconds": junit_seconds(junit),
        "reason": v.reason if v.status != "resolved" else None,
        "log_dir": v.log_dir,
        "network": v.status == "unresolved" and needs_network(v),
        # The status under the run's policy and each narrower one; the tests it excused.
        "policies": {
            p: status_under(v, p) for p in POLICIES[: POLICIES.index(v.base_failures) + 1]
        },
        "excused": [
            {"test_id": e.test_id, "base_status": e.base_status, "network": e.network}
            for e in v.excused_tests
        ],
    }


def needs_network(v: Verdict) -> bool:
    """Every expected test that did not pass failed reaching the network (its message or its
    section of the output says so): the miss is the sandbox's lack of one, not the patch's."""
    missed = [t for t in v.tests if t.status != "passed"]
    if not missed:
        return False
    try:
        output = (Path(v.log_dir or "") / "test_output.txt").read_text(errors="replace")
    except OSError:
        output = ""
    sections = pytest_sections(output)
    for t in missed:
        if not network_evidence(
            (t.message or "") + "\n" + sections.get(section_name(t.test_id), "")
        ):
            return False
    return True
