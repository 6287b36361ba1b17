"""Finding a CSV row by its length in bytes, for the error on a row too long to read."""

from __future__ import annotations

import re
from typing import BinaryIO

from dagster_ds.formats._lines import excerpt

_CHUNK = 1 << 20
_HEAD = 320


def long_row(stream: BinaryIO, quote_char: str, limit: int, skip: int) -> tuple[int, str] | None:
    r"""The 1-based first line and start of the first long row after ``skip`` rows.

    Rows end at line breaks outside quoted values (a doubled quote inside a value opens
    and closes again, so it counts right). Blank lines are not rows, as for Arrow.

    Args:
        stream: The file's bytes, from the start.
        quote_char: The quoting character ("" for none).
        limit: A row of at least this many bytes is long.
        skip: Rows to pass over first (the header and the rows already read).

    Returns:
        ``(line, excerpt)``, or None when no such row follows.

    Example:
        >>> import io
        >>> data = b'id,text\n1,"a\nb"\n\n2,' + b"x" * 50 + b"\n3,c\n"
        >>> long_row(io.BytesIO(data), '"', 40, skip=1)
        (5, '2,xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')
    """
    quote = re.escape(quote_char.encode()) if quote_char else b""
    boundaries = re.compile(b"[\n" + quote + b"]")
    line = start_line = 1
    start = position = 0
    head = b""
    quoted = False
    while chunk := stream.read(_CHUNK):
        if position == start:
            head = chunk[:_HEAD]
        for match in boundaries.finditer(chunk):
            if match.group() != b"\n":
                quoted = not quoted
                continue
            line += 1
            if quoted:
                continue
            end = position + match.end()
            blank = not head.strip(b"\r\n")
            if not blank:
                if skip <= 0 and end - start >= limit:
                    return start_line, _first_line(head)
                skip -= 1
            start, start_line, head = end, line, chunk[match.end() : match.end() + _HEAD]
        position += len(chunk)
        if skip <= 0 and position - start >= limit:
            return start_line, _first_line(head)
    return None


def _first_line(head: bytes) -> str:
    return excerpt(head.split(b"\n", 1)[0])
