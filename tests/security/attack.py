"""What an attack is: a hostile patch (or a raw record) and the verdict it must get."""

from __future__ import annotations

from dataclasses import dataclass, field

JUNIT = "/tmp/swebounty-junit.xml"  # where pytest writes, inside the sandbox (testrun.py)


@dataclass(frozen=True)
class Link:
    """A symbolic link the patch adds."""

    target: str


@dataclass(frozen=True)
class Attack:
    name: str
    klass: str  # the class: host, grading, laundering, resources, records
    what: str
    status: str  # the exact verdict; "record_error" for a record refused at load
    flags: frozenset[str] = frozenset()
    fix: bool = False
    task: int = 0
    files: dict[str, str | bytes | Link | None] = field(default_factory=dict)
    code: str = ""  # appended to tinytext/__init__.py
    reverted: frozenset[str] = frozenset()  # exactly the verdict's test_infra_reverted
    reason: str = ""  # a substring of the verdict's reason
    record: dict[str, object] | None = None  # a raw predictions record instead of a patch
    needs_root: bool = False  # the bound it tests is the launcher's tmpfs (root only)


F = frozenset
