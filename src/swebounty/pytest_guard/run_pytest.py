"""The first process of a test run inside the sandbox: install, restore, then pytest, guarded.

Runs under the task's own interpreter (Python 3.6 and later), started by the harness as
`python -S run_pytest.py CONFIG_JSON` with the channel key on stdin. Standard library only;
nothing of swebounty is importable here. In order:
1. read the key from stdin and make this process non-dumpable, so no other process of the
   sandbox can read it from memory;
2. run the workspace's install step (if any) as a child, then kill whatever it left running;
3. put the test infrastructure (pytest configuration, conftest.py, plugins, sitecustomize,
   .pth files) back to what the harness prepared, whatever the install wrote;
4. import pytest, pluggy and unittest before any code of the workspace can run, from the
   path `site` would build (read from the .pth files, their code lines skipped): `-S` kept
   site, and with it every .pth file and sitecustomize, from running at start;
5. let the guard (swebounty_guard.py) snapshot the reporting machinery, then run `site` as
   the interpreter would have, and pytest with the guard as its first plugin.
The guard sends the results through the harness's channel; this file sends a result itself
only when it stops before pytest (a failed install).
"""

import contextlib
import ctypes
import hashlib
import hmac
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PR_SET_DUMPABLE = 4


def main():
    channel, config, restored = prepare()
    _make_cache_dir(config["args"])

    # pytest, pluggy and unittest are imported before anything of the workspace runs: from the
    # path `site` would build, read from the .pth files without running a line of code in them
    # (the install above was another process, and site has not run).
    import site

    front = [p for p in _site_paths() if p not in sys.path]
    sys.path.extend(front)
    late = False
    try:
        import unittest  # noqa: F401

        import pytest
    except ImportError:
        # Only code in a .pth file puts pytest on the path (an import-hook editable install of
        # pytest itself): take it from there, after site, and say so.
        site.main()
        late = True
        import pytest
    for p in front:
        if p in sys.path and not late:
            sys.path.remove(p)
    guard = _load_guard()
    g = guard.Guard(channel, config, restored)
    g.snapshot()
    if late:
        g.notes.append("pytest was imported after the startup files ran")
    else:
        site.main()  # .pth files and sitecustomize, as `python` runs them at start
    _keep_site_for_children()
    sys.path.insert(0, os.getcwd())  # what `python -m pytest` does
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + config["args"]
    try:
        plugins = [g, g.limit, g.hypothesis, g.conftests, g.calls, g.calls.fixtures]
        code = pytest.main(config["args"], plugins=plugins)
    except BaseException:
        # Raised after the session's end (pytest_unconfigure; pytest 8.4+ raising the tests'
        # unraisable exceptions when warnings are errors: tqdm-1751), the session's own exit
        # status stands, as its results do; before it, pytest's INTERNAL_ERROR. Either way the
        # exit below, not the interpreter's, which could hang (tqdm's atexit join).
        traceback.print_exc()
        code = g.exitstatus if g.exitstatus is not None else 3
    finally:
        g.finish()
    _exit_now(int(code))


def _exit_now(code):
    """End the process as soon as the results are sent, without the interpreter's exit.

    Nothing that exit still runs (atexit handlers, the joins of the threads the tests left
    running) can change the results, but it can hang: tqdm before PR 1751 joined, in an
    atexit handler, a monitor thread stuck on a lock, and its runs hung there after pytest's
    summary until the run timeout, which made a finished run a timed-out one (an error); a
    test stopped at the time limit (timelimit.py) leaves the very threads it deadlocked."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)  # what C code of the tests printed
    os._exit(code)


def _make_cache_dir(args):
    """Make the folder of `-o cache_dir=...` before pytest starts. pytest makes it when it
    first writes its cache; a plugin with an ini option of the same name reads the harness's
    value too (astropy 2-3's `cache_dir`, where astropy keeps its cache) and makes a folder in
    it at each test's setup with os.mkdir: without this, every test of astropy-6938 erred
    (FileNotFoundError: '.../swebounty-pytest-cache/astropy')."""
    for at in range(1, len(args)):  # itertools.pairwise is Python 3.10's
        value = args[at]
        if args[at - 1] == "-o" and value.startswith("cache_dir=") and value[10:11] == "/":
            with contextlib.suppress(OSError):  # pytest says so when it writes there
                os.makedirs(value[10:], exist_ok=True)


def prepare():
    """Steps 1 to 3, shared with run_unittest.py: (channel, config, what was restored)."""
    key = sys.stdin.buffer.read(4096).strip()
    sys.stdin.close()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - tests that read stdin get EOF
    _not_dumpable()
    with open(sys.argv[1], "rb") as f:
        config = json.loads(f.read().decode("utf-8"))
    fd = int(os.environ.pop("SWEBOUNTY_RESULT_FD"))
    # Test services the harness started before this process (services/driver.py): their
    # sessions outlive the install step's clean-up.
    services = os.environ.pop("SWEBOUNTY_SERVICE_SESSIONS", "")
    spare = set(int(s) for s in services.split(",") if s.isdigit())
    os.set_inheritable(fd, False)  # the tests' own subprocesses never get it
    if sys.path and os.path.abspath(sys.path[0]) == HERE:
        del sys.path[0]
    channel = Channel(key, fd)
    _seed_tmp(config.get("tmp_files") or {})

    setup = config.get("setup")
    if setup:
        print("=== swebounty: installing the workspace ===", flush=True)
        code = subprocess.call(setup, stdin=subprocess.DEVNULL, env=_child_env())
        _kill_leftovers(spare)
        print("=== swebounty: install exited with %d ===" % code, flush=True)
        if code != 0 and not config.get("setup_may_fail"):
            channel.send({"setup_exit": code})
            sys.exit(3)
    # Without an install step nothing but the harness wrote the workspace yet.
    restored = _restore_infra(config["workspace"], config["infra"]) if setup else []
    return channel, config, restored


class Channel:
    """One authenticated message to the harness through the inherited pipe."""

    MAGIC = b"SWEBOUNTY-RESULT"

    def __init__(self, key, fd):
        self._key = key
        self._fd = fd
        self.sent = False

    def send(self, payload):
        if self.sent:
            return
        self.sent = True
        body = json.dumps(payload, sort_keys=True).encode("utf-8")
        mac = hmac.new(self._key, body, hashlib.sha256).hexdigest().encode()
        data = self.MAGIC + b" " + mac + b" " + str(len(body)).encode() + b"\n" + body
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
            os.close(self._fd)
        except OSError:
            pass  # the harness sees no result: the run counts as one that lost its results


def _seed_tmp(files):
    """Copy the harness's kept files (fontcache.py: matplotlib's font list) to where the tools
    look for them in this run's private /tmp, before anything of the task runs."""
    for dest, src in sorted(files.items()):
        if not dest.startswith("/tmp/") or os.path.normpath(dest) != dest:
            continue
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(src, "rb") as f:
                data = f.read()
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError:
            continue  # the tool builds its own, as without the harness


def _site_paths():
    """The directories `site` would add for this venv, in its order, code lines skipped."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    if not os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        return []
    found = []
    version = "python%d.%d" % sys.version_info[:2]
    _add_site_dir(os.path.join(venv, "lib", version, "site-packages"), found, 0)
    return found


_ADDSITEDIR = re.compile(r"site\.addsitedir\((['\"])(.+?)\1\)")


def _add_site_dir(directory, found, depth):
    if not os.path.isdir(directory) or directory in found:
        return
    found.append(directory)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".pth"))
    except OSError:
        return
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                # Never run; the harness's own line that adds the shared environment is read.
                match = _ADDSITEDIR.search(line)
                if match and depth < 2:
                    _add_site_dir(match.group(2), found, depth + 1)
                continue
            path = os.path.join(directory, line)
            if os.path.isdir(path) and path not in found:
                found.append(path)


def _load_guard():
    spec = importlib.util.spec_from_file_location(
        "swebounty_guard", os.path.join(HERE, "swebounty_guard.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["swebounty_guard"] = module
    spec.loader.exec_module(module)
    return module


def _not_dumpable():
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _child_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("SWEBOUNTY_")}


def _keep_site_for_children():
    # `-S` shows in sys.flags, and multiprocessing passes the flags on to the interpreters it
    # spawns, which would then start without the environment's site-packages.
    try:
        flags = subprocess._args_from_interpreter_flags
    except AttributeError:
        return

    def without_no_site():
        return [a for a in flags() if a != "-S"]

    subprocess._args_from_interpreter_flags = without_no_site
    util = sys.modules.get("multiprocessing.util")  # it copies the name when imported
    if util is not None and hasattr(util, "_args_from_interpreter_flags"):
        util._args_from_interpreter_flags = without_no_site


def _kill_leftovers(spare_sessions=()):
    """Kill every process of the sandbox but this one, its ancestors, bwrap's init and the
    test services' sessions (a process cannot join a session it did not start)."""
    keep = {os.getpid(), 1}
    pid = os.getpid()
    while pid > 1:
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        keep.add(pid)
    for _ in range(100):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]
        others = [p for p in others if _session(p) not in spare_sessions]
        if not others:
            return
        for pid in others:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _session(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def _restore_infra(workspace, infra):
    """Make every test-infrastructure file under `workspace` what `infra` says: the listed
    files with their contents, no other file with an infrastructure name. Returns what changed.
    """
    wanted = {rel: bytes.fromhex(data) for rel, data in infra["files"].items()}
    names = set(infra["names"])
    suffixes = tuple(infra["suffixes"])
    changed = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if not (root == workspace and d == ".git")]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = os.path.relpath(os.path.join(root, name), workspace)
            if (name in names or name.endswith(suffixes)) and rel not in wanted:
                os.unlink(os.path.join(root, name))
                changed.append(rel)
    for rel, data in sorted(wanted.items()):
        path = os.path.join(workspace, rel)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                same = os.read(fd, len(data) + 1) == data
            finally:
                os.close(fd)
        except OSError:
            same = False
        if not same:
            _write(workspace, rel, data)
            changed.append(rel)
    return sorted(set(changed))


def _write(workspace, rel, data):
    parent = workspace
    for part in rel.split("/")[:-1]:
        parent = os.path.join(parent, part)
        if os.path.islink(parent) or (os.path.exists(parent) and not os.path.isdir(parent)):
            os.unlink(parent)
        if not os.path.isdir(parent):
            os.mkdir(parent)
    path = os.path.join(workspace, rel)
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        import shutil

        shutil.rmtree(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()
