"""Records: what a dataset or a predictions file holds before it is a Task or a Submission.

Reading them (`.jsonl`; `.json` as a list, an object keyed by instance id, or really JSON
lines; `.parquet`) one at a time with where each came from, so one malformed record is reported
and the rest still load; the checks every hostile field passes (ids that name files, bounded
UTF-8 text); and writing models back as JSON lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

# Every record is hostile until checked: ids become file names, numbers become SQLite integers,
# text must be storable (a lone surrogate is not UTF-8).
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
SAFE_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
# A commit id in practice; anything git could take for an option or a range is refused.
COMMIT_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/-]{0,99}")
# git's `transport::address` syntax runs a remote helper (`ext::sh -c ...` runs any command).
REMOTE_HELPER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")


class RecordError(BaseModel):
    """A record that could not be read, with where it came from and what to do."""

    source: str
    where: str
    message: str


def safe_id(value: str, what: str = "instance_id") -> str:
    """`value` if it can name a file or folder, else ValueError saying what is allowed."""
    if not SAFE_ID.fullmatch(value):
        raise ValueError(
            f"{what} {value[:80]!r} is not a safe name: use letters, digits and . _ + - "
            "(at most 200, starting with a letter or digit); it names files and folders"
        )
    return value


def bounded_text(value: str, limit: int, what: str) -> str:
    """`value` if it is storable UTF-8 of at most `limit` bytes, else ValueError naming `what`."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is not valid UTF-8 text ({exc.reason} at {exc.start})") from exc
    if size > limit:
        raise ValueError(f"{what} is {size} bytes, over the {limit}-byte limit")
    return value


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included (each must pass bounded_text)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield (location, raw record) from .jsonl, .json (list or dict) or .parquet files.

    A malformed JSON line yields (location, exception) instead of stopping the read.
    """
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        from swebounty.extras import require

        require("parquet", f"reading {path.name}", "pyarrow")
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist()):
            yield f"row {i}", row
        return
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    if suffix == ".jsonl" or (suffix != ".json" and not text.lstrip().startswith(("[", "{"))):
        yield from _jsonl_text(text)
        return
    try:
        data = json.loads(text)
    except RecursionError:
        yield "file", ValueError("JSON nested too deeply")
        return
    except json.JSONDecodeError:
        # A .json file that is really JSON lines: common enough to accept.
        yield from _jsonl_text(text)
        return
    if isinstance(data, list):
        for i, item in enumerate(data):
            yield f"item {i}", item
    elif isinstance(data, dict):
        for key, item in data.items():
            if isinstance(item, dict):
                item = {"instance_id": key, **item}
            yield f"key {key!r}", item
    else:
        yield "file", ValueError(f"expected a JSON list or object, got {type(data).__name__}")


def _jsonl_text(text: str) -> Iterator[tuple[str, Any]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            record = exc
        except RecursionError:
            record = ValueError("JSON nested too deeply")
        yield f"line {lineno}", record


def describe_invalid(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors()]
        return "; ".join(parts[:5])
    return str(exc)


def undecodable_ids(raw: bytes) -> list[str]:
    """The instance ids ('?' when unreadable) of the lines of `raw` that are not UTF-8.

    Decoding with replacement would silently corrupt a patch: the caller reports these records
    instead (an empty list: the file is not UTF-8, though no single line says where)."""
    ids = []
    for line in raw.splitlines():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            try:
                instance_id = json.loads(text).get("instance_id", "?")
            except (json.JSONDecodeError, AttributeError):
                instance_id = "?"
            ids.append(instance_id)
    return ids


def write_jsonl(path: str | Path, items: Iterable[BaseModel]) -> None:
    """Write `items` to `path`, one JSON object a line (what read_records reads back)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(item.model_dump_json() + "\n")
