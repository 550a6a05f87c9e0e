"""The first process of a run of sympy's own test runner inside the sandbox: a guarded bin/test.

Runs under the task's own interpreter (Python 3.6 and later), started by the harness as
`python -S run_sympy.py CONFIG_JSON` with the channel key on stdin, like run_pytest.py, whose
first steps it shares (read the key, install, restore the test infrastructure). Then:
1. let the guard (sympy_guard.py) put its import hook for the runner's modules first on
   sys.meta_path (sympy_modules.py), before any code of the workspace can run;
2. run `site` as the interpreter would have at start;
3. run the runner script (`{"script": "bin/test", "args": [...]}`) as `__main__`, with the
   argv and sys.path `python bin/test` would give it (run_unittest.py's steps), and the
   recursion limit raised by the frames of this file's and runpy's below it: a test sees the
   headroom `python bin/test` gives it (without its cache, some of sympy's tests of 2016 run
   so close to the limit that they raise RecursionError in one run and pass in the next);
4. when it ends, however it ends short of killing the process, send the results and its exit
   status through the harness's channel.
Standard library only; nothing of swebounty is importable here.
"""

import importlib.util
import os
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


# run_unittest._run, runpy.run_path, runpy._run_module_code and runpy._run_code.
_BELOW_THE_SCRIPT = 4


def _depth():
    """How many frames the stack holds here (this function's not counted)."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def main():
    common = _load("run_pytest")
    channel, config, restored = common.prepare()
    import site

    program = _load("run_unittest")  # how a script runs as `__main__`, and its exit status
    guard = _load("sympy_guard").SympyGuard(
        channel, config, restored, _load("genuine"), _load("machinery"), _load("reads"),
        _load("sympy_modules"), _load("faults"),
    )  # fmt: skip
    guard.faults.run(guard.install, cut=True)
    if guard.faults.errors:
        guard.finish(1)  # no code of the workspace ran yet: nothing to run without the guard
        common._exit_now(1)
    site.main()  # .pth files and sitecustomize, as `python` runs them at start
    common._keep_site_for_children()
    code = 1
    sys.setrecursionlimit(sys.getrecursionlimit() + _depth() + _BELOW_THE_SCRIPT)
    try:
        code = program._run(config)
    except SystemExit as exc:
        code = program._exit_code(exc.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        guard.finish(code)
    common._exit_now(code)  # the results are sent: no hang in the interpreter's exit


if __name__ == "__main__":
    main()
