"""The network-failure classifier (netfail.py): what counts as "failed for want of the network".

Texts are the shapes real runs print in a sandbox without a network (Node's getaddrinfo and
connect errors, glibc's resolver messages through Python, requests/urllib3's wrapping, curl
and git), and the near misses that must not count: a local server that did not start, a
timeout, an assertion that merely mentions a connection, a binary a build could not fetch.
"""

from __future__ import annotations

import pytest

from swebounty.netfail import (
    MAX_EVIDENCE,
    is_loopback,
    network_evidence,
    pytest_sections,
    section_name,
)

NETWORK = [
    # Node: axios's `should not fail with query parsing` requests postman-echo.com.
    ("Error: getaddrinfo EAI_AGAIN postman-echo.com", "EAI_AGAIN postman-echo.com"),
    ("Error: getaddrinfo ENOTFOUND registry.example.org\n    at GetAddrInfoReqWrap", "ENOTFOUND"),
    ("Error: connect ENETUNREACH 203.0.113.1:80 - Local (0.0.0.0:0)", "ENETUNREACH"),
    ("Error: connect EHOSTUNREACH 10.0.0.7:443", "EHOSTUNREACH"),
    ("Error: connect ECONNREFUSED 93.184.216.34:443", "ECONNREFUSED 93.184.216.34"),
    # Python: the resolver and the routing table.
    ("socket.gaierror: [Errno -3] Temporary failure in name resolution", "name resolution"),
    ("socket.gaierror: [Errno -2] Name or service not known", "Name or service not known"),
    ("gaierror: [Errno -5] No address associated with hostname", "No address associated"),
    ("OSError: [Errno 101] Network is unreachable", "Network is unreachable"),
    ("nodename nor servname provided, or not known", "nodename nor servname"),
    ("<urlopen error [Errno -3] Temporary failure in name resolution>", "urlopen error"),
    # requests-3362's connect-timeout tests: a literal address, no route.
    (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.255.255.1', port=80): "
        "Max retries exceeded with url: / (Caused by NewConnectionError('<urllib3.connection."
        "HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 101] "
        "Network is unreachable'))",
        "Network is unreachable",
    ),
    # A remote host named in urllib3's message, refused (a network that refuses).
    (
        "ConnectionError: HTTPSConnectionPool(host='httpbin.org', port=443): Max retries "
        "exceeded with url: /get (Caused by NewConnectionError('<...>: Failed to establish a "
        "new connection: [Errno 111] Connection refused'))",
        "host='httpbin.org'",
    ),
    (
        "urllib3.exceptions.NameResolutionError: <urllib3.connection.HTTPSConnection object>: "
        "Failed to resolve 'www.python.org' ([Errno -3] Lookup timed out)",
        "NameResolutionError",
    ),
    (
        "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
        "git",
    ),
]


@pytest.mark.parametrize(("text", "about"), NETWORK, ids=[a for _, a in NETWORK])
def test_network_unavailable_signatures_are_recognized(text: str, about: str) -> None:
    evidence = network_evidence(text)
    assert evidence, text
    assert len(evidence) <= MAX_EVIDENCE and evidence in " ".join(text.split())


NOT_NETWORK = [
    "AssertionError: expected connection to be closed, got 'open'",
    "AssertionError: assert 'connection refused' in message",  # a message the test expects
    "Error: connect ECONNREFUSED 127.0.0.1:8080",  # the test's own server did not start
    "Error: connect ECONNREFUSED ::1:3000",
    "Error: getaddrinfo ENOTFOUND localhost",
    "ConnectionError: HTTPConnectionPool(host='localhost', port=7777): Max retries exceeded "
    "with url: / (Caused by NewConnectionError('<...>: Failed to establish a new connection: "
    "[Errno 111] Connection refused'))",
    "<urlopen error [Errno 111] Connection refused>",  # no host, no resolver: not known
    "ReadTimeoutError: HTTPConnectionPool(host='example.org', port=80): Read timed out.",
    "Max retries exceeded with url: /status (Caused by ProxyError('Cannot connect to proxy.'))",
    "Error: connect ETIMEDOUT 10.0.0.1:443",  # a timeout: slow, or waiting; not said
    "Error: socket hang up",
    "Error: read ECONNRESET",
    # insomnia's suites: electron's binary was never downloaded (an environment defect).
    "Test suite failed to run\n\n    Electron failed to install correctly, please delete "
    "node_modules/electron and try installing it again",
    "TypeError: Cannot read properties of undefined (reading 'network')",
    "",
]


@pytest.mark.parametrize("text", NOT_NETWORK)
def test_near_misses_are_not_network(text: str) -> None:
    assert network_evidence(text) == ""


def test_evidence_is_an_excerpt_around_the_signature_in_a_long_message() -> None:
    text = "x" * 5000 + " getaddrinfo EAI_AGAIN postman-echo.com " + "y" * 5000
    evidence = network_evidence(text)
    assert "EAI_AGAIN" in evidence and len(evidence) <= MAX_EVIDENCE
    # The second of two urllib3 hosts is the remote one: it is the one found.
    two = (
        "HTTPConnectionPool(host='localhost', port=7777): Max retries exceeded (Caused by "
        "NewConnectionError: [Errno 111] Connection refused)\n"
        "HTTPSConnectionPool(host='w3.org', port=443): Max retries exceeded (Caused by "
        "NewConnectionError: [Errno 111] Connection refused)"
    )
    assert "w3.org" in network_evidence(two)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True),
     ("[::1]", True), ("app.localhost", True), ("0.0.0.0", True), ("localhost.", True),
     ("10.255.255.1", False), ("postman-echo.com", False), ("localhost.example.org", False),
     ("1270.0.0.1", False)],
)  # fmt: skip
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_pytest_sections_find_a_test_s_traceback_by_its_id() -> None:
    output = (
        "===== FAILURES =====\n"
        "_____ test_latex_images _____\n"
        "WARNING: Could not fetch remote image: https://www.python.org/logo.png "
        "[Temporary failure in name resolution]\n"
        "E   AssertionError: assert '\\\\sphinxincludegraphics' in result\n"
        "_____ TestX.test_y[a-b] _____\n"
        "E   assert 1 == 2\n"
    )
    sections = pytest_sections(output)
    latex = sections[section_name("tests/test_build_latex.py::test_latex_images")]
    assert network_evidence(latex)
    assert not network_evidence(sections[section_name("tests/t.py::TestX::test_y[a-b]")])
