"""Source fingerprints: content hashes of local files, storage checksums of remote ones."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import xxhash

from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._io import is_local, url_to_fs
from dagster_ds.formats._resolve import storage_checksum

_CHUNK = 8 << 20
_MEMO_LIMIT = 100_000
_memo: dict[tuple[str, int, int, int, int, int], str] = {}
_memo_lock = threading.Lock()


def fingerprint_files(
    files: Iterable[ResolvedFile | str | os.PathLike[str]],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    r"""A 128-bit fingerprint (32 hex characters) of a list of data files, in order.

    A local file counts by its content (xxh3-128, streamed), remembered in-process
    per (path, size, mtime, inode, ...) so an unchanged file is read once per
    process; touching a file without changing it leaves the fingerprint unchanged. A
    remote file counts by the checksum or ETag its storage reports, with its size
    (the checksum a `ResolvedFile` captured at resolution, else ``fs.info()``), and
    by its content where the storage reports none. Paths do not count: moving the
    files elsewhere keeps the fingerprint; changing a byte, or the order, changes it.

    Args:
        files: Resolved files (or paths and URLs), in dataset order.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        32 hexadecimal characters.

    Example:
        >>> import shutil, tempfile
        >>> path = tempfile.mkdtemp() + "/train.jsonl"
        >>> with open(path, "w") as file:
        ...     _ = file.write('{"text": "a"}\n')
        >>> fingerprint = fingerprint_files([path])
        >>> fingerprint
        'c5d8d4626e6569b29bb7f1c39fa9c5e9'
        >>> moved = shutil.move(path, tempfile.mkdtemp() + "/renamed.jsonl")
        >>> fingerprint_files([moved]) == fingerprint
        True
    """
    digest = xxhash.xxh3_128()
    for file in files:
        digest.update(_file_fingerprint(file, storage_options).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _file_fingerprint(
    file: ResolvedFile | str | os.PathLike[str], storage_options: Mapping[str, Any] | None
) -> str:
    url = file_url(file)
    if "://" not in url and "::" not in url:  # a local path: skip resolving a filesystem
        return f"content:{_local_digest(os.path.expanduser(url))}"
    fs, path = url_to_fs(url, storage_options)
    if is_local(fs):
        return f"content:{_local_digest(path)}"
    checksum = file.checksum if isinstance(file, ResolvedFile) else None
    size = file.size if isinstance(file, ResolvedFile) else None
    if checksum is None:
        info = fs.info(path)
        checksum, size = storage_checksum(info, local=False), info.get("size")
    if checksum is not None:
        return f"{checksum}:size={size}"
    with fs.open(path, "rb") as stream:
        return f"content:{_stream_digest(stream)}"


def _stream_digest(stream: Any) -> str:
    digest = xxhash.xxh3_128()
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _local_digest(path: str) -> str:
    """xxh3-128 of a local file's content, memoised while the file's stat is unchanged."""
    before = os.stat(path)
    key = (
        os.path.abspath(path),
        before.st_size,
        before.st_mtime_ns,
        before.st_ctime_ns,
        before.st_ino,
        before.st_dev,
    )
    with _memo_lock:
        known = _memo.get(key)
    if known is not None:
        return known
    with open(path, "rb") as stream:
        digest = _stream_digest(stream)
    after = os.stat(path)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == key[1:4]:
        with _memo_lock:
            if len(_memo) >= _MEMO_LIMIT:
                _memo.clear()
            _memo[key] = digest
    return digest
