"""The first process of a unittest-based test run inside the sandbox: a guarded `__main__`.

Runs under the task's own interpreter (Python 3.6 and later), started by the harness as
`python -S run_unittest.py CONFIG_JSON` with the channel key on stdin, like run_pytest.py,
whose first steps it shares (read the key, install, restore the test infrastructure). Then:
1. import unittest before any code of the workspace can run, and let the guard
   (unittest_guard.py) put its recorders in front of every result object and snapshot
   unittest's machinery;
2. run `site` as the interpreter would have at start;
3. run the configured program as `__main__`, with the argv and sys.path `python` would give it:
   a script (`{"script": "tests/runtests.py", "args": [...]}`, its directory first on the
   path) or a module (`{"module": "unittest", "args": [...]}`, the working directory first);
4. when it ends, however it ends short of killing the process, send the results and its exit
   status through the harness's channel.
Standard library only; nothing of swebounty is importable here.
"""

import importlib.util
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    """A module of this directory (never on sys.path, where the workspace could shadow it)."""
    spec = importlib.util.spec_from_file_location(
        "swebounty_" + name, os.path.join(HERE, name + ".py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main():
    common = _load("run_pytest")
    channel, config, restored = common.prepare()
    import site

    front = [p for p in common._site_paths() if p not in sys.path]
    sys.path.extend(front)  # where site would look, so unittest is the environment's
    import unittest
    import unittest.case
    import unittest.loader
    import unittest.main
    import unittest.runner
    import unittest.suite  # noqa: F401

    for p in front:
        if p in sys.path:
            sys.path.remove(p)
    guard_module = _load("unittest_guard")
    guard = guard_module.UnittestGuard(
        channel, config, restored, _load("genuine"), _load("machinery"), _load("faults"),
        _load("hypothesis_profile"), _load("reads"),
    )  # fmt: skip
    guard.faults.run(guard.install, cut=True)
    if guard.faults.errors:
        guard.finish(1)  # no code of the workspace ran yet: nothing to run without the guard
        common._exit_now(1)
    site.main()  # .pth files and sitecustomize, as `python` runs them at start
    common._keep_site_for_children()
    code = 1
    try:
        code = _run(config)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        guard.finish(code)
    common._exit_now(code)  # the results are sent: no hang in the interpreter's exit


def _run(config):
    args = [str(a) for a in config.get("args", [])]
    if config.get("script"):
        script = os.path.join(os.getcwd(), config["script"])
        sys.argv = [script, *args]
        sys.path.insert(0, os.path.dirname(script))
        runpy.run_path(script, run_name="__main__")
    else:
        module = config["module"]
        sys.argv = [module, *args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


def _exit_code(value):
    """What the interpreter would exit with for SystemExit(value)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write("%s\n" % (value,))
    return 1


if __name__ == "__main__":
    main()
