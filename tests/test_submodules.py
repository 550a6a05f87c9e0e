"""Git submodules are filled from clones in --repos-dir, at the gitlink's commit, with no
history; one that cannot be is an error that says what to do; .gitmodules is hostile data."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repo_helpers import git_env
from swebounty import submodules
from swebounty.envs import buildcopy
from swebounty.repos import make_workspace
from swebounty.submodules import Sources, SubmoduleError, github_repo


def run(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=git_env(), check=True, capture_output=True, text=True
    ).stdout.strip()


def submodule_status(repo: Path) -> str:
    """`git submodule status`, its leading status character kept (' ': up to date)."""
    argv = ["git", "-C", str(repo), "submodule", "status"]
    return subprocess.run(argv, env=git_env(), check=True, capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    run(repo, "add", "-A")
    run(repo, "commit", "-qm", message)
    return run(repo, "rev-parse", "HEAD")


def superproject(
    root: Path, gitlink: str, *, url: str = "https://github.com/acme/lib.git", name: str = "lib"
) -> tuple[Path, str]:
    """acme/app: a repository whose tree records `gitlink` at vendor/lib, declared by
    .gitmodules as `name` with `url`."""
    repo = root / "acme__app"
    repo.mkdir(parents=True)
    run(repo, "init", "-q", "-b", "main")
    (repo / ".gitmodules").write_text(f'[submodule "{name}"]\n\tpath = vendor/lib\n\turl = {url}\n')
    (repo / "app.py").write_text("from vendor.lib import lib\n")
    run(repo, "add", "app.py", ".gitmodules")
    run(repo, "update-index", "--add", "--cacheinfo", f"160000,{gitlink},vendor/lib")
    run(repo, "commit", "-qm", "app")
    return repo, run(repo, "rev-parse", "HEAD")


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, object]:
    """--repos-dir with acme__lib (two commits: the gitlink's, and a later one) and acme__app."""
    repos_dir = tmp_path / "repos"
    lib = repos_dir / "acme__lib"
    lib.mkdir(parents=True)
    run(lib, "init", "-q", "-b", "main")
    pinned = commit(lib, {"lib.py": "VERSION = 1\n", "data/table.txt": "old\n"}, "pinned")
    later = commit(lib, {"lib.py": "VERSION = 2  # the future\n"}, "later")
    app, base = superproject(repos_dir, pinned)
    return {"dir": repos_dir, "pinned": pinned, "later": later, "app": app, "base": base}


def _workspace(repos: dict[str, object], dest: Path) -> Path:
    sources = Sources("acme/app", repos["dir"], None)  # type: ignore[arg-type]
    return make_workspace(repos["app"], str(repos["base"]), dest, fill_submodules=sources.fill)  # type: ignore[arg-type]


def test_a_submodule_is_filled_at_its_commit_without_history(
    repos: dict[str, object], tmp_path: Path
) -> None:
    ws = _workspace(repos, tmp_path / "ws")
    lib = ws / "vendor" / "lib"
    assert (lib / "lib.py").read_text() == "VERSION = 1\n"
    assert (lib / "data" / "table.txt").read_text() == "old\n"
    # Up to date for git (astropy's ah_bootstrap would otherwise run `submodule update`).
    assert submodule_status(ws).startswith(f" {repos['pinned']} vendor/lib")
    assert run(ws, "status", "--porcelain") == ""
    assert run(lib, "rev-parse", "HEAD") == repos["pinned"]
    # Only the gitlink's commit: nothing newer (nor older) of the other repository.
    assert run(lib, "rev-list", "--all") == repos["pinned"]
    missing = subprocess.run(["git", "-C", str(lib), "cat-file", "-e", str(repos["later"])])
    assert missing.returncode != 0
    # The URL from .gitmodules is not written into the workspace's config.
    assert "github.com" not in (ws / ".git" / "config").read_text()


def test_a_build_copy_keeps_the_filled_submodule(repos: dict[str, object], tmp_path: Path) -> None:
    ws = _workspace(repos, tmp_path / "ws")
    buildcopy.copy_project(ws, tmp_path / "copy")
    copy = tmp_path / "copy"
    assert (copy / "vendor" / "lib" / "lib.py").read_text() == "VERSION = 1\n"
    assert submodule_status(copy).startswith(f" {repos['pinned']} vendor/lib")


def test_an_absent_clone_is_an_error_that_says_what_to_do(
    repos: dict[str, object], tmp_path: Path
) -> None:
    import shutil

    shutil.rmtree(repos["dir"] / "acme__lib")  # type: ignore[operator]
    with pytest.raises(SubmoduleError) as err:
        _workspace(repos, tmp_path / "ws")
    message = str(err.value)
    assert "'vendor/lib'" in message and "https://github.com/acme/lib.git" in message
    assert str(repos["pinned"]) in message
    assert f"clone acme/lib into {repos['dir']}/acme__lib" in message
    assert not (tmp_path / "ws").exists()


def test_a_commit_the_clone_lacks_is_an_error(tmp_path: Path) -> None:
    repos_dir = tmp_path / "repos"
    lib = repos_dir / "acme__lib"
    lib.mkdir(parents=True)
    run(lib, "init", "-q", "-b", "main")
    commit(lib, {"lib.py": "x = 1\n"}, "only")
    app, base = superproject(repos_dir, "1" * 40)
    with pytest.raises(SubmoduleError, match=f"lacks that commit.*fetch origin {'1' * 40}"):
        make_workspace(
            app, base, tmp_path / "ws", fill_submodules=Sources("acme/app", repos_dir).fill
        )


@pytest.mark.parametrize(
    ("url", "repo"),
    [
        ("https://github.com/acme/lib.git", "acme/lib"),
        ("https://github.com/acme/lib", "acme/lib"),
        ("git@github.com:acme/lib.git", "acme/lib"),
        ("git://github.com/acme/lib.git", "acme/lib"),
        ("ssh://git@github.com/acme/lib.git", "acme/lib"),
        ("../lib.git", "acme/lib"),
        ("../../other/lib", "other/lib"),
        ("https://github.com/acme/../../etc/passwd", None),
        ("https://github.com/acme/lib/../../x", None),
        ("https://evil.example/acme/lib.git", None),
        ("https://github.com.evil.example/acme/lib.git", None),
        ("ext::sh -c touch% /tmp/pwned", None),
        ("--upload-pack=touch /tmp/pwned", None),
        ("/etc", None),
        ("../../../x/lib", None),
        ("../..", None),
        ("https://github.com/acme/.git", None),
        ("", None),
    ],
)
def test_only_github_repositories_are_named_from_a_url(url: str, repo: str | None) -> None:
    assert github_repo(url, "acme/app") == repo


def test_a_url_not_on_github_is_an_error(tmp_path: Path) -> None:
    repos_dir = tmp_path / "repos"
    app, base = superproject(repos_dir, "1" * 40, url="ext::sh -c touch% /tmp/pwned")
    with pytest.raises(SubmoduleError, match="not a GitHub repository"):
        make_workspace(
            app, base, tmp_path / "ws", fill_submodules=Sources("acme/app", repos_dir).fill
        )


def test_a_name_with_a_parent_component_is_refused(
    repos: dict[str, object], tmp_path: Path
) -> None:
    app, base = superproject(tmp_path / "other", str(repos["pinned"]), name="../../escape")
    with pytest.raises(SubmoduleError, match="not one git allows"):
        make_workspace(
            app,
            base,
            tmp_path / "ws",
            fill_submodules=Sources("acme/app", repos["dir"]).fill,  # type: ignore[arg-type]
        )


def test_a_path_that_goes_through_a_link_is_refused(
    repos: dict[str, object], tmp_path: Path
) -> None:
    ws = make_workspace(repos["app"], str(repos["base"]), tmp_path / "ws")  # type: ignore[arg-type]
    outside = tmp_path / "outside" / "lib"
    outside.mkdir(parents=True)
    (ws / "vendor" / "lib").rmdir()
    (ws / "vendor").rmdir()
    (ws / "vendor").symlink_to(tmp_path / "outside")
    with pytest.raises(SubmoduleError, match="not a directory of the checkout"):
        submodules.fill(ws, Sources("acme/app", repos["dir"]))  # type: ignore[arg-type]
    assert not any(outside.iterdir()), "nothing may be written through the link"


def test_paths_the_tree_does_not_record_are_ignored(
    repos: dict[str, object], tmp_path: Path
) -> None:
    """A .gitmodules entry whose path is no gitlink of the tree (`../../outside`) is not
    a submodule: nothing is written for it, and the real one is filled."""
    app = repos["app"]
    assert isinstance(app, Path)
    with (app / ".gitmodules").open("a") as fh:
        fh.write('[submodule "evil"]\n\tpath = ../../outside\n\turl = ../lib.git\n')
    run(app, "add", ".gitmodules")
    run(app, "commit", "-qm", "evil entry")
    ws = make_workspace(
        app,
        run(app, "rev-parse", "HEAD"),
        tmp_path / "a" / "ws",
        fill_submodules=Sources("acme/app", repos["dir"]).fill,  # type: ignore[arg-type]
    )
    assert [s.path for s in submodules.declared(ws)] == ["vendor/lib"]
    assert (ws / "vendor" / "lib" / "lib.py").is_file()
    assert not (tmp_path / "outside").exists()


def test_an_evaluation_without_the_clone_is_an_error_verdict(
    repos: dict[str, object], tmp_path: Path
) -> None:
    """Through `evaluate`: the task's verdict is `error`, and its reason says what to do."""
    import shutil

    from swebounty.evaluation import evaluate

    shutil.rmtree(repos["dir"] / "acme__lib")  # type: ignore[operator]
    task = {
        "instance_id": "acme__app-1",
        "repo": "acme/app",
        "base_commit": repos["base"],
        "patch": "",
        "test_patch": "",
        "FAIL_TO_PASS": ["tests/test_app.py::test_it"],
        "PASS_TO_PASS": [],
    }
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    verdicts = evaluate(dataset, "empty", home_dir=tmp_path / "home", repos_dir=repos["dir"])  # type: ignore[arg-type]
    assert [v.status for v in verdicts] == ["error"]
    assert "clone acme/lib into" in (verdicts[0].reason or "")
