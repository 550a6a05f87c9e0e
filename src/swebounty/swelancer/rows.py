"""SWE-Lancer's CSV rows: reading them, their literal columns, and the fields every task has.

The list and dict columns (`manager_data`, `acceptable_folders`, `prompt`) are Python literals
(JSON is accepted too), read with `ast.literal_eval`, which builds data and never runs code.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swebounty.tasks import MAX_TASK_TEXT_BYTES

REPO = "Expensify/App"
VALUE_SOURCE = "swelancer"
VARIANTS = ("swe_manager", "ic_swe")
REQUIRED = {"question_id", "variant", "price"}
# A SWE-Lancer prompt quotes the whole issue and every proposal: far over csv's 128 KiB default.
_FIELD_LIMIT = MAX_TASK_TEXT_BYTES
_MAX_LITERAL_BYTES = 8 * 1024 * 1024
_ISSUE_IN_PROMPT = re.compile(
    r"(?:addressing|fixing) the following issue:\s*\n(.*?)\n\s*(?:You will be paid|The reward for)",
    re.S,
)


class RowError(ValueError):
    """A row that cannot be a task; the message says what it lacks."""


def literal(text: str, what: str) -> Any:
    """A column holding a Python literal or JSON: None when empty."""
    text = (text or "").strip()
    if not text or text.lower() == "nan":
        return None
    if len(text.encode("utf-8")) > _MAX_LITERAL_BYTES:
        raise RowError(f"{what} is over {_MAX_LITERAL_BYTES} bytes")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
        raise RowError(f"{what} is not a Python or JSON literal: {exc}") from None


def split_name(path: Path) -> str:
    """SWE-Lancer's split for a file without a `set` column: `swelancer_tasks_lite` is "lite"."""
    stem = path.stem.lower()
    for prefix in ("all_swelancer_tasks", "swelancer_tasks"):
        if stem.startswith(prefix):
            return stem[len(prefix) :].strip("_-") or "all"
    return stem


def price(row: dict[str, str]) -> float:
    try:
        price = float(row.get("price") or "")
    except ValueError:
        raise RowError(f"price {row.get('price', '')[:40]!r} is not a number") from None
    if not 0 <= price < 1e9:
        raise RowError(f"price {price} is not a dollar amount")
    return price


def _first_message(prompt: Any) -> str:
    """The text of the first message of a `prompt` column (a list of chat messages)."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
        return str(prompt[0].get("content") or "")
    return str(prompt or "")


def problem_statement(row: dict[str, str], manager: dict[str, Any] | None) -> str:
    """The issue as the freelancer saw it: title and description, from the newer layout's
    columns, else `manager_data`, else the prompt's quote of it."""
    title, body = row.get("title") or "", row.get("description") or ""
    if not (title or body) and manager:
        title = str(manager.get("title") or "")
        body = str(manager.get("html_description") or manager.get("issue_repo_steps") or "")
    if title or body:
        return f"{title}\n\n{body}".strip()
    text = _first_message(literal(row.get("prompt") or "", "prompt"))
    match = _ISSUE_IN_PROMPT.search(text)
    return (match.group(1) if match else text).strip()


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, _FIELD_LIMIT))
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            reader = csv.DictReader(handle)
            for row in reader:
                yield reader.line_num, {k: v for k, v in row.items() if isinstance(k, str)}
    finally:
        csv.field_size_limit(limit)
