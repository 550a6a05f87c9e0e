"""What one build repairs of what uv cannot read, and hands back to uv.

Three things uv refuses that the pip of their time took, each repaired once per build and
recorded in the environment's report (`notes`):
- a release whose metadata it cannot parse (`pytz (>=2011k)`): repaired metadata given as
  `dependency-metadata` (`--config-file`, metadata.py);
- an sdist whose *built* metadata it cannot parse: its wheel, built and repaired
  (metadata.repair_wheel), in the folder given as `--find-links`;
- an sdist of a refused name (`.tar.bz2`, `.tgz`): repacked as `.tar.gz` (sdists.py) in that
  same folder, CACHE/sdists/, shared by every build and rebuild.
And the project's own metadata, prepared in the build sandbox (projectmeta.py), goes in that
config file too when a resolution names the project by path.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from packaging.utils import canonicalize_name

from swebounty.envs import metadata, sdists
from swebounty.envs.failures import StepFailed


class ProjectSource(Protocol):
    """Where `Uv.compile` gets the project's metadata, to hand it to uv with the repairs
    (projectmeta.ProjectMetadata): (the metadata, the requirements file naming it)."""

    def given(
        self, uvr: Any, python: Path, requirements: Path, args: list[str]
    ) -> tuple[metadata.Repair | None, Path]: ...


class Repairs:
    def __init__(self, sdist_dir: Path | None, config_path: Path) -> None:
        self.sdist_dir = sdist_dir
        self.config_path = config_path
        # (name, version) -> its repaired metadata, "wheel" for a repaired wheel, None: tried.
        self.releases: dict[tuple[str, str], metadata.Repair | str | None] = {}
        self.repacked: dict[str, str | None] = {}  # name -> newest version repacked

    def args(self, project: metadata.Repair | None = None) -> list[str]:
        """What uv gets to see the repairs (and the project's metadata, projectmeta.py): a
        config file, a find-links folder."""
        out: list[str] = []
        fixed = [r for r in self.releases.values() if isinstance(r, metadata.Repair)]
        if project is not None:  # uv takes no metadata for a path given two entries
            fixed = [r for r in fixed if r.name != project.name] + [project]
        if fixed:
            self.config_path.write_text("\n".join(r.toml() for r in fixed), encoding="utf-8")
            out += ["--config-file", str(self.config_path)]
        folder = self.sdist_dir
        if folder is not None and (any(folder.glob("*.tar.gz")) or any(folder.glob("*.whl"))):
            out += ["--find-links", str(folder)]
        return out

    def metadata(self, said: str, offline: bool) -> bool:
        """Repair the releases uv's warnings in `said` call invalid; whether any new one was."""
        new = [r for r in metadata.invalid_releases(said) if r not in self.releases]
        for name, version in new:
            self.releases[(name, version)] = None if offline else metadata.repair(name, version)
        return any(self.releases.get(r) for r in new)

    def repack(self, failed: StepFailed, cutoff: datetime | None, offline: bool) -> bool:
        """Repack the sdists `failed` says uv refused; whether that gave uv anything new."""
        name = failed.package
        if failed.kind != "sdist" or not name or offline or self.sdist_dir is None:
            return False
        name = str(canonicalize_name(name.split("==")[0]))
        if name in self.repacked:
            return False
        self.repacked[name] = sdists.repack(name, cutoff, self.sdist_dir)
        return self.repacked[name] is not None

    def wheel(self, failed: StepFailed, offline: bool, build: Callable[[Path, Path], None]) -> bool:
        """For an sdist whose built metadata uv cannot parse: its repaired wheel in the
        find-links folder; whether there is a new one to install."""
        found = metadata.UNBUILT.search(failed.output)
        if found is None or offline or self.sdist_dir is None:
            return False
        key = (str(canonicalize_name(found.group(1))), found.group(2))
        if self.releases.get(key) == "wheel":
            return False
        self.releases[key] = "wheel"
        return metadata.repair_wheel(*key, self.sdist_dir, build) is not None

    def notes(self, lock: str) -> list[str]:
        """What was repaired of the releases `lock` pins, in words."""
        pins = {
            (str(canonicalize_name(p.split("==")[0].strip())), p.split("==")[1].strip())
            for p in lock.splitlines()
            if "==" in p and not p.startswith("#")
        }
        said = [
            r.describe() if isinstance(r, metadata.Repair) else f"{k[0]} {k[1]}: wheel repaired"
            for k, r in self.releases.items()
            if r and k in pins
        ]
        names = {name for name, _ in pins}
        return said + [
            f"{n}'s .tar.bz2/.tgz sdists repacked as .tar.gz (uv refuses their names)"
            for n, v in self.repacked.items()
            if v and n in names
        ]
