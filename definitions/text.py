"""Plain-Python text helpers of the example pipeline: cleaning and a word tokenizer.

These are ordinary functions in the project's own module, so they are hashed
by value: edit one (say, `MIN_WORDS`) and the assets that use it get a new
code version, become stale in the UI, and recompute on the next run; the
assets that do not use it are skipped.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

MIN_WORDS = 8
TEST_PERCENT = 10

_RULE = re.compile(r"^[*=\-~^\"#]{3,}$")
_TOKEN = re.compile(r"[a-z_][a-z0-9_]*|\d+(?:\.\d+)?|[^\sa-z0-9_]")


def is_heading_rule(line: str) -> bool:
    """A line of ``*``/``=``/``-`` under a reStructuredText heading."""
    return bool(_RULE.match(line.strip()))


def is_code_block(text: str) -> bool:
    """An indented block: a grammar rule, an example session or code."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("   ") for line in lines)


def unwrap(text: str) -> str:
    """One line of text: heading rules dropped, hard line breaks and runs of spaces joined."""
    lines = [line.strip() for line in text.splitlines() if not is_heading_rule(line)]
    return " ".join(" ".join(lines).split())


def clean_example(example: dict[str, Any]) -> dict[str, Any]:
    """The paragraph unwrapped, with whether it is prose."""
    return {
        "text": unwrap(example["text"]),
        "is_code": is_code_block(example["text"]),
    }


def is_prose(example: dict[str, Any]) -> bool:
    """Keep paragraphs of running text with at least `MIN_WORDS` words."""
    return not example["is_code"] and len(example["text"].split()) >= MIN_WORDS


def tokenize(text: str) -> list[str]:
    """Lowercase words, identifiers, numbers and punctuation marks."""
    return _TOKEN.findall(text.lower())


def tokenize_example(example: dict[str, Any]) -> dict[str, Any]:
    """The example's tokens and their count."""
    tokens = tokenize(example["text"])
    return {"tokens": tokens, "num_tokens": len(tokens)}


def is_test_topic(example: dict[str, Any]) -> bool:
    """A stable `TEST_PERCENT` share of topics goes to the test split (whole topics, no leak)."""
    return zlib.crc32(example["topic"].encode()) % 100 < TEST_PERCENT
