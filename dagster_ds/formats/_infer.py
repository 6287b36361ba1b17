"""Format and compression inference from file names."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable
from typing import Literal, TypeAlias

from dagster_ds.errors import UnknownFormatError

Format: TypeAlias = Literal["parquet", "json", "csv", "tsv", "text", "arrow"]
Compression: TypeAlias = Literal["gzip", "bz2", "zstd", "xz"]

FORMATS: tuple[Format, ...] = ("arrow", "csv", "json", "parquet", "text", "tsv")

_EXTENSION_TO_FORMAT: dict[str, Format] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".geoparquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "text",
    ".text": "text",
    ".arrow": "arrow",
    ".feather": "arrow",
}
_EXTENSION_TO_COMPRESSION: dict[str, Compression] = {
    ".gz": "gzip",
    ".gzip": "gzip",
    ".bz2": "bz2",
    ".zst": "zstd",
    ".zstd": "zstd",
    ".xz": "xz",
}


def _extensions(url: str) -> tuple[str, str]:
    """The last extension and the one before it, lower-cased (``.gz``, ``.jsonl``)."""
    name = posixpath.basename(url.split("::")[0].rstrip("/")).lower()
    stem, last = posixpath.splitext(name)
    return posixpath.splitext(stem)[1], last


def infer_compression(url: str) -> Compression | None:
    """The compression codec named by a file's extension, or None.

    Example:
        >>> infer_compression("data/train.jsonl.zst")
        'zstd'
    """
    return _EXTENSION_TO_COMPRESSION.get(_extensions(url)[1])


def _format_of(url: str) -> Format | None:
    before, last = _extensions(url)
    if last in _EXTENSION_TO_COMPRESSION:
        last = before
    return _EXTENSION_TO_FORMAT.get(last)


def infer_format(files: str | Iterable[str]) -> Format:
    """The format of one file, or the single format shared by several, from extensions.

    Compression extensions are looked through (``train.jsonl.gz`` is ``json``).

    Args:
        files: A path or URL, or several (for example the URLs of resolved data files).

    Returns:
        One of ``"parquet"``, ``"json"``, ``"csv"``, ``"tsv"``, ``"text"``, ``"arrow"``.

    Raises:
        UnknownFormatError: An extension is not recognised, or the files mix formats.

    Example:
        >>> infer_format(["a/train-0.jsonl.gz", "a/train-1.jsonl.gz"])
        'json'
    """
    urls = [files] if isinstance(files, str) else list(files)
    if not urls:
        raise UnknownFormatError("Cannot infer a format from an empty list of files; pass format=.")
    unknown = [url for url in urls if _format_of(url) is None]
    if unknown:
        known = ", ".join(sorted(_EXTENSION_TO_FORMAT))
        raise UnknownFormatError(
            f"Cannot infer the format of {unknown[0]!r} from its extension "
            f"({len(unknown)} of {len(urls)} file(s) unrecognised). Known extensions: {known}, "
            "optionally followed by .gz, .bz2, .zst or .xz. Pass format= explicitly."
        )
    counts = Counter(_format_of(url) for url in urls)
    if len(counts) > 1:
        found = ", ".join(f"{fmt} ({n} file(s))" for fmt, n in counts.most_common())
        raise UnknownFormatError(
            f"The data files mix several formats: {found}. Narrow data_files to one format, "
            "or pass format= to read them all with one reader."
        )
    fmt = _format_of(urls[0])
    assert fmt is not None
    return fmt
