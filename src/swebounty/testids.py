"""How SWE-bench's test ids (FAIL_TO_PASS/PASS_TO_PASS) are matched to the tests that ran.

Datasets name tests as their logs printed them: exact pytest node ids, ids relative to another
root, ids cut at a space, bare or dotted function names, unittest-style ids, shortened path
parameters. `match_results` turns each into an outcome of the JUnit nodes it names (testing.py
reads those), "missing" when none ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from swebounty.testing import MESSAGE_CHARS, SEVERITY, TestOutcome


@dataclass(frozen=True)
class _Node:
    key: str
    file: str
    rest: str  # everything after the file: Class::test[params]

    @property
    def name(self) -> str:
        """The test's own name with its parameters (`test_p[a::b]`)."""
        return _parts(self.rest)[-1]

    @property
    def function(self) -> str:
        return self.name.split("[", 1)[0]

    @property
    def classes(self) -> list[str]:
        return _parts(self.rest)[:-1]


def _parts(rest: str) -> list[str]:
    """`Class::test[params]` split at `::`, but never inside the parameters: those are free
    text (`test_parse[NULL::INT AS x]`, sqlfluff's ids) and may contain `::` themselves."""
    head, bracket, params = rest.partition("[")
    parts = head.split("::")
    parts[-1] += bracket + params
    return parts


def _has_file(test_id: str) -> bool:
    return "::" in test_id.partition("[")[0]


_UNITTEST_ID = re.compile(r"^(?P<method>\w+) \((?P<dotted>[\w.]+)\)$")


def match_results(
    expected: Iterable[str], outcomes: dict[str, TestOutcome]
) -> dict[str, TestOutcome]:
    """An outcome for every expected id; "missing" when no test that ran matches it.

    Rules, tried in order; the first that finds anything decides:
    1. the exact pytest node id;
    2. a node id whose file is given relative to another root (`a/tests/t.py` vs `tests/t.py`);
    3. an id cut at its first space, as SWE-bench logs leave them (`t.py::test_p[a` for
       `t.py::test_p[a b]`): every node id that continues the id with whitespace;
    4. an id without parameters (`t.py::test_p`, or bare `test_p`): all its parametrized nodes;
    5. a bare function name as in sympy's dataset (`test_foo`, `test_foo[1]`) or a dotted one
       (`Class.test_foo`, `module.Class.test_foo`): every node it names, in any file;
    6. unittest style (`test_m (pkg.module.Class)`, also `(pkg.module.Class.test_m)`);
    7. parameters that are an absolute path, shortened to `/basename` as SWE-bench's parser of
       pylint's and requests' logs leaves them (`test_stdin[/mymodule.py]` for
       `test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]`);
    8. a duplicated parameter id numbered as pytest 8 numbers it (`test_u[1234-1234_0]`) for
       one numbered by an older pytest (`test_u[1234-12340]`).
    An id that cannot name a test (`[100%]`: pytest's progress column, read as a name by
    SWE-bench's log parser) is not graded: it is reported as passed, with a message saying so.
    When one id matches several nodes, all must pass: the worst status stands for them and the
    message names the nodes that did not pass. An id whose file failed to import is "error".
    """
    # Every rule keeps the function name, so only nodes of that function need a look.
    by_function: dict[str, list[_Node]] = {}
    for key in outcomes:
        if "::" in key:
            node = _Node(key, *key.split("::", 1))
            by_function.setdefault(node.function, []).append(node)
    broken = {key: o for key, o in outcomes.items() if "::" not in key and o.status == "error"}
    results: dict[str, TestOutcome] = {}
    for test_id in expected:
        if test_id in outcomes:
            results[test_id] = outcomes[test_id]
            continue
        if test_id.startswith("["):
            results[test_id] = TestOutcome("passed", "not a test id (a log parser's artifact)")
            continue
        keys = _matching_keys(test_id, by_function.get(_function_of(test_id), []))
        if keys:
            results[test_id] = _aggregate({k: outcomes[k] for k in keys})
        else:
            results[test_id] = _never_ran(test_id, broken)
    return results


def _function_of(test_id: str) -> str:
    unittest_id = _UNITTEST_ID.match(test_id)
    if unittest_id:
        return unittest_id["method"]
    rest = test_id.split("::", 1)[1] if _has_file(test_id) else test_id
    return _parts(rest)[-1].split("[", 1)[0].split(".")[-1]


def _matching_keys(test_id: str, nodes: list[_Node]) -> list[str]:
    unittest_id = _UNITTEST_ID.match(test_id)
    if unittest_id:
        return _unittest_keys(unittest_id["method"], unittest_id["dotted"], nodes)
    has_file = _has_file(test_id)
    if has_file:
        file, rest = test_id.split("::", 1)
        nodes = [n for n in nodes if _same_file(file, n.file)]
    else:
        rest = test_id
    if not rest and not has_file:
        # A bare empty id names no test; it would match every nameless item (`file::`).
        return []
    rules = (_same_rest, _continues_after_space, _parametrized_of, _path_param_shortened)
    for rule in (*rules, _pytest8_duplicate):
        keys = [n.key for n in nodes if rule(rest, n, has_file)]
        if keys:
            return keys
    return []


def _same_rest(rest: str, node: _Node, has_file: bool) -> bool:
    if has_file:
        return node.rest == rest
    # Bare or dotted: compare with the node's own name, or its dotted module.Class.name.
    dotted = node.file[:-3].replace("/", ".") + "." + ".".join(_parts(node.rest))
    return node.name == rest or dotted.endswith("." + rest)


def _continues_after_space(rest: str, node: _Node, has_file: bool) -> bool:
    full = node.rest if has_file else node.name
    return len(full) > len(rest) and full.startswith(rest) and full[len(rest)].isspace()


def _parametrized_of(rest: str, node: _Node, has_file: bool) -> bool:
    if "[" not in node.rest or "[" in rest:
        return False
    bare = node.rest.split("[", 1)[0]
    return bare == rest if has_file else _same_rest(rest, _Node(node.key, node.file, bare), False)


def _path_param_shortened(rest: str, node: _Node, has_file: bool) -> bool:
    """SWE-bench's `parse_log_pytest_options`: the id as the log line's second word, and a
    parameter string that starts with one `/` (and has no `*`) cut to `/` + its last part."""
    full = (node.rest if has_file else node.name).split(None, 1)[0]
    found = re.match(r"(.*?)\[(.*)\]", full)
    if not found or "[" not in rest:
        return False
    head, params = found.groups()
    if not params.startswith("/") or params.startswith("//") or "*" in params:
        return False
    return rest == f"{head}[/{params.rsplit('/', 1)[-1]}]"


def _pytest8_duplicate(rest: str, node: _Node, has_file: bool) -> bool:
    """pytest 8 separates the index it appends to a duplicated id ending in a digit with `_`."""
    found = re.fullmatch(r"(.*\[.*\d)_(\d+)\]", rest)
    full = node.rest if has_file else node.name
    return found is not None and full == f"{found.group(1)}{found.group(2)}]"


def _unittest_keys(method: str, dotted: str, nodes: list[_Node]) -> list[str]:
    parts = dotted.split(".")
    if len(parts) > 1 and parts[-1] == method:
        parts = parts[:-1]  # Python 3.11+ writes `test_m (module.Class.test_m)`
    cls, module = parts[-1], ".".join(parts[:-1])
    keys = []
    for node in nodes:
        node_module = node.file[:-3].replace("/", ".")
        if node.function != method or not node.classes or node.classes[-1] != cls:
            continue
        if not module or node_module == module or node_module.endswith("." + module):
            keys.append(node.key)
    return keys


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _aggregate(found: dict[str, TestOutcome]) -> TestOutcome:
    if len(found) == 1:
        return next(iter(found.values()))
    bad = {k: o for k, o in found.items() if o.status != "passed"}
    if not bad:
        return TestOutcome("passed")
    worst = max(bad.values(), key=lambda o: SEVERITY[o.status])
    listed = "; ".join(f"{k}: {o.status}" for k, o in list(bad.items())[:5])
    more = f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""
    message = f"{len(bad)} of {len(found)} matching tests did not pass: {listed}{more}"
    return TestOutcome(worst.status, message[:MESSAGE_CHARS])


def _never_ran(test_id: str, broken: dict[str, TestOutcome]) -> TestOutcome:
    file = test_id.split("::", 1)[0] if _has_file(test_id) else None
    for path, outcome in broken.items():
        if file is not None and _same_file(file, path):
            return TestOutcome(
                "error", f"{path} failed to import: {outcome.message}"[:MESSAGE_CHARS]
            )
    if broken:
        return TestOutcome(
            "missing", f"never ran; modules that failed to import: {', '.join(broken)}"
        )
    return TestOutcome("missing", "never ran")
