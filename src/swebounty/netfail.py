"""Network failures: does a test's failure text say it failed for want of the network?

Grading is offline: the sandbox has no network but its own loopback, and never will. A
dataset's PASS_TO_PASS lists were computed where its authors had the internet, so a test that
reaches a remote host fails here for every patch. baseline.py's default `network` policy
excuses such a test when its run on the unpatched base failed with one of the signatures below.

The classifier is small and conservative: when unsure, it says "not network". What counts:

- **DNS failing** for a host that is not the machine itself: `EAI_AGAIN` / `ENOTFOUND`
  (Node's getaddrinfo), glibc's "Temporary failure in name resolution", "Name or service not
  known", "No address associated with hostname", BSD's "nodename nor servname provided",
  urllib3 2's `NameResolutionError`, curl's and git's "Could not resolve host".
- **No route**: "Network is unreachable" / `ENETUNREACH`, "No route to host" / `EHOSTUNREACH`
  (what connecting to a literal remote address gives without a network).
- **A refused connection to a remote host**: Node's `connect ECONNREFUSED 1.2.3.4:80`, or
  requests/urllib3's `HTTPConnectionPool(host='example.org', ...)` with `NewConnectionError` /
  "Failed to establish a new connection". Refused by the loopback (`localhost`, `127.*`,
  `::1`) is a local server that did not start: never network. `Max retries exceeded` or
  `urlopen error` alone name no cause: they count only with one of the causes above.

What does not count, on purpose: timeouts (`ETIMEDOUT`, a read timeout: a slow test, or one
that waited on a local server), `ECONNRESET`, "socket hang up", a download tool's own failure
("Electron failed to install correctly": the environment lacks a binary, which is a build
defect, not the offline rule), and any text that merely mentions a connection.
"""

from __future__ import annotations

import re

MAX_EVIDENCE = 200  # characters of failure text kept to show why a test was excused

_LOOPBACK = re.compile(
    r"^(?:localhost|.*\.localhost|127(?:\.\d{1,3}){3}|::1?|0\.0\.0\.0|::ffff:127(?:\.\d{1,3}){3})$",
    re.IGNORECASE,
)
# Signatures that name no host: the resolver or the routing table failed, never the loopback.
_UNCONDITIONAL = re.compile(
    r"\bEAI_AGAIN\b|Temporary failure in name resolution|Name or service not known|"
    r"No address associated with hostname|nodename nor servname provided|"
    r"Network is unreachable|\bENETUNREACH\b|No route to host|\bEHOSTUNREACH\b"
)
# Signatures that name the host they failed on: network only when it is not the loopback.
_WITH_HOST = [
    re.compile(r"\bgetaddrinfo ENOTFOUND (?P<host>[\w.:-]+)"),
    re.compile(r"\bNameResolutionError\b.*?Failed to resolve '(?P<host>[^']+)'", re.DOTALL),
    re.compile(r"Could not resolve host: (?P<host>[\w.:-]+)"),
    re.compile(r"\bconnect ECONNREFUSED \[?(?P<host>[\w.:-]+?)\]?:\d+\b(?!:)"),
    re.compile(
        r"ConnectionPool\(host='(?P<host>[^']+)', port=\d+\): Max retries exceeded"
        r"[^\n]*?(?:NewConnectionError|Failed to establish a new connection)"
    ),
]


def network_evidence(text: str) -> str:
    """The part of a test's failure text that says the network was unavailable (an excerpt
    of at most MAX_EVIDENCE characters around the signature), or "" when it does not say so."""
    found = _UNCONDITIONAL.search(text)
    if found is None:
        for pattern in _WITH_HOST:
            for match in pattern.finditer(text):
                if not is_loopback(match.group("host")):
                    found = match
                    break
            if found is not None:
                break
    if found is None:
        return ""
    return _excerpt(text, found.start(), found.end())


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, brackets and a trailing dot allowed) is this
    machine's own loopback, which the sandbox keeps."""
    return bool(_LOOPBACK.match(host.strip("[]").rstrip(".")))


def _excerpt(text: str, start: int, end: int) -> str:
    """The line(s) holding text[start:end], cut to MAX_EVIDENCE characters around it."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if line_end - line_start > MAX_EVIDENCE:
        room = max(0, MAX_EVIDENCE - (end - start)) // 2
        line_start = max(line_start, start - room)
        line_end = min(line_end, line_start + MAX_EVIDENCE)
    return " ".join(text[line_start:line_end].split())


_SECTION = re.compile(r"^_{3,} (?:ERROR at \w+ of )?(.+?) _{3,}$", re.MULTILINE)


def pytest_sections(output: str) -> dict[str, str]:
    """pytest's report sections by test name (`Class.test_x[param]`), from its console output:
    where a failed test's captured output and traceback are, beyond its one-line message."""
    heads = list(_SECTION.finditer(output))
    ends = [h.start() for h in heads[1:]] + [len(output)] * bool(heads)
    sections: dict[str, str] = {}
    for head, end in zip(heads, ends, strict=True):
        sections[head.group(1)] = sections.get(head.group(1), "") + output[head.end() : end]
    return sections


def section_name(test_id: str) -> str:
    """The name pytest gives a test's report section: its id without the file."""
    return ".".join(test_id.split("::")[1:])
