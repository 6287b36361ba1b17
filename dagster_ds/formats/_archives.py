"""Data files inside ``.zip`` and ``.tar`` archives (also ``.tar.gz``, ``.tgz``, ...).

As the anchor does, an archive given as a data file stands for the data files it
holds. They are read in place through fsspec's archive file systems (chained URLs
such as ``zip://train.jsonl::data.zip``): nothing is extracted to disk.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any, cast

from dagster_ds.errors import DataFilesNotFoundError, MalformedFileError
from dagster_ds.formats._file import ResolvedFile

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_IGNORED = frozenset({"README.md", "dataset_info.json", "dataset_infos.json", "config.json"})


def archive_kind(url: str) -> str | None:
    """``"zip"`` or ``"tar"`` when ``url`` names an archive, else None."""
    name = url.split("::")[-1].lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(_TAR_SUFFIXES):
        return "tar"
    return None


def expand_archives(
    files: Iterable[ResolvedFile], storage_options: Mapping[str, Any] | None
) -> list[ResolvedFile]:
    """``files`` with each archive replaced by the data files inside it, sorted by name."""
    expanded: list[ResolvedFile] = []
    for file in files:
        kind = archive_kind(file.url)
        expanded.extend([file] if kind is None else _members(file.url, kind, storage_options))
    return expanded


def _members(url: str, kind: str, storage_options: Mapping[str, Any] | None) -> list[ResolvedFile]:
    import tarfile  # only for archives (the errors their readers raise)
    import zipfile

    import fsspec

    try:
        fs = fsspec.filesystem(kind, fo=url, target_options=dict(storage_options or {}))
        found = cast(dict[str, dict[str, Any]], fs.find("", detail=True))
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, tarfile.TarError) as error:
        raise MalformedFileError(
            f"{url!r} is not a readable {kind} archive ({error}). Check the file, or give "
            "the data files it should hold directly.",
            path=url,
        ) from error
    members = [
        ResolvedFile(url=f"{kind}://{name}::{url}", size=int(info.get("size") or 0))
        for name, info in sorted(found.items())
        if info.get("type") == "file" and _is_data_file(name)
    ]
    if not members:
        raise DataFilesNotFoundError(
            f"The archive {url!r} holds no data file (hidden files, '_'-prefixed and "
            "metadata files are ignored). Check the archive.",
            pattern=url,
            searched=url,
        )
    return members


def _is_data_file(name: str) -> bool:
    parts = name.strip("/").split("/")
    if any(part.startswith((".", "_")) for part in parts):  # __MACOSX, .DS_Store
        return False
    return posixpath.basename(name) not in _IGNORED
