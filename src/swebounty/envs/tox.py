"""The parts of a tox configuration (tox.ini, setup.cfg, pyproject's [tool.tox]) that describe
the test environment: its deps and extras, factor-conditional lines resolved for one Python."""

from __future__ import annotations

import configparser
import itertools
import logging
import re
from pathlib import Path
from typing import Any

from swebounty.envs.projectfiles import read_config
from swebounty.envs.requirements import (
    _str_list,
    _strip_comment,
    _strip_upgrade,
    clean_requirement,
    read_requirement_file,
)

log = logging.getLogger(__name__)


class ToxConfig:
    """The parts of a tox configuration that describe the test environment."""

    def __init__(self, sections: dict[str, dict[str, str]], source: str) -> None:
        self.sections = sections
        self.source = source

    @classmethod
    def load(cls, root: Path, pyproject: dict[str, Any]) -> ToxConfig | None:
        ini = read_config(root / "tox.ini", root)
        if ini is not None:
            return cls(_ini_sections(ini), "tox.ini")
        tool_tox = pyproject.get("tool", {}).get("tox", {})
        if isinstance(tool_tox.get("legacy_tox_ini"), str):
            return cls(_ini_sections(tool_tox["legacy_tox_ini"]), "pyproject.toml [tool.tox]")
        if isinstance(tool_tox, dict) and tool_tox:
            base = tool_tox.get("env_run_base", {})
            section = {
                "deps": "\n".join(_str_list(base.get("deps"))),
                "extras": "\n".join(_str_list(base.get("extras"))),
            }
            envs = _str_list(tool_tox.get("env_list") or tool_tox.get("envlist"))
            return cls(
                {"tox": {"envlist": ",".join(envs)}, "testenv": section},
                "pyproject.toml [tool.tox]",
            )
        cfg = read_config(root / "setup.cfg", root)
        if cfg is not None:
            sections = _ini_sections(cfg)
            if "tox:tox" in sections or "testenv" in sections:
                sections["tox"] = sections.get("tox:tox", {})
                return cls(sections, "setup.cfg")
        return None

    def envs(self) -> list[str]:
        raw = self.sections.get("tox", {}).get("envlist", "")
        envs = [e for part in re.split(r"[\n,](?![^{]*\})", raw) for e in _expand(part.strip())]
        envs += [s.split(":", 1)[1] for s in self.sections if s.startswith("testenv:")]
        return [e for e in envs if e]

    def python_versions(self) -> list[str]:
        found: set[str] = set()
        for env in self.envs():
            for factor in env.split("-"):
                m = re.fullmatch(r"py(\d)\.?(\d+)", factor)
                if m:
                    found.add(f"{m.group(1)}.{m.group(2)}")
        gh = self.sections.get("gh-actions", {}).get("python", "")
        found.update(re.findall(r"^\s*(\d\.\d+)\s*:", gh, re.M))
        return sorted(found)

    def testenv(self) -> dict[str, str]:
        for name in ("testenv", "testenv:py", "testenv:test", "testenv:tests", "testenv:unit"):
            if name in self.sections:
                return self.sections[name]
        return {}

    def deps(self, python: str, project: str | None, notes: list[str], root: Path) -> list[str]:
        env = self.testenv()
        lines: list[str] = []
        for raw in self._value(env.get("deps", "")).splitlines():
            line = _strip_comment(raw)
            line = _factor_filter(line, python)
            if not line:
                continue
            line = _strip_upgrade(line.replace("{toxinidir}/", "").replace("{toxinidir}", "."))
            if line.startswith(("-r", "--requirement")):
                target = re.sub(r"^(-r|--requirement)[=\s]*", "", line).strip()
                sub, _ = read_requirement_file(root / target, root, project, notes)
                lines.extend(sub)
                continue
            if re.match(r"^[\w.-]+/", line) and (root / line.split("[")[0]).exists():
                notes.append(f"{self.source}: dropped local path {line!r}")
                continue
            if "{" in line:
                notes.append(f"{self.source}: dropped dep with unresolved substitution {line!r}")
                continue
            kept, _ = clean_requirement(line, project, notes, source=self.source)
            lines.extend(kept)
        return lines

    def extras(self, python: str = "") -> list[str]:
        """The extras of [testenv]. A line conditional on a factor (astropy's `test: test`,
        `alldeps: all`) is kept only as `_factor_filter` keeps a deps line: `test:` is not
        an extra name, and uv refuses the whole requirement for it."""
        value = self._value(self.testenv().get("extras", ""))
        found: list[str] = []
        for line in value.splitlines():
            kept = _factor_filter(line, python) if python else line
            for extra in re.split(r"[,\s]+", kept):
                if _EXTRA.fullmatch(extra) and extra not in found:
                    found.append(extra)
        return found

    def _value(self, value: str, depth: int = 0) -> str:
        """Expand `{[section]key}` references, as tox does."""

        def sub(m: re.Match[str]) -> str:
            section = self.sections.get(m.group(1), {})
            return self._value(section.get(m.group(2), ""), depth + 1) if depth < 5 else ""

        return re.sub(r"\{\[([^\]]+)\]([\w-]+)\}", sub, value)


def _ini_sections(text: str) -> dict[str, dict[str, str]]:
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        log.debug("unreadable ini: %s", exc)
        return {}
    return {s: dict(parser.items(s)) for s in parser.sections()}


def _expand(text: str) -> list[str]:
    """tox brace expansion: py{37,38}-django{22,30} -> 4 names."""
    parts = re.split(r"(\{[^{}]*\})", text)
    options = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(combo).strip() for combo in itertools.product(*options)]


_EXTRA = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def _factor_filter(line: str, python: str) -> str:
    """tox's conditional lines ("py38,py39: dep", "!py27: dep"): keep what applies to `python`."""
    m = re.match(r"^\s*(!?[\w.{},]+(?:[-,]!?[\w.{},]+)*)\s*:\s+(.+)$", line)
    if not m or "://" in line.split(":", 1)[0]:
        return line
    pyfactor = "py" + python.replace(".", "")
    conds = [c for part in m.group(1).split(",") for c in _expand(part)]
    for cond in conds:
        factors = cond.split("-")
        positive = [f for f in factors if not f.startswith("!")]
        negative = [f[1:] for f in factors if f.startswith("!")]
        py_pos = [f for f in positive if re.fullmatch(r"py\d+", f)]
        other_pos = [f for f in positive if f not in py_pos]
        if other_pos:  # a factor we do not run (django22, docs, ...)
            continue
        if py_pos and pyfactor not in py_pos:
            continue
        if pyfactor in negative:
            continue
        return m.group(2)
    return ""
