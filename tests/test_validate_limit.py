"""`validate --limit N`: the first N candidates in turn, the same ones again (issue 28's second,
independent validation), every candidate's record kept."""

from __future__ import annotations

from pathlib import Path

from repo_helpers import base_clones
from swebounty.collect.batch import validate
from swebounty.tasks import load_tasks
from test_collect_validate import Ctx, Script, _task, run


def test_a_limit_validates_the_first_candidates_in_turn_and_the_same_ones_again(
    tmp_path: Path,
) -> None:
    """`--limit N`: the first N in turn; the same N again decides the same; records all kept."""
    ids = ["a1", "a2", "a3", "b1", "b2"]
    table = {(i, w): [run(a="failed" if w == "before" else "passed")] for i in ids for w in ("before", "after")}  # fmt: skip
    candidates = [_task(i).model_copy(update={"repo": f"o/{i[0]}"}) for i in ids]
    script = Script(table)
    out = tmp_path / "tasks.jsonl"
    ctx = Ctx(tmp_path, repos_dir=base_clones(tmp_path / "repos", ["o/a", "o/b"]))
    first = validate(candidates, out, ctx, runner=script, limit=3)  # type: ignore[arg-type]
    assert (first.candidates, first.valid) == (3, 3)
    assert sorted({c[0] for c in script.calls}) == ["a1", "a2", "b1"]
    again = validate(candidates, out, ctx, runner=script, limit=3)  # type: ignore[arg-type]
    assert again.resumed == 3 and again.valid == 0
    rest = validate(candidates, out, ctx, runner=script)  # type: ignore[arg-type]
    assert rest.resumed == 3 and rest.valid == 2
    assert sorted(t.instance_id for t in load_tasks(out)[0]) == ids
    assert not (tmp_path / "tasks.dropped.jsonl").exists()
    smaller = validate(candidates, out, ctx, runner=script, limit=1)  # type: ignore[arg-type]
    assert smaller.resumed == 1 and len(load_tasks(out)[0]) == 5  # nothing set aside
