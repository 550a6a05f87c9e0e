"""Environments: a task's EnvSpec, inferred and built into a cached, shared venv.

Callers need `EnvManager` (and the data it returns); the modules, one noun each, are:

    models        the shared data: ResolvedSpec, DepSet, Environment, TaskEnv, EnvBuildError
    spec          spec inference: the task's EnvSpec, overrides and the repo merged; cutoffs
    project       what the repo's own files say (name, Python versions, extras, test deps)
    requirements  requirement sources: requirement files, tox, dependency groups
    interpreters  the Pythons on this machine, and which one a repo of a date was written for
    overrides     per-repository exceptions, as data (overrides.toml)
    releases      what the package index and git tags say about releases as of a cutoff
    failures      why a build step failed: its class, the package at fault, in words
    steps         the uv commands of a build, isolated from ambient configuration
    resolve       resolution: a spec's dependencies to a lock at the cutoff, and its exceptions
    companions    which of the month's releases import the project (taken from that month)
    buildcopy     the copy of the workspace a build works on, made buildable
    natives       compiled extensions: built once per tree of build inputs, placed per task
    environment   one shared environment on disk: a venv installed from a lock
    probe         do the base commit's tests collect in a new environment? what breaks them
    repair        an environment whose tests cannot import, rebuilt without what breaks them
    candidate     one candidate environment of a build: installed, the project on it, probed
    complete      an environment completed with what the base's skipped tests lack
    build         building one spec: interpreters and plans tried in order, recorded
    cache         the on-disk layout of the environment cache, its locks and housekeeping
    tasklayer     the per-task layer: a tiny venv over a shared environment and the workspace
    manager       EnvManager: the one object the rest of swebounty talks to

Node environments (JavaScript/TypeScript tasks), beside them and sharing `cache`:

    node_semver   npm's semver ranges (engines.node, .nvmrc)
    node_versions which Node release a commit ran on; the registry's Node builds; npm of the era
    node_project  what package.json, lockfiles, .nvmrc and CI files say; the project's test runner
    node_install  the install commands of a Node environment, in the order they are tried
    node_build    Node binaries, package managers and node_modules, built once per lock
    node_manager  NodeEnvs: spec inference, the cache, and one task's view of its environment

Imports only go down this list's dependency order (models and the leaf readers first, manager
last); a test walks them for cycles. Everything Python-specific (interpreters, uv, requirement
files) sits behind `EnvManager`; another ecosystem's environments belong in modules of their
own beside these, sharing `models` and `cache`.
"""

from swebounty.envs.manager import EnvManager
from swebounty.envs.models import (
    BASE_PACKAGES,
    DepSet,
    EnvBuildError,
    Environment,
    ResolvedSpec,
    TaskEnv,
)
from swebounty.envs.spec import default_cutoff, share_cutoff

__all__ = [
    "BASE_PACKAGES",
    "DepSet",
    "EnvBuildError",
    "EnvManager",
    "Environment",
    "ResolvedSpec",
    "TaskEnv",
    "default_cutoff",
    "share_cutoff",
]
