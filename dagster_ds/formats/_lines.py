"""Reading a byte stream in blocks that end on line boundaries, with line numbers."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import BinaryIO

DEFAULT_BLOCK_SIZE = 4 << 20


def line_blocks(
    stream: BinaryIO, block_size: int = DEFAULT_BLOCK_SIZE
) -> Iterator[tuple[int, bytes]]:
    r"""Yield ``(first_line_number, block)``; each block holds whole lines (1-based numbers).

    Every block but the last ends with ``\n``. A line longer than ``block_size`` makes
    one longer block. A UTF-8 byte order mark at the start is dropped.
    """
    line = 1
    carry = b""
    at_start = True
    while True:
        data = stream.read(block_size)
        buffer = carry + data
        if at_start:
            at_start = False
            if buffer.startswith(codecs.BOM_UTF8):
                buffer = buffer[len(codecs.BOM_UTF8) :]
        if not data:
            if buffer:
                yield line, buffer
            return
        cut = buffer.rfind(b"\n")
        if cut < 0:
            carry = buffer
            continue
        block, carry = buffer[: cut + 1], buffer[cut + 1 :]
        yield line, block
        line += block.count(b"\n")


def excerpt(line: bytes, limit: int = 80) -> str:
    """The start of a line as text, for error messages."""
    text = line[: limit * 4].decode("utf-8", "replace").rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + "..."
