"""The resolved data file record, shared by resolution, readers and fingerprints."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dagster_ds.formats._stat_records import StatKey


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
        stat: A local file's stat when it was resolved (`stat_key`'s fields), so that
            fingerprinting it right after resolution stats it no second time; None
            for remote files and files given by path. Not part of equality.

    Example:
        >>> ResolvedFile("/data/train.csv", 1024).url
        '/data/train.csv'
    """

    url: str
    size: int
    checksum: str | None = None
    stat: StatKey | None = field(default=None, compare=False, repr=False)


def file_url(file: ResolvedFile | str | os.PathLike[str]) -> str:
    """The URL of a `ResolvedFile`, or a path or URL as given."""
    return file.url if isinstance(file, ResolvedFile) else os.fspath(file)
