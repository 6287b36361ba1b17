"""Human-readable sizes and durations for the command line: "20GB", "1.5 GiB", "90m"."""

from __future__ import annotations

import re

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(i?)(b?)\s*", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(s|m|h|d|w)?\s*", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_size(text: str | int) -> int:
    """Bytes in a size such as ``"20GB"`` (10**9), ``"1.5GiB"`` (2**30), ``"500M"`` or ``"0"``.

    An int is a number of bytes already.

    Raises:
        ValueError: ``text`` is not a size.
    """
    if isinstance(text, int):
        return text
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"Invalid size {text!r}: use a number and a unit, "
            "like '20GB', '1.5GiB', '500MB' or '0'."
        )
    number, prefix, binary, _ = match.groups()
    base = 1024 if binary else 1000
    return int(float(number) * base ** _POWERS[prefix.lower()])


def format_size(size: int) -> str:
    """A size in decimal units, as `parse_size` reads them: ``1234567`` -> ``"1.2 MB"``."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``"90"`` (seconds), ``"30m"``, ``"1h"``, ``"7d"``.

    Raises:
        ValueError: ``text`` is not a duration.
    """
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"Invalid duration {text!r}: use a number and s, m, h, d or w, like '1h'.")
    number, unit = match.groups()
    return float(number) * _SECONDS[(unit or "s").lower()]
