from __future__ import annotations

import pytest

from dagster_ds.cache._units import format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 0),
        ("512", 512),
        ("20GB", 20 * 10**9),
        ("20gb", 20 * 10**9),
        ("20G", 20 * 10**9),
        ("1.5 GiB", 3 * 2**29),
        ("500M", 500 * 10**6),
        ("2kB", 2000),
        ("1KiB", 1024),
        ("3TB", 3 * 10**12),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "GB", "-1GB", "20 XB", "twenty"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (1_500_000, "1.5 MB"), (20 * 10**9, "20.0 GB")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("30m", 1800), ("1h", 3600), ("7d", 604800), ("0", 0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_parse_duration_rejects() -> None:
    with pytest.raises(ValueError, match="Invalid duration"):
        parse_duration("soon")
