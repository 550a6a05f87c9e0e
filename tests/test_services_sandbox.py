"""A test service end to end: a small repository named like one that declares httpbin (the
shipped overrides.toml's psf/requests entry), graded through the real evaluation path and
sandbox (`network`: the environments, the task's and httpbin's, come from the package index).

In the sandbox the tests reach the local httpbin through $HTTPBIN_URL and still cannot reach
the internet; the verdict names the service and its version; the empty patch still fails; and
a submission that ships its own `httpbin` and `gunicorn` modules and forces an install step
(whose leftovers the runner kills) neither replaces the service nor stops it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from repo_helpers import WHEN, diff_of, git, git_repo
from swebounty.cli import app
from swebounty.envs.interpreters import discover
from swebounty.sandbox import bwrap_available
from swebounty.services.catalog import load_catalog
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
# The service runs on its own interpreter (catalog.toml), which an ordinary user's machine may
# lack (root's pyenv is not theirs): the harness then says so in an `error` verdict.
HTTPBIN = load_catalog().get("httpbin")
SERVICE_PYTHON = HTTPBIN.python
needs_service_python = pytest.mark.skipif(
    HTTPBIN.interpreter(discover()) is None,
    reason=f"no Python {SERVICE_PYTHON} here, the httpbin service's interpreter "
    f"(pyenv install {SERVICE_PYTHON}, or uv python install {SERVICE_PYTHON})",
)

TESTS = """\
    import json
    import os
    import socket
    import ssl
    import time
    import urllib.request

    import pytest

    from proj.a import double

    HTTPBIN = os.environ.get("HTTPBIN_URL", "http://httpbin.org/")
    LOCAL = "http://127.0.0.1:47080/"  # the service itself, behind the stand-in hosts


    def test_fixed():
        assert double(3) == 6


    def test_httpbin():
        assert HTTPBIN == "http://httpbin.org/"  # the tests' own default: the stand-in host
        for url in (HTTPBIN, LOCAL):
            with urllib.request.urlopen(url + "get?x=1", timeout=20) as answer:
                body = json.load(answer)
            assert body["args"] == {"x": "1"}
            assert body["url"].startswith(url)


    def test_no_internet():  # names nothing stands in for resolve to nothing
        for host, port in (("example.com", 80), ("pypi.org", 443), ("google.co.uk", 80)):
            with pytest.raises(OSError):
                socket.create_connection((host, port), timeout=5).close()


    def test_stand_in_hosts():  # httpbin's own names (catalog) and requests' extra one
        for url in ("http://httpbin.org/get?x=2", "https://httpbin.org/get?x=2",
                    "http://www.google.co.uk/get?x=2", "https://www.httpbin.org/get?x=2"):
            with urllib.request.urlopen(url, timeout=20) as answer:  # trusts $SSL_CERT_FILE
                assert json.load(answer)["args"] == {"x": "2"}, url
        assert socket.gethostbyname("www.google.co.uk") == "127.0.0.1"
        context = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])
        with urllib.request.urlopen("https://httpbin.org/get", context=context) as answer:
            assert answer.status == 200
        with pytest.raises(OSError):  # the certificate names the stand-in hosts only
            urllib.request.urlopen("https://localhost/get", context=context, timeout=20)


    def test_certifi_trusts_the_stand_ins():  # requests' Session.send verifies against it
        import certifi

        with open(certifi.where(), "rb") as f:
            bundle = f.read()
        with open(os.environ["SSL_CERT_FILE"], "rb") as f:
            assert bundle.endswith(f.read()) and bundle.count(b"BEGIN CERTIFICATE") > 10
        context = ssl.create_default_context(cafile=certifi.where())
        with urllib.request.urlopen("https://httpbin.org/get", context=context) as answer:
            assert answer.status == 200


    def test_the_ca_key_is_out_of_reach():
        folder = os.path.dirname(os.environ["SSL_CERT_FILE"])
        assert sorted(os.listdir(folder)) == ["ca.pem", "cert.pem", "key.pem"]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem"))
        with pytest.raises(ssl.SSLError):  # the one key in reach is the server's, not the CA's
            context.load_cert_chain(os.path.join(folder, "ca.pem"), os.path.join(folder, "key.pem"))


    def test_https_to_the_plain_port_fails_at_once():  # as requests' mixed-case scheme test
        start = time.monotonic()
        with pytest.raises(OSError):
            urllib.request.urlopen(LOCAL.replace("http:", "https:") + "get", timeout=60)
        assert time.monotonic() - start < 30
"""
F2P = ["tests/test_a.py::test_fixed"]
P2P = ["tests/test_a.py::test_httpbin", "tests/test_a.py::test_no_internet",
       "tests/test_a.py::test_https_to_the_plain_port_fails_at_once",
       "tests/test_a.py::test_stand_in_hosts", "tests/test_a.py::test_the_ca_key_is_out_of_reach",
       "tests/test_a.py::test_certifi_trusts_the_stand_ins"]  # fmt: skip
FORGED_APP = """\
import json


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"args": {"x": "forged"}, "url": ""}).encode()]
"""


@pytest.fixture(scope="module")
def requests_like(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("services")
    files = {
        "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\n'
        'requires-python = ">=3.8"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
        "proj/__init__.py": "",
        "proj/a.py": "def double(x):\n    return x + 2\n",
        "tests/__init__.py": "",
    }
    repo = git_repo(root / "repos" / "psf__requests", files, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    gold = diff_of(repo, {"proj/a.py": "def double(x):\n    return x * 2\n"})
    # The gold fix, plus modules named like the service's, at the workspace's top (where
    # `python -m` and gunicorn would look first), and a packaging change: a real install step.
    hostile = diff_of(repo, {
        "proj/a.py": "def double(x):\n    return x * 2\n",
        "httpbin.py": FORGED_APP,
        "gunicorn/__init__.py": "raise SystemExit('the workspace is not the service')\n",
        "pyproject.toml": files["pyproject.toml"].replace('"0.1"', '"0.2"'),
    })  # fmt: skip
    test_patch = diff_of(repo, {"tests/test_a.py": TESTS})
    record = {"repo": "psf/requests", "base_commit": base, "instance_id": "psf__requests-1",
              "problem_statement": "double adds", "patch": gold, "test_patch": test_patch,
              "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
              "created_at": "2024-03-01T12:00:00Z"}  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    preds = root / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "psf__requests-1", "model_name_or_path": "hostile",
                                 "model_patch": hostile}) + "\n")  # fmt: skip
    return {"root": root, "dataset": dataset, "preds": preds, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip


def _evaluate(small: dict[str, Any], subs: Any, run_id: str) -> Verdict:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(small["dataset"], subs, run_id=run_id, repos_dir=small["repos"],
                        cache_dir=small["cache"], runs_dir=small["runs"])  # fmt: skip
    assert len(verdicts) == 1
    return verdicts[0]


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
@needs_service_python
def test_tests_reach_the_local_httpbin_and_not_the_internet(requests_like: dict[str, Any]) -> None:
    gold = _evaluate(requests_like, "gold", "gold")
    assert gold.status == "resolved", gold.reason
    assert not gold.excused_tests  # nothing failed: no network excuse was needed
    assert [(s.name, s.version) for s in gold.services] == [("httpbin", "0.10.2")]
    use = gold.services[0]
    assert use.env["HTTPBIN_URL"] == "http://httpbin.org/"  # hosts_env: the stand-in host
    assert use.url == "http://127.0.0.1:47080/"
    assert len(use.trusted) == 1 and use.trusted[0].endswith("certifi/cacert.pem")
    assert use.env["SSL_CERT_FILE"] == use.env["REQUESTS_CA_BUNDLE"]
    assert use.hosts == ["httpbin.org", "www.httpbin.org", "www.google.co.uk"]
    assert use.host_ports == ["80 http", "443 https"] and not use.missing
    assert "httpbin==0.10.2" in gold.services[0].packages
    assert gold.log_dir and (Path(gold.log_dir) / "service-httpbin.log").is_file()
    # `envs prune --keep-run` keeps the service's environment with the tests' own
    where = ["--cache-dir", str(requests_like["cache"]), "--runs-dir", str(requests_like["runs"])]
    pruned = CliRunner().invoke(app, ["envs", "prune", "--keep-run", "gold", "--dry-run", *where])
    assert pruned.exit_code == 0, pruned.output
    assert gold.services[0].env_key[:16] not in pruned.output

    empty = _evaluate(requests_like, "empty", "empty")
    assert empty.status == "unresolved"
    statuses = {t.test_id: t.status for t in empty.tests}
    assert statuses == {F2P[0]: "failed", **{t: "passed" for t in P2P}}

    hostile = _evaluate(requests_like, requests_like["preds"], "hostile")
    assert hostile.status == "resolved", hostile.reason  # the real httpbin answered
    output = (Path(hostile.log_dir or "") / "test_output.txt").read_text()
    assert "installing the workspace" in output  # the install step ran, and its clean-up
