"""The resolved data file record, shared by resolution, readers and fingerprints."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ResolvedFile:
    """One concrete data file found by `resolve_data_files`.

    Attributes:
        url: The file's path (local files) or URL with its protocol (``memory://``,
            ``s3://``); any reader of this module accepts it as is.
        size: Size in bytes when resolved.
        checksum: The storage's checksum or ETag (``"ETag:..."``) for remote files
            when the store reports one; None for local files, which are
            fingerprinted by content.

    Example:
        >>> ResolvedFile("/data/train.csv", 1024).url
        '/data/train.csv'
    """

    url: str
    size: int
    checksum: str | None = None


def file_url(file: ResolvedFile | str | os.PathLike[str]) -> str:
    """The URL of a `ResolvedFile`, or a path or URL as given."""
    return file.url if isinstance(file, ResolvedFile) else os.fspath(file)
