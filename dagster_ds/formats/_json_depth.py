"""How deep JSON may nest: checked before parsing, in bounded memory.

Arrow's JSON parser recurses once per level of objects and lists, so a deep enough line
overflows the stack and kills the process (about 16,900 levels on an 8 MiB stack, far
fewer on a small thread stack) and its time grows with the square of the depth; Python's
``json`` module stops near 1,000 levels. What Arrow stores is bounded too: its IPC files
(the cache of a map-style dataset, ``save_to_disk``) hold 64 levels, and Parquet files
written deeper than 50 nested lists are refused when read.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import pyarrow as pa

from dagster_ds.errors import FormatOptionError, MalformedFileError
from dagster_ds.formats._lines import excerpt

# The most Arrow IPC files, and so the cache, hold (a record counts as one level).
DEFAULT_MAX_DEPTH = 64
# The most any read accepts: well within the parser's stack, and Python's json module.
MAX_JSON_DEPTH = 500

_NOT_OPENINGS_OR_NEWLINES = bytes(byte for byte in range(256) if byte not in b"{[\n")


def check_depth_option(max_depth: int) -> None:
    """Refuse a ``max_depth=`` that is not from 1 to `MAX_JSON_DEPTH`."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        raise FormatOptionError(f"max_depth must be an integer, got {max_depth!r}.")
    if not 1 <= max_depth <= MAX_JSON_DEPTH:
        raise FormatOptionError(
            f"max_depth must be from 1 to {MAX_JSON_DEPTH}, got {max_depth!r}: deeper JSON "
            "would overflow the stack of Arrow's JSON parser. Flatten such values, or store "
            "them as JSON strings."
        )


def check_nesting(url: str, document: bytes, max_depth: int, *, around: int) -> None:
    """Refuse a whole-JSON document whose records nest deeper than ``max_depth``.

    The records sit ``around`` levels down (1 in a top-level list, 2 under ``field=``).
    Brackets are counted for the whole document in Arrow (vectorised); a line that
    seems too deep is checked exactly (brackets inside strings do not count).
    """
    limit = max_depth + around
    if document.count(b"{") + document.count(b"[") <= limit:
        return
    start = 0
    while start < len(document):
        position = _first_too_deep(document, start, limit)
        if position is None:
            return
        first = document.rfind(b"\n", 0, position) + 1
        end = document.find(b"\n", position)
        end = len(document) if end < 0 else end
        text = document[first:end]
        if nesting_depth(text, stop_above=limit) > limit:
            _refuse(url, 1 + document.count(b"\n", 0, first), text, max_depth)
        start = end + 1  # brackets in strings misled the count: go on after this line


def check_line_nesting(url: str, line: int, block: bytes, max_depth: int) -> None:
    """Refuse a line of JSON Lines nested deeper than ``max_depth``, before parsing it.

    A line can be that deep only if it holds more than ``max_depth`` opening brackets,
    which one C-speed pass counts; those few lines are checked exactly (brackets inside
    strings do not count).
    """
    openings = block.translate(None, _NOT_OPENINGS_OR_NEWLINES).split(b"\n")
    if max(map(len, openings)) <= max_depth:
        return
    texts = block.split(b"\n")
    for index, found in enumerate(openings):
        if len(found) > max_depth and nesting_depth(texts[index], max_depth) > max_depth:
            _refuse(url, line + index, texts[index], max_depth)


def _refuse(url: str, number: int, text: bytes, max_depth: int) -> NoReturn:
    if max_depth < MAX_JSON_DEPTH:
        fix = (
            f"Pass max_depth= (up to {MAX_JSON_DEPTH}) to read deeper values; above "
            f"{DEFAULT_MAX_DEPTH}, load with streaming=True (a map-style dataset's cache "
            f"holds {DEFAULT_MAX_DEPTH} levels). Or flatten the value, or store it as a "
            "JSON string"
        )
    else:
        fix = "Flatten the value, or store it as a JSON string"
    raise MalformedFileError(
        f"JSON file {url!r}, line {number}: a value is nested more than {max_depth} levels "
        f"deep (objects and lists). {fix}. The line starts: {excerpt(text)!r}.",
        path=url,
        line=number,
        excerpt=excerpt(text),
    )


def _first_too_deep(block: bytes, start: int, limit: int) -> int | None:
    import pyarrow.compute as pc

    data = pa.py_buffer(block)[start:]
    values = pa.Array.from_buffers(pa.uint8(), len(data), [None, data])
    opens = pc.or_(pc.equal(values, _byte("{")), pc.equal(values, _byte("[")))
    closes = pc.or_(pc.equal(values, _byte("}")), pc.equal(values, _byte("]")))
    steps = pc.subtract(pc.cast(opens, pa.int32()), pc.cast(closes, pa.int32()))
    depth = pc.cumulative_sum(steps)
    deepest = pc.max(depth).as_py()
    if deepest is None or deepest <= limit:
        return None
    return start + int(pc.index(pc.greater(depth, pa.scalar(limit, depth.type)), True).as_py())


def _byte(character: str) -> pa.Scalar[Any]:
    return pa.scalar(ord(character), pa.uint8())


def nesting_depth(text: bytes | str, stop_above: int | None = None) -> int:
    """How deep JSON ``text`` nests objects and lists; brackets inside strings do not count.

    One regular-expression pass, never recursive, so any depth is safe to measure.
    Counting stops at the first level past ``stop_above``; an unterminated string ends
    the count (nothing after it can nest).

    Example:
        >>> nesting_depth('{"a": [1, "]]", {"b": []}]}')
        4
        >>> nesting_depth(b"[" * 100_000, stop_above=32)
        33
    """
    # Brackets, quotes and backslashes are single bytes in UTF-8 and never part of another
    # character's bytes, so the encoded text has the same structure.
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = deepest = position = 0
    while (token := _TOKENS.search(data, position)) is not None:
        position = token.end()
        if token.lastgroup == "quote":
            string = _STRINGS.match(data, token.start())
            if string is None:
                break
            position = string.end()
        elif token.lastgroup == "open":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    break
        else:
            depth -= 1
    return deepest


_TOKENS = re.compile(rb'(?P<open>[\[{])|(?P<close>[\]}])|(?P<quote>")')
_STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
