"""The harness's side of the guarded test run: how to start it and how to read what it sent.

This directory is mounted read-only into the sandbox; `run_pytest.py` and `swebounty_guard.py`
run there under the task's own interpreter (see their docstrings). The harness gives the
runner a fresh key on stdin and reads one message, authenticated with that key, from the
result channel (sandbox `result_channel`): results never come from a file the sandboxed code
could write or replace.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as DefusedET

from swebounty.diffs import files_in_patch
from swebounty.envs import Environment
from swebounty.integrity import IntegrityError, infra_manifest
from swebounty.patches import head_entries
from swebounty.testing import TestOutcome, pytest_command

GUARD_DIR = Path(__file__).resolve().parent
RUNNER = GUARD_DIR / "run_pytest.py"
UNITTEST_RUNNER = GUARD_DIR / "run_unittest.py"  # unittest-based runners (unittest_guard.py)
MAGIC = b"SWEBOUNTY-RESULT"
MACHINERY = ("_pytest/__init__.py", "pytest/__init__.py", "pytest.py", "pluggy/__init__.py")


@dataclass
class GuardResult:
    """What the guarded run reported."""

    exitstatus: int | None = None
    xml: bytes | None = None
    xml_problem: str | None = None
    # A conftest.py pytest could not import before its session (conftests.py): (path, why).
    unloaded_conftest: tuple[str, str] | None = None
    statuses: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # The guard's own errors (faults.py): it may have stopped recording, so no result is read.
    errors: list[str] = field(default_factory=list)
    infra_restored: list[str] = field(default_factory=list)
    setup_exit: int | None = None
    # unittest-based runs (unittest_guard.py): id -> {"status", "message", "kind", "doc"}
    tests: dict[str, dict[str, str | None]] = field(default_factory=dict)


class ChannelTampered(Exception):
    """The result channel holds bytes the harness's plugin did not write."""


def new_key() -> bytes:
    return secrets.token_hex(32).encode()


def runner_argv(python: str, config_path: Path, runner: Path | None = None) -> list[str]:
    """`-S`: no site at start, so no .pth file or sitecustomize runs before the guard.
    `runner`: its precompiled copy (compiled.py) instead of RUNNER."""
    return [python, "-S", str(runner or RUNNER), str(config_path)]


def split_prefix(prefix: list[str]) -> tuple[str, list[str]]:
    """(interpreter, pytest arguments) of a test command `python [flags] -m pytest [args]`."""
    if "-m" in prefix and prefix.index("-m") + 1 < len(prefix):
        at = prefix.index("-m")
        if prefix[at + 1] in ("pytest", "py.test"):
            return prefix[0], prefix[at + 2 :]
    raise IntegrityError(
        f"the test command {prefix} does not run `python -m pytest`; the harness only grades "
        "pytest runs (set test_cmd to ['python', '-m', 'pytest', ...])"
    )


def read_signed(data: bytes | None, key: bytes, truncated: bool = False) -> dict[str, Any] | None:
    """The one JSON object signed with `key` the channel holds (`MAGIC mac length\n body`),
    as the guards and the JavaScript reporters (node/runners/channel.js) send it; None when
    there is none or it was cut off. Raises ChannelTampered for anything else."""
    if not data:
        return None
    header, newline, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 3 or parts[0] != MAGIC or not newline:
        if MAGIC.startswith(data[: len(MAGIC)]) and b"\n" not in data:
            return None  # cut off in its first line
        raise ChannelTampered(f"the channel starts with {data[:40]!r}, not the runner's header")
    try:
        length = int(parts[2])
    except ValueError as exc:
        raise ChannelTampered(f"bad length in the channel header {header[:80]!r}") from exc
    if len(body) < length:
        if truncated:
            raise ChannelTampered("the runner's message is larger than the channel keeps")
        return None  # the process was killed while writing
    if len(body) > length:
        raise ChannelTampered(f"{len(body) - length} bytes follow the runner's message")
    expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(expected, parts[1]):
        raise ChannelTampered("the message on the channel is not signed with this run's key")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise ChannelTampered(f"the signed message is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise ChannelTampered("the signed message is not a JSON object")
    return payload


def read_channel(data: bytes | None, key: bytes, truncated: bool = False) -> GuardResult | None:
    """The runner's message; None when there is none (the process died before sending, or
    was killed while sending). Raises ChannelTampered for anything not from the runner."""
    payload = read_signed(data, key, truncated)
    if payload is None:
        return None
    xml = payload.get("xml")
    return GuardResult(
        exitstatus=payload.get("exitstatus"),
        xml=bytes.fromhex(xml) if isinstance(xml, str) else None,
        xml_problem=payload.get("xml_problem"),
        unloaded_conftest=_pair(payload.get("unloaded_conftest")),
        statuses={str(k): str(v) for k, v in (payload.get("statuses") or {}).items()},
        problems=[str(p) for p in payload.get("problems") or []],
        errors=[str(e) for e in payload.get("errors") or []],
        infra_restored=[str(p) for p in payload.get("infra_restored") or []],
        setup_exit=payload.get("setup_exit"),
        tests=_tests(payload.get("tests")),
    )


def _pair(value: object) -> tuple[str, str] | None:
    """Two strings the guard sent as a list, or None for anything else."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return None


def _tests(value: object) -> dict[str, dict[str, str | None]]:
    """The unittest guard's records, each field a string (or None), nothing else kept."""
    if not isinstance(value, dict):
        return {}
    fields = ("status", "message", "kind", "doc")
    return {
        str(key): {f: None if entry.get(f) is None else str(entry.get(f)) for f in fields}
        for key, entry in value.items()
        if isinstance(entry, dict)
    }


def write_config(path: Path, config: dict[str, object]) -> None:
    path.write_text(json.dumps(config), encoding="utf-8")


def disagreements(data: bytes, outcomes: dict[str, TestOutcome], seen: dict[str, str]) -> list[str]:
    """Where the XML contradicts `seen`, the statuses the guard recorded from pytest's own
    reports: an XML cannot pass a test pytest saw fail, nor hold fewer failing testcases, nor
    a nameless item pytest never reported."""
    problems = [
        f"the JUnit XML says {node} {outcome.status}, pytest reported it {seen[node]}"
        for node, outcome in outcomes.items()
        if node in seen and outcome.status != seen[node]
    ]
    # A nameless item's id is exactly pytest's node id (testing._nameless_node): one pytest
    # never reported did not run, whatever the XML says.
    problems += [
        f"the JUnit XML holds {node} ({outcome.status}), a test pytest never reported"
        for node, outcome in outcomes.items()
        if node.endswith("::") and node not in seen
    ]
    bad_seen = sum(1 for s in seen.values() if s in ("failed", "error"))
    root = DefusedET.fromstring(data, forbid_dtd=True)
    bad_cases = sum(
        1
        for c in root.iter("testcase")
        if c.find("failure") is not None or c.find("error") is not None
    )
    if bad_cases < bad_seen:
        problems.append(
            f"the JUnit XML holds {bad_cases} failing testcases, pytest reported {bad_seen}"
        )
    return problems[:10]


def runner_config(
    patch: str,
    env: Environment,
    workspace: Path,
    test_paths: list[str],
    reverted: list[str],
    test_files: list[str],
    junit: str,
    ignore: list[str] | None = None,
) -> dict[str, object]:
    """What run_pytest.py needs besides the key: written to a file the sandbox reads only.
    `reverted`: the infrastructure put back to the base's; `junit`: where pytest writes;
    `test_files` (the paths pytest is handed) and `ignore`: dataitems.pytest_targets'."""
    # A project that is pytest (or pluggy) tests itself with its own code, as in its base.
    roots = {".", "src", *(env.project.roots if env.project else [])}
    wanted = {("" if r == "." else f"{r}/") + m: r for r in roots for m in MACHINERY}
    found = head_entries(workspace, sorted(wanted))
    # "src/_pytest/__init__.py" -> the package "src/_pytest"; "pytest.py" -> itself
    own = [p.removesuffix("/__init__.py") for p in found]
    kept = set(reverted) | set(test_paths)
    untrusted = [
        str(workspace / p)
        for p in files_in_patch(patch)
        if p not in kept and not any(p == o or p.startswith(o + "/") for o in own)
    ]
    return {
        "workspace": str(workspace),
        "infra": infra_manifest(workspace),
        "self_hosted": bool(own),
        "untrusted_files": untrusted,
        "junit": junit,
        "args": pytest_command([], test_files, Path(junit), ignore=ignore or []),
    }
