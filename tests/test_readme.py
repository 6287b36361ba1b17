"""The project's own docs read cleanly: no line pasted twice."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A line counts when it has this many letters or digits: fences, rules, table
# separators and one-word lines may repeat.
_MEANINGFUL = 20


def repeated_lines(text: str) -> list[str]:
    """The lines of ``text`` (stripped) that stand more than once and say something."""
    lines = [line.strip() for line in text.splitlines()]
    counts = Counter(line for line in lines if len(re.sub(r"\W", "", line)) >= _MEANINGFUL)
    return sorted(line for line, count in counts.items() if count > 1)


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"])
def test_no_line_stands_twice(name: str) -> None:
    assert repeated_lines((ROOT / name).read_text(encoding="utf-8")) == []


def test_a_pasted_paragraph_is_caught() -> None:
    paragraph = "plus asset checks (schema, row counts), a nightly schedule, the\n"
    assert repeated_lines(paragraph + "something else entirely\n" + paragraph) == [
        paragraph.strip()
    ]
