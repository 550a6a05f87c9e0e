"""The guard believes code's file only when the code is that file's (pytest_guard/genuine.py).

Honest base infrastructure (two conftest.py files of the same module name, hooks with asserts
pytest rewrites, a conftest that adds a method to a pytest class) raises nothing; code the
submission compiled under the name of a base conftest.py does, even when it also rewrites that
file on disk to match.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swebounty.pytest_guard import GuardResult, new_key, read_channel, runner_argv, write_config
from swebounty.sandbox import Policy, UnsafeSandbox
from swebounty.testing import pytest_command
from test_pytest_guard import _base_prefix, _venv

ROOT_CONFTEST = """\
import _pytest.python


def pytest_collection_modifyitems(items):
    assert items, "something to run"
    items.sort(key=lambda item: item.name)


def _where(self):
    return self.nodeid


_pytest.python.Function.swebounty_where = _where
"""

TESTS_CONFTEST = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    assert item.swebounty_where() == item.nodeid


@pytest.fixture
def one():
    return 1
"""

TESTS = """\
from pkg import f


def test_ok(one):
    assert f() == one


def test_bad():
    assert f() == 2
"""

# Registers a hook compiled under the name of tests/conftest.py, then makes the file on disk
# hold that source, so a check that reads the disk would find the code it expects.
FORGE = """
import gc, os
_conftest = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "conftest.py")
_src = '''import pytest
class Forcer:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
'''
_ns = {}
exec(compile(_src, _conftest, "exec"), _ns)
for _o in gc.get_objects():
    if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
        _o.pluginmanager.register(_ns["Forcer"](), "forcer")
        break
open(_conftest, "w").write(_src)
"""


def _run(tmp: Path, forge: bool, venv: Path) -> GuardResult | None:
    ws = tmp / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "pkg" / "__init__.py").write_text("def f():\n    return 1\n" + (FORGE if forge else ""))
    infra = {"conftest.py": ROOT_CONFTEST, "tests/conftest.py": TESTS_CONFTEST}
    for rel, text in infra.items():
        (ws / rel).write_text(text)
    (ws / "tests" / "test_x.py").write_text(TESTS)
    junit = tmp / "junit.xml"
    config = {
        "workspace": str(ws),
        "infra": {"files": {k: v.encode().hex() for k, v in infra.items()}, "names": [],
                  "suffixes": []},
        "untrusted_files": [str(ws / "pkg" / "__init__.py")],
        "trusted_dirs": [str(venv), _base_prefix(venv)], "junit": str(junit),
        "args": pytest_command([], ["tests/test_x.py"], junit), "setup": None,
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    policy = Policy(timeout_s=120, env={"PYTHONPATH": str(ws), "PATH": "/usr/bin:/bin"})
    python = str(venv / "bin" / "python")
    run = UnsafeSandbox().run(runner_argv(python, tmp / "config.json"), workdir=ws,
                              mounts=[], policy=policy, stdin=key, result_channel=True)  # fmt: skip
    return read_channel(run.channel, key)


KINDS = ["current", pytest.param("old", marks=pytest.mark.network)]  # pytest 8 and 3.6


@pytest.mark.parametrize("kind", KINDS)
def test_honest_conftest_hooks_and_patches_raise_nothing(tmp_path: Path, kind: str) -> None:
    # The asserts in the hooks: their code matches the file only as pytest rewrote it.
    run = _run(tmp_path, False, _venv(tmp_path, kind))
    assert run is not None and run.problems == []
    assert run.statuses == {"tests/test_x.py::test_ok": "passed",
                            "tests/test_x.py::test_bad": "failed"}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_code_compiled_under_a_base_conftest_name_is_not_that_conftest(
    tmp_path: Path, kind: str
) -> None:
    run = _run(tmp_path, True, _venv(tmp_path, kind))
    assert run is not None
    # The forged hook is named; the honest ones are still the file's (the bytes the harness
    # sent, not the disk the forger rewrote).
    conftest = (tmp_path / "ws" / "tests" / "conftest.py").resolve()
    assert run.problems == [
        f"hook pytest_runtest_makereport is implemented by {conftest}, which the submission changed"
    ]


def test_a_lazy_module_is_read_without_running_its_class(tmp_path: Path) -> None:
    # py's apipkg gives its modules a __dict__ property that imports every lazy submodule:
    # the guard's end-of-session check read it through vars() (0.08 s of seaborn's run, and
    # code run while checking). The module's own namespace is read instead.
    import os
    import types

    from swebounty.pytest_guard import genuine

    touched: list[str] = []

    class Lazy(types.ModuleType):
        @property  # type: ignore[misc]
        def __dict__(self) -> dict[str, object]:  # type: ignore[override]
            touched.append(self.__name__)
            return {}

    src = tmp_path / "lazy.py"
    src.write_text("def f():\n    return 1\n")
    module = Lazy("lazy")
    module.__file__ = str(src)
    exec(compile(src.read_text(), str(src), "exec", dont_inherit=True), genuine.namespace(module))
    known = genuine.Genuine()
    known.set_modules([module, object()])
    real = os.path.realpath(src)
    assert known.check(module.f, real, os.path.realpath)
    assert genuine.namespace(object()) is None
    assert touched == []


# Hypothesis's signature-copying wrapper (reflection.py's template, 2017 to 2026) and look-alikes
# that do more than forward: one call of the closure's function with the arguments, returned.
FORWARDERS = """
import sys

sys.path.insert(0, sys.argv[1])
import genuine


def accept(f):
    def plain(self):
        return f(self)

    def packed(self, x, *args, k=None, **kw):
        return f(self, x, *args, k=k, **kw)

    def named(self, y=1):
        return f(self, y=y)

    def swallows(self):
        try:
            return f(self)
        except Exception:
            return None

    def twice(self):
        f(self)
        return f(self)

    def calls_an_argument(self, g):
        return g(f)

    def looks_up(self):
        return f.__call__(self)

    def ignores(self):
        return None if f else f(self)

    return [plain, packed, named], [swallows, twice, calls_an_argument, looks_up, ignores]


forwarders, others = accept(lambda *args, **kwargs: None)
print([genuine.forwards(g) for g in forwarders], [genuine.forwards(g) for g in others])
"""


def _interpreters() -> list[str]:
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.*/bin/python"))
    return [sys.executable, *(str(p) for p in found if os.access(p, os.X_OK))]


def test_a_forwarder_is_told_from_code_that_does_more(tmp_path: Path) -> None:
    from swebounty.pytest_guard import genuine

    here = os.path.dirname(genuine.__file__)
    for python in _interpreters():
        run = subprocess.run([python, "-c", FORWARDERS, here], capture_output=True, text=True)
        assert run.stdout.strip() == "[True, True, True] [False, False, False, False, False]", (
            python,
            run.stderr[-500:],
        )


def test_a_wraps_set_later_is_followed_through_what_the_wrapper_holds() -> None:
    """matplotlib's image_comparison: functools.wraps(test) over contextlib's decorator over a
    wrapper of its own. The outer __wrapped__ names the test, the closure holds the wrapper;
    the chain is followed through the wrapper and must reach the test it named."""
    import contextlib
    import functools

    from swebounty.pytest_guard import genuine

    @contextlib.contextmanager
    def style() -> Iterator[None]:
        yield

    def image_like(func: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(func)
        @style()
        @functools.wraps(func)
        def wrapper(*args: object, **kwargs: object) -> object:
            return func(*args, **kwargs)

        return wrapper

    def test() -> None:
        raise AssertionError

    def noop(*args: object, **kwargs: object) -> None:
        return None

    def forwarder_to(g: Callable[..., object]) -> Callable[..., object]:
        def forward(*args: object, **kwargs: object) -> object:
            return g(*args, **kwargs)

        return forward

    wrapper = next(
        c for c in image_like.__code__.co_consts if getattr(c, "co_name", "") == "wrapper"
    )
    trusted = {test.__code__, noop.__code__, wrapper}  # the base file's own code

    def is_genuine(f: Callable[..., object]) -> bool:  # and contextlib's
        code = getattr(f, "__code__", None)
        return code is not None and (code in trusted or code.co_filename == contextlib.__file__)

    honest = image_like(test)
    assert genuine.unwrap(honest, is_genuine) is None

    # contextlib's decorator around a no-op, named the test by a later wraps
    assert "does not hold the __wrapped__" in genuine.unwrap(
        functools.wraps(test)(style()(noop)), is_genuine
    )
    # ... around a forwarder to a genuine no-op that names the test and claims the no-op's line:
    # followed (its names lead to the test), but the chain it runs never reaches the test
    forward = forwarder_to(noop)
    forward.__code__ = forward.__code__.replace(co_firstlineno=noop.__code__.co_firstlineno)
    forward.__wrapped__ = test  # type: ignore[attr-defined]
    why = genuine.unwrap(functools.wraps(test)(style()(forward)), is_genuine)
    assert why is not None and "whose __wrapped__ is not what it runs" in why


@pytest.mark.parametrize("params", ["mod, source, module_path=None, config=None",
                                    "mod, module_path=None, config=None",
                                    "mod, module_path=None"])  # fmt: skip
def test_the_file_is_rewritten_as_the_era_s_pytest_calls_its_rewriter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, params: str
) -> None:
    """pytest's master of mid-2019 (pytest's own SWE-bench tasks: pytest-5495) took (mod,
    module_path) only: the guard's rewrite failed, and every test with an assert was
    disbelieved ("its test function is not the code of ...")."""
    from _pytest.assertion import rewrite as real

    from swebounty.pytest_guard.genuine import Genuine

    test_file = tmp_path / "test_it.py"
    test_file.write_text("def test_it():\n    assert 1 + 1 == 2\n")
    calls: list[tuple[object, ...]] = []
    stand_in = types.ModuleType("_pytest.assertion.rewrite")
    namespace: dict[str, object] = {"real": real, "calls": calls, "Path": Path}
    source = "source" if "source" in params else "Path(module_path).read_bytes()"
    config = "config" if "config" in params else "None"
    forward = f"real.rewrite_asserts(mod, {source}, str(module_path), {config})"
    exec(f"def rewrite_asserts({params}):\n    calls.append(locals())\n    {forward}\n", namespace)
    stand_in.rewrite_asserts = namespace["rewrite_asserts"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_pytest.assertion.rewrite", stand_in)
    code = Genuine()._rewrite(str(test_file))
    assert code is not None and len(calls) == 1
    tree = ast.parse(test_file.read_bytes())
    real.rewrite_asserts(tree, test_file.read_bytes(), str(test_file), None)
    assert code == compile(tree, str(test_file), "exec", dont_inherit=True)
