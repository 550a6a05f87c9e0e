"""Python versions a repository's CI tests on: GitHub Actions, Travis, Azure, AppVeyor and
CircleCI matrices, read as YAML (one piece of evidence for choosing a task's interpreter).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml

from swebounty.envs.projectfiles import read_config

log = logging.getLogger(__name__)

_CI_KEY = re.compile(r"python[-_.]?versions?|python", re.I)


def ci_python_versions(root: Path) -> list[str]:
    """Python versions in CI matrices (GitHub Actions, Travis, Azure, AppVeyor, CircleCI).

    Read as YAML with every scalar kept as text: `3.10` must not become the float 3.1.
    """
    files = [*root.glob(".github/workflows/*.y*ml")]
    files += [root / n for n in (".travis.yml", "azure-pipelines.yml", "appveyor.yml")]
    files.append(root / ".circleci" / "config.yml")
    found: set[str] = set()
    for path in files:
        try:
            text = read_config(path, root)
        except OSError:  # unreadable
            continue
        if text is None:  # absent (most of these names), or too large
            continue
        try:
            docs = list(yaml.load_all(text, Loader=yaml.BaseLoader))
        except yaml.YAMLError as exc:
            log.debug("CI file %s is not YAML (%s); its matrix is not read", path, exc)
            continue
        for doc in docs:
            for value in _values_under(doc, _CI_KEY):
                found.update(re.findall(r"(?<![\d.])(3\.\d{1,2})(?![\d.])", value))
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def _values_under(node: Any, key: re.Pattern[str]) -> list[str]:
    """Every text value found under a mapping key matching `key`, at any depth."""
    found: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and key.fullmatch(k.strip()):
                found += _scalars(v)
            else:
                found += _values_under(v, key)
    elif isinstance(node, list):
        for item in node:
            found += _values_under(item, key)
    return found


def _scalars(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [s for item in node for s in _scalars(item)]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _scalars(v)]
    return []
