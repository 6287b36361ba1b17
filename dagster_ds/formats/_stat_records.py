"""What each local source file hashed to, remembered across processes by its stat.

Git's index and DVC's state database do the same: a file whose (path, size,
mtime, ctime, inode, device) are those recorded when it was hashed has the
recorded digest, so a new process reads none of an unchanged source.

A record is trusted only when the file's last change (mtime or ctime) is older
than the moment it was hashed by more than `RACY_NS`: a file changed within
that window could have changed again in the same timestamp tick, with the same
size, leaving its stat as recorded (Git's "racily clean" entries). Such a file
is hashed again, and recorded again with the new hashing time. Each record
carries a checksum of its own fields: a damaged record is ignored, never
believed. The records are an optimisation only: a database that cannot be
opened, read or written (read-only or full disk, a damaged file) costs a read
of the source, never a wrong digest.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable

import xxhash

#: A change this close to the hashing time makes a record untrusted (covers FAT's 2 s).
RACY_NS = 2_000_000_000
DATABASE = "source-stats.sqlite3"

StatKey = tuple[str, int, int, int, int, int]
_Row = tuple[object, ...]  # digest, hashed_ns, checksum (as read: checked before use)
_PREFETCH_CHUNK = 500  # keys per query (SQLite allows 999 parameters at least)


def stat_key(path: str, stat: os.stat_result | None = None) -> StatKey:
    """The stat a record is keyed by: absolute path, size, mtime, ctime, inode, device.

    ``stat``: the file's ``os.stat`` when the caller has it already (an
    ``os.scandir`` entry's), so that the file is not stat'ed again.
    """
    if stat is None:
        stat = os.stat(path)
    return (
        os.path.abspath(path),
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        stat.st_ino,
        stat.st_dev,
    )


class StatRecords:
    """Recorded digests of local files in ``folder`` (an SQLite database), shared by processes.

    Open for one batch of lookups (a ``with`` block): the database connection is
    closed at its end, so none outlives the call or crosses a fork. What the
    block records is written at its end, in one transaction (one sync of the
    database for a split of thousands of files, not one per file).

    Example:
        >>> import tempfile
        >>> with StatRecords(tempfile.mkdtemp()) as records:
        ...     records.lookup(("/x", 1, 0, 0, 1, 1)) is None
        True
    """

    def __init__(self, folder: str) -> None:
        self._path = os.path.join(folder, DATABASE)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._broken = False
        self._pending: dict[str, _Row] = {}  # key text -> digest, when, checksum
        self._fetched: dict[str, _Row | None] = {}  # by `prefetch` (None: no record)

    def __enter__(self) -> StatRecords:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Write what was recorded, and close the database connection, if one was opened."""
        self.flush()
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def flush(self) -> None:
        """Write what was recorded since the last flush, in one transaction."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        connection = self._connect(create=True)
        if connection is None:
            return
        rows = [(key, *record) for key, record in pending.items()]
        try:
            with self._lock, connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO records (key, digest, hashed_ns, checksum)"
                    " VALUES (?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error:
            return

    def prefetch(self, keys: Iterable[StatKey]) -> None:
        """Read the records of ``keys`` now, a few queries for all, for `lookup` to find.

        A query costs SQLite a few stats of the database and its journals: one per
        file would triple the stats of a split's unchanged files.
        """
        texts = list(dict.fromkeys(map(_key_text, keys)))
        connection = self._connect(create=False) if texts else None
        if connection is None:
            return
        fetched: dict[str, _Row | None] = dict.fromkeys(texts)
        try:
            with self._lock:
                for start in range(0, len(texts), _PREFETCH_CHUNK):
                    chunk = texts[start : start + _PREFETCH_CHUNK]
                    rows = connection.execute(
                        "SELECT key, digest, hashed_ns, checksum FROM records"
                        f" WHERE key IN ({', '.join('?' * len(chunk))})",
                        chunk,
                    )
                    for text, digest, hashed_ns, checksum in rows:
                        fetched[text] = (digest, hashed_ns, checksum)
        except sqlite3.Error:
            return
        with self._lock:
            self._fetched.update(fetched)

    def lookup(self, key: StatKey) -> str | None:
        """The digest recorded for ``key`` if the record is intact and trusted, else None."""
        text = _key_text(key)
        with self._lock:
            row = self._pending.get(text)
            prefetched = row is None and text in self._fetched
            if prefetched:
                row = self._fetched[text]
        if row is None and not prefetched:
            connection = self._connect(create=False)
            if connection is None:
                return None
            try:
                with self._lock:
                    row = connection.execute(
                        "SELECT digest, hashed_ns, checksum FROM records WHERE key = ?", (text,)
                    ).fetchone()
            except sqlite3.Error:
                return None
        if row is None:
            return None
        digest, hashed_ns, checksum = row
        if not isinstance(digest, str) or not isinstance(hashed_ns, int):
            return None
        if checksum != _checksum(text, digest, hashed_ns):
            return None
        return digest if trusted(key, hashed_ns) else None

    def record(self, key: StatKey, digest: str, hashed_ns: int) -> None:
        """Remember that the file of ``key`` hashed to ``digest`` at ``hashed_ns`` (see `flush`)."""
        text = _key_text(key)
        with self._lock:
            self._pending[text] = (digest, hashed_ns, _checksum(text, digest, hashed_ns))

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        if self._connection is not None or self._broken:
            return self._connection
        if not create and not os.path.exists(self._path):
            return None
        connection: sqlite3.Connection | None = None
        try:
            os.makedirs(os.path.dirname(self._path), exist_ok=True)
            connection = sqlite3.connect(self._path, timeout=30, check_same_thread=False)
            connection.execute(
                "CREATE TABLE IF NOT EXISTS records"
                " (key TEXT PRIMARY KEY, digest TEXT, hashed_ns INTEGER, checksum TEXT)"
            )
            connection.commit()
        except (OSError, sqlite3.Error):
            if connection is not None:
                connection.close()
            self._broken = True  # read-only, full or damaged: hash the files instead
            return None
        self._connection = connection
        return connection


def trusted(key: StatKey, hashed_ns: int) -> bool:
    """Whether a file last changed as ``key`` says was hashed long enough after that change."""
    changed_ns = max(key[2], key[3])
    return hashed_ns - changed_ns >= RACY_NS


def _key_text(key: StatKey) -> str:
    path, size, mtime_ns, ctime_ns, inode, device = key
    return f"{path}\0{size}\0{mtime_ns}\0{ctime_ns}\0{inode}\0{device}"


def _checksum(key_text: str, digest: str, hashed_ns: int) -> str:
    return xxhash.xxh3_64_hexdigest(f"{key_text}\0{digest}\0{hashed_ns}".encode())
