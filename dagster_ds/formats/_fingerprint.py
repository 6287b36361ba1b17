"""Source fingerprints: content hashes of local files, storage checksums of remote ones."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import xxhash

from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._io import is_local, url_to_fs
from dagster_ds.formats._resolve import storage_checksum
from dagster_ds.formats._stat_records import StatKey, StatRecords, stat_key, trusted

_CHUNK = 8 << 20
_MEMO_LIMIT = 100_000
_memo: dict[StatKey, tuple[str, int]] = {}  # stat -> (digest, when it was hashed)
_memo_lock = threading.Lock()


def fingerprint_files(
    files: Iterable[ResolvedFile | str | os.PathLike[str]],
    *,
    storage_options: Mapping[str, Any] | None = None,
    state_dir: str | None = None,
) -> str:
    r"""A 128-bit fingerprint (32 hex characters) of a list of data files, in order.

    A local file counts by its content (xxh3-128, streamed), remembered per (path,
    size, mtime, ctime, inode, device): in this process, and with ``state_dir`` in
    a database there that every process on the machine shares, so an unchanged
    file is read once, not once per process. A file changed within 2 seconds of
    being hashed is hashed again (a change in the same timestamp tick keeps its
    stat). Touching a file without changing it leaves the fingerprint unchanged. A
    remote file counts by the checksum or ETag its storage reports, with its size
    (the checksum a `ResolvedFile` captured at resolution, else ``fs.info()``), and
    by its content where the storage reports none. Paths do not count: moving the
    files elsewhere keeps the fingerprint; changing a byte, or the order, changes it.

    Args:
        files: Resolved files (or paths and URLs), in dataset order.
        storage_options: Passed to the fsspec filesystem.
        state_dir: A local folder for the records of local files' digests (none:
            remembered in this process only).

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
    files = list(files)
    with _records(state_dir, files) as records:
        for file in files:
            digest.update(_file_fingerprint(file, storage_options, records).encode())
            digest.update(b"\n")
    return digest.hexdigest()


def fingerprint_each_file(
    files: Iterable[ResolvedFile | str | os.PathLike[str]],
    *,
    storage_options: Mapping[str, Any] | None = None,
    state_dir: str | None = None,
) -> list[str]:
    r"""Each file's own fingerprint, ``fingerprint_files([file])``, with one records database.

    What a split of many files needs: its records are opened once for all the
    files, not once per file.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/train.jsonl"
        >>> with open(path, "w") as file:
        ...     _ = file.write('{"text": "a"}\n')
        >>> fingerprint_each_file([path]) == [fingerprint_files([path])]
        True
    """
    files = list(files)
    with _records(state_dir, files) as records:
        return [
            xxhash.xxh3_128_hexdigest(
                _file_fingerprint(file, storage_options, records).encode() + b"\n"
            )
            for file in files
        ]


@contextmanager
def _records(
    state_dir: str | None, files: list[ResolvedFile | str | os.PathLike[str]]
) -> Iterator[StatRecords | None]:
    """The records in ``state_dir`` (if any), those of the files' resolved stats read at once."""
    if state_dir is None:
        yield None
        return
    with StatRecords(state_dir) as records:
        records.prefetch(
            file.stat for file in files if isinstance(file, ResolvedFile) and file.stat is not None
        )
        yield records


def _file_fingerprint(
    file: ResolvedFile | str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None,
    records: StatRecords | None,
) -> str:
    url = file_url(file)
    resolved = file.stat if isinstance(file, ResolvedFile) else None
    if resolved is not None:  # a local file, its path resolved
        return f"content:{_local_digest(url, records, resolved)}"
    if "://" not in url and "::" not in url:  # a local path: skip resolving a filesystem
        return f"content:{_local_digest(os.path.expanduser(url), records, None)}"
    fs, path = url_to_fs(url, storage_options)
    if is_local(fs):
        return f"content:{_local_digest(path, records, None)}"
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


def _local_digest(path: str, records: StatRecords | None, resolved: StatKey | None) -> str:
    """xxh3-128 of a local file's content, remembered while the file's stat is unchanged.

    In this process, and across processes in ``records``; either is believed only
    when the file's last change is not racy (`dagster_ds.formats._stat_records`).
    ``resolved``: the file's stat taken when it was resolved, if any, looked up in
    place of a new one. A file that has to be read is stat'ed again before and
    after, and its digest is remembered only under a stat that held while it was
    read, never under the resolved one.
    """
    key = resolved if resolved is not None else stat_key(path)
    with _memo_lock:
        known = _memo.get(key)
    if known is not None and trusted(key, known[1]):
        return known[0]
    if records is not None and (recorded := records.lookup(key)) is not None:
        return recorded
    if resolved is not None:
        key = stat_key(path)
    hashed_ns = time.time_ns()
    with open(path, "rb") as stream:
        digest = _stream_digest(stream)
    if stat_key(path) == key:  # unchanged while read: remember it
        with _memo_lock:
            if len(_memo) >= _MEMO_LIMIT:
                _memo.clear()
            _memo[key] = (digest, hashed_ns)
        if records is not None:
            records.record(key, digest, hashed_ns)
    return digest
