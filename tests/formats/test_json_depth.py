"""Measuring JSON nesting without parsing: exact, string-aware, and safe at any depth."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dagster_ds.formats import nesting_depth

_BRACKETY_TEXT = st.text(alphabet='[]{}"\\ab\n', max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _BRACKETY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_BRACKETY_TEXT, inner, max_size=3),
    max_leaves=20,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(_JSON, st.booleans())
def test_depth_is_exact_with_brackets_and_escapes_inside_strings(value: Any, ascii_only: bool):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert nesting_depth(text) == _depth(value)
    assert nesting_depth(text.encode()) == _depth(value)


def test_counting_stops_past_the_limit_on_a_body_far_too_deep_to_parse():
    assert nesting_depth(b"[" * 1_000_000, stop_above=32) == 33
    assert nesting_depth(b'{"a":' * 100_000, stop_above=5) == 6


def test_an_unterminated_string_ends_the_count():
    assert nesting_depth(b'[["open [[[[') == 2
    assert nesting_depth('["\\"[[[') == 1
