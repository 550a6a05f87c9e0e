"""Build switches: a project's own options to build against the system's libraries instead of
sources its build would download.

matplotlib's build (`setupext.py`) downloads FreeType 2.6.1 and Qhull tarballs from their
project sites unless its build configuration says `system_freetype = True` and
`system_qhull = True` under `[libs]`; only package indexes are reachable from these machines
(and from many a user's CI), so every matplotlib base commit failed to build. The build reads
that configuration from a file named by an environment variable, else a default file
(`MPLSETUPCFG` or `mplsetup.cfg`; `setup.cfg` before 3.4). The rule, read from the project's
own build helpers rather than from its name: a helper that reads such a file, and asks it for
boolean `system_*` options, gets every one of them set to true in that file of the *build
copy* (buildcopy.copy_project: the copy the environment build and the extension build work
in); an install in the sandbox (a patch that changes packaging or compiled files) gets the
same file in the task's layer, named by the variable (`system_library_env`): the workspace the
tests see is never written. The system libraries then have to be
there: a build that lacks one fails naming its header (`failures.native_cause`; on Debian,
libfreetype-dev and libqhull-dev).

Image tests whose baselines were drawn with FreeType 2.6.1 may differ with the system's
FreeType (docs/results/swebench-scientific.md says what was measured). A source the user
provides (sources.py: a folder of NAME-VERSION trees or tarballs, FreeType 2.6.1 among them)
is placed in the build copy instead, and its `system_NAME` switch is then not forced; the
install in the sandbox still builds against the system's libraries.
"""

from __future__ import annotations

import configparser
import io
import logging
import re
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from swebounty import safefs

log = logging.getLogger(__name__)

HELPERS = ("setupext.py", "setup.py")  # the build's own code, at the project's root
MAX_HELPER_BYTES = 1 << 20
# `cfg = os.environ.get('MPLSETUPCFG') or 'mplsetup.cfg'`: a build configuration file, named
# by a variable or by default.
_CONFIG_FILE = re.compile(
    r"""os\.environ\.get\(\s*['"](?P<var>[A-Z][A-Z0-9_]*)['"]\s*\)\s*or\s*"""
    r"""['"](?P<file>[\w.-]+\.cfg)['"]"""
)
# `config.getboolean('libs', 'system_freetype', ...)`
_SYSTEM_OPTION = re.compile(
    r"""getboolean\(\s*['"](?P<section>\w+)['"]\s*,\s*['"](?P<option>system_\w+)['"]"""
)


class Switches(NamedTuple):
    variable: str  # names the configuration file, when set
    filename: str  # the file read otherwise, in the directory the build runs in
    options: dict[str, list[str]]  # section -> its system_* options


def system_library_options(project: Path) -> Switches | None:
    """The configuration the project's build reads its system_* options from, or None when
    its build helpers read no such file."""
    for name in HELPERS:
        data = safefs.read_beneath(project, name, MAX_HELPER_BYTES)
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        config = _CONFIG_FILE.search(text)
        options: dict[str, list[str]] = {}
        for found in _SYSTEM_OPTION.finditer(text):
            options.setdefault(found["section"], [])
            if found["option"] not in options[found["section"]]:
                options[found["section"]].append(found["option"])
        if config and options:
            return Switches(config["var"], config["file"], options)
    return None


def use_system_libraries(project: Path, keep: Collection[str] = ()) -> list[str]:
    """In a build copy: set every `system_*` option of the project's build configuration file
    to true (keeping what else the file says), but those in `keep` (a source provided for
    them: sources.py). Returns what was set, for the build's log."""
    found = system_library_options(project)
    if found is None:
        return []
    if keep:
        options = {s: [o for o in names if o not in keep] for s, names in found.options.items()}
        found = found._replace(options={s: names for s, names in options.items() if names})
        if not found.options:
            return []
    text, done = _configured(project, found)
    safefs.write_beneath(project, found.filename, text.encode())
    log.info("build copy %s: %s", project, "; ".join(done))
    return done


def system_library_env(workspace: Path, where: Path) -> dict[str, str]:
    """For an install in the sandbox (the workspace is the tests', never written): the
    workspace's configuration with every system_* option true, written in `where` (the task's
    layer, which the sandbox sees), and the variable that names it; {} if the build has none."""
    found = system_library_options(workspace)
    if found is None:
        return {}
    text, _ = _configured(workspace, found)
    path = where / f"swebounty-{found.filename}"
    path.write_text(text, encoding="utf-8")
    return {found.variable: str(path)}


def _configured(project: Path, found: Switches) -> tuple[str, list[str]]:
    """The project's configuration file (or none) with the system_* options set true."""
    filename, options = found.filename, found.options
    parser = configparser.ConfigParser()
    existing = safefs.read_beneath(project, filename, MAX_HELPER_BYTES)
    if existing is not None:
        try:
            parser.read_string(existing.decode("utf-8", "replace"))
        except configparser.Error as exc:
            log.warning("%s/%s is not a configuration file (%s): rewritten", project, filename, exc)
            parser = configparser.ConfigParser()
    done = []
    for section, names in options.items():
        if not parser.has_section(section):
            parser.add_section(section)
        for name in names:
            parser.set(section, name, "True")
            done.append(f"{filename} [{section}] {name} = True")
    out = io.StringIO()
    parser.write(out)
    return out.getvalue(), done
