"""Where the cache's bytes live: a local folder, or any fsspec filesystem.

`Storage` is the small set of operations the cache needs. `LocalStorage` uses
`os` directly (for fsync and atomic directory renames); `FsspecStorage` wraps an
fsspec filesystem, and is the only place where fsspec's untyped API (``Any``)
is touched. Paths are plain strings: OS paths for local storage, the
filesystem's own paths (protocol stripped) for fsspec.
"""

from __future__ import annotations

import abc
import contextlib
import ctypes
import datetime
import errno
import functools
import importlib
import io
import os
import secrets
import shutil
from collections.abc import Mapping
from typing import Any, cast

import xxhash

#: A file of an object store is uploaded in parts of this size (S3's least is 5 MiB), and
#: read ahead by this much.
BLOCK_BYTES = 8 << 20


class Storage(abc.ABC):
    """The operations the cache performs on its root; every path is absolute within it."""

    #: The root as the user gave it (a path or URL), for messages.
    url: str
    #: The root as a path of this storage (an OS path, or the filesystem's own path).
    root: str
    #: True when directories can be renamed atomically and files memory-mapped.
    is_local: bool
    #: True for object stores (S3, GCS, Azure): a whole object is written atomically,
    #: folders are key prefixes, and moving a file copies it.
    object_store: bool = False

    @property
    def identity(self) -> str:
        """Names the store reached: its URL, and for fsspec, the options reaching it."""
        return self.url

    @abc.abstractmethod
    def join(self, *parts: str) -> str:
        """A path under the root."""

    @abc.abstractmethod
    def child(self, path: str, *names: str) -> str:
        """A path under ``path``."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool: ...

    @abc.abstractmethod
    def listdir(self, path: str) -> list[str]:
        """Names of the children of ``path`` (empty if it does not exist)."""

    @abc.abstractmethod
    def makedirs(self, path: str) -> None: ...

    @abc.abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole file; raises FileNotFoundError if it does not exist."""

    @abc.abstractmethod
    def write_bytes(
        self, path: str, data: bytes, *, exclusive: bool = False, durable: bool = True
    ) -> bool:
        """Write a whole file (fsynced if ``durable``).

        With ``exclusive``, return False instead if it already exists.
        """

    @abc.abstractmethod
    def replace_bytes(self, path: str, data: bytes) -> None:
        """Replace a whole file so that readers see the old or the new content, never a mix."""

    def append_bytes(self, path: str, data: bytes) -> None:
        """Add ``data`` at the end of a file (created if absent); not durable.

        Local storage appends in one system call; elsewhere the file is read and
        written again whole (an object store has no append).
        """
        try:
            before = self.read_bytes(path)
        except FileNotFoundError:
            before = b""
        self.write_bytes(path, before + data, durable=False)

    def version(self, path: str) -> str | None:
        """The change marker of the file's current content (see `stamp`); None if it is absent."""
        stamp = self.stamp(path)
        return None if stamp is None else stamp[1]

    def put_if(self, path: str, data: bytes, expected: str | None) -> str | None:
        """Write ``data`` if the file is absent (``expected`` None) or at version ``expected``.

        Returns the new `version`, or None when the condition does not hold. On
        stores with conditional writes (S3's ``If-None-Match``/``If-Match``) this is
        one request, and of two writers racing on one version exactly one succeeds;
        elsewhere it is best effort: a check, then a write.
        """
        if expected is None:
            if not self.write_bytes(path, data, exclusive=True, durable=False):
                return None
        elif self.version(path) != expected:
            return None
        else:
            self.replace_bytes(path, data)
        return self.version(path)

    def remove_if(self, path: str, expected: str) -> bool:
        """Remove the file if it is still at version ``expected``; whether it was removed.

        One conditional request where the store has them (S3), else a check then a removal.
        """
        if self.version(path) != expected:
            return False
        self.remove_file(path)
        return True

    @abc.abstractmethod
    def open_write(self, path: str) -> io.BufferedIOBase:
        """A new file for writing (fails if it exists, where the storage can tell)."""

    @abc.abstractmethod
    def sync(self, file: io.BufferedIOBase) -> None:
        """Flush a file opened by `open_write` to stable storage, before it is closed."""

    @abc.abstractmethod
    def open_read(self, path: str, size: int | None = None) -> io.BufferedIOBase:
        """A file for reading; ``size``: its size when known (spares a request to ask it)."""

    @abc.abstractmethod
    def size(self, path: str) -> int | None:
        """The file's size, or None if it does not exist."""

    @abc.abstractmethod
    def stamp(self, path: str) -> tuple[int, str] | None:
        """(size, change marker) of a file, or None if it does not exist.

        The marker changes whenever the file's content is rewritten (mtime and
        ctime in nanoseconds locally; ETag or modification time elsewhere).
        """

    @abc.abstractmethod
    def newest_mtime(self, path: str) -> float | None:
        """The latest modification time (Unix seconds) of ``path`` and anything below it."""

    @abc.abstractmethod
    def remove_file(self, path: str) -> None:
        """Remove a file; no error if it is already gone."""

    @abc.abstractmethod
    def remove_tree(self, path: str) -> None:
        """Remove a directory and everything below it; no error if it is already gone."""

    @abc.abstractmethod
    def rename_dir(self, source: str, target: str) -> bool:
        """Atomically rename a directory; False if ``target`` exists and is not empty.

        Only local storage supports this (`is_local`).
        """

    @abc.abstractmethod
    def exchange_dirs(self, one: str, other: str) -> bool:
        """Atomically swap two existing directories; False where the OS cannot.

        Only local storage supports this (Linux ``renameat2(RENAME_EXCHANGE)``).
        """

    @abc.abstractmethod
    def move_file(self, source: str, target: str) -> None: ...

    @abc.abstractmethod
    def files_under(self, path: str) -> list[str]:
        """The files below ``path``, as sorted relative paths with ``/`` (empty if none)."""

    @abc.abstractmethod
    def remove_empty_dir(self, path: str) -> None:
        """Remove a directory if it is empty (local storage only; no error otherwise)."""

    @abc.abstractmethod
    def sync_dir(self, path: str) -> None:
        """Make renames and creations inside ``path`` durable (local storage only)."""

    @abc.abstractmethod
    def local_path(self, path: str) -> str | None:
        """The OS path of ``path`` when it can be memory-mapped, else None."""


class LocalStorage(Storage):
    """A folder on a local (POSIX) filesystem."""

    is_local = True

    def __init__(self, root: str, url: str | None = None, *, fsync: bool = True) -> None:
        self.root = os.path.abspath(os.path.expanduser(root))
        self.url = url if url is not None else self.root
        #: False: `sync`, `sync_dir` and durable writes skip fsync (see `CacheStore`'s fsync=).
        self.fsync = fsync

    def join(self, *parts: str) -> str:
        return "/".join((self.root, *parts))  # relative names: os.path.join's checks are moot

    def child(self, path: str, *names: str) -> str:
        return os.path.join(path, *names)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as file:
            return file.read()

    def write_bytes(
        self, path: str, data: bytes, *, exclusive: bool = False, durable: bool = True
    ) -> bool:
        # An existing file is overwritten in place and then cut to size: on ext4 and
        # XFS, O_TRUNC frees and reallocates its blocks, ten times the cost of a lookup's
        # whole bookkeeping (leases, last-used stamps).
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_EXCL if exclusive else 0)
        try:
            descriptor = os.open(path, flags, 0o666)
        except FileExistsError:
            return False
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            if not exclusive and os.fstat(descriptor).st_size > len(data):
                os.ftruncate(descriptor, len(data))
            if durable and self.fsync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        return True

    def append_bytes(self, path: str, data: bytes) -> None:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)

    def replace_bytes(self, path: str, data: bytes) -> None:
        temporary = f"{path}.tmp-{secrets.token_hex(6)}"
        try:
            with open(temporary, "xb") as file:
                file.write(data)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    def open_write(self, path: str) -> io.BufferedIOBase:
        return open(path, "xb")  # the caller owns and closes it

    def sync(self, file: io.BufferedIOBase) -> None:
        file.flush()
        if self.fsync:
            os.fsync(file.fileno())

    def open_read(self, path: str, size: int | None = None) -> io.BufferedIOBase:
        return open(path, "rb")  # the caller owns and closes it

    def size(self, path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return None

    def stamp(self, path: str) -> tuple[int, str] | None:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return None
        return stat.st_size, f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"

    def newest_mtime(self, path: str) -> float | None:
        newest: float | None = None
        for directory, _, files in os.walk(path):
            for name in (directory, *(os.path.join(directory, file) for file in files)):
                with contextlib.suppress(FileNotFoundError):
                    mtime = os.stat(name).st_mtime
                    newest = mtime if newest is None else max(newest, mtime)
        if newest is None:  # a file, or nothing
            with contextlib.suppress(FileNotFoundError):
                newest = os.stat(path).st_mtime
        return newest

    def remove_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def rename_dir(self, source: str, target: str) -> bool:
        try:
            os.rename(source, target)
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise
        return True

    def exchange_dirs(self, one: str, other: str) -> bool:
        return _exchange(one, other)

    def move_file(self, source: str, target: str) -> None:
        os.replace(source, target)

    def files_under(self, path: str) -> list[str]:
        found: list[str] = []
        for directory, _, files in os.walk(path):
            relative = os.path.relpath(directory, path)
            found += [name if relative == "." else f"{relative}/{name}" for name in files]
        return sorted(found)

    def remove_empty_dir(self, path: str) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(path)

    def sync_dir(self, path: str) -> None:
        if not self.fsync:
            return
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def local_path(self, path: str) -> str | None:
        return path


class FsspecStorage(Storage):
    """Any fsspec filesystem: object stores, memory://, ...; no atomic directory rename."""

    is_local = False

    def __init__(self, fs: Any, root: str, url: str) -> None:
        self._fs: Any = fs
        self.root = root.rstrip("/") if root.strip("/") else root
        self.url = url
        # The same URL through another endpoint or account is another store.
        options = cast(Mapping[str, Any], getattr(fs, "storage_options", {}))
        self._identity = f"{url} {type(fs).__name__} {_digest(options)}"
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        # s3fs sizes a file (a HEAD, and a listing when it is absent) before reading it
        # whole, to read a large one in parallel ranges; the files read whole here are
        # small (manifests, leases, fences): one GET each, and a missing one a 404.
        self._whole_read: dict[str, object] = {"max_concurrency": 1} if "s3" in protocols else {}
        #: An object store: whole objects are written atomically, folders are only key
        #: prefixes, and a move is a copy (see `writes_in_place`).
        self.object_store = not _OBJECT_STORES.isdisjoint(protocols)
        # S3 has conditional writes: `put_if` and `remove_if` are one atomic request each.
        self._conditional = not _CONDITIONAL.isdisjoint(protocols)

    def join(self, *parts: str) -> str:
        base = self.root.rstrip("/")
        if not base:
            return ("/" if self.root.startswith("/") else "") + "/".join(parts)
        return "/".join((base, *parts))

    def child(self, path: str, *names: str) -> str:
        return "/".join((path.rstrip("/"), *names))

    def exists(self, path: str) -> bool:
        self._fs.invalidate_cache(path)
        return bool(self._fs.exists(path))

    def listdir(self, path: str) -> list[str]:
        self._fs.invalidate_cache(path)
        try:
            names = cast(list[str], self._fs.ls(path, detail=False))
        except (FileNotFoundError, NotADirectoryError):
            return []
        own = path.strip("/")
        # Some stores list a folder's placeholder object among its children.
        return [
            name.strip("/").rpartition("/")[2] for name in names if name.strip("/") not in ("", own)
        ]

    def makedirs(self, path: str) -> None:
        if not self.object_store:
            self._fs.makedirs(path, exist_ok=True)
        elif self._identity not in _ROOTS_MADE:
            # Folders are key prefixes: only the bucket can be missing (created here, as
            # fsspec does); one check per store and process, not a request per folder.
            self._fs.makedirs(self.root, exist_ok=True)
            _ROOTS_MADE.add(self._identity)

    def read_bytes(self, path: str) -> bytes:
        return bytes(self._fs.cat_file(path, **self._whole_read))

    def write_bytes(
        self, path: str, data: bytes, *, exclusive: bool = False, durable: bool = True
    ) -> bool:
        if exclusive:
            if self._conditional:
                return self.put_if(path, data, None) is not None
            try:
                with self._fs.open(path, "xb") as file:
                    file.write(data)
            except FileExistsError:
                return False
            except (ValueError, NotImplementedError):  # no exclusive mode: best effort
                if self.exists(path):
                    return False
                self._fs.pipe_file(path, data)
            return True
        self._fs.pipe_file(path, data)
        return True

    def put_if(self, path: str, data: bytes, expected: str | None) -> str | None:
        if not self._conditional:
            return super().put_if(path, data, expected)
        condition: dict[str, str] = (
            {"mode": "create"} if expected is None else {"IfMatch": expected}
        )
        try:
            response = self._fs.pipe_file(path, data, **condition)
        except (FileExistsError, FileNotFoundError):  # there already / gone meanwhile
            return None
        except OSError as error:
            if _precondition_failed(error):
                return None
            raise
        tag = cast(Mapping[str, object], response).get("ETag") if response else None
        return str(tag) if tag is not None else self.version(path)

    def remove_if(self, path: str, expected: str) -> bool:
        if not self._conditional:
            return super().remove_if(path, expected)
        bucket, key, _ = cast(tuple[str, str, object], self._fs.split_path(path))
        try:
            self._fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=expected)
        except FileNotFoundError:
            return False
        except OSError as error:
            if _precondition_failed(error):
                return False
            raise
        finally:
            self._fs.invalidate_cache(path)
        return True

    def replace_bytes(self, path: str, data: bytes) -> None:
        if self.object_store:  # an object is replaced whole, atomically: one PUT
            self._fs.pipe_file(path, data)
            return
        # A temporary file and a move make plain filesystems behind fsspec (dir://,
        # sftp...) safe.
        temporary = f"{path}.tmp-{secrets.token_hex(6)}"
        self._fs.pipe_file(temporary, data)
        try:
            self._fs.mv(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm_file(temporary)

    def open_write(self, path: str) -> io.BufferedIOBase:
        # Uploaded in parts of BLOCK_BYTES: s3fs's default (50 MB) is held, then
        # copied, in memory for each part (a writer's memory, whatever the file's size).
        return cast(io.BufferedIOBase, self._fs.open(path, "wb", block_size=BLOCK_BYTES))

    def sync(self, file: io.BufferedIOBase) -> None:
        file.flush()

    def open_read(self, path: str, size: int | None = None) -> io.BufferedIOBase:
        if "memory" in _protocols(self._fs):
            # fsspec's memory filesystem hands every reader the same file object (one
            # position shared by all threads): each reader gets its own copy instead.
            return io.BytesIO(cast(bytes, self._fs.cat_file(path)))
        # Read ahead by BLOCK_BYTES (s3fs's default, 50 MB, is held and copied per read).
        if size is not None and self.object_store:
            file: Any = self._fs.open(path, "rb", size=size, block_size=BLOCK_BYTES)
            # fsspec asks an object's details (a HEAD, for its ETag) at its first read;
            # a cache file's manifest already vouches for it: ranges are read unconditionally.
            file.details = {"name": path, "size": size, "type": "file"}
            return cast(io.BufferedIOBase, file)
        return cast(io.BufferedIOBase, self._fs.open(path, "rb", block_size=BLOCK_BYTES))

    def _info(self, path: str) -> Mapping[str, object] | None:
        self._fs.invalidate_cache(path)
        try:
            return cast(Mapping[str, object], self._fs.info(path))
        except FileNotFoundError:
            return None

    def size(self, path: str) -> int | None:
        info = self._info(path)
        size = None if info is None else info.get("size")
        return size if isinstance(size, int) else None

    def stamp(self, path: str) -> tuple[int, str] | None:
        info = self._info(path)
        size = None if info is None else info.get("size")
        if info is None or not isinstance(size, int):
            return None
        marker = next(
            (str(info[key]) for key in _CHANGE_KEYS if info.get(key) is not None), "unknown"
        )
        return size, marker

    def newest_mtime(self, path: str) -> float | None:
        self._fs.invalidate_cache(path)
        try:
            infos = cast(dict[str, Mapping[str, object]], self._fs.find(path, detail=True))
        except FileNotFoundError:
            return None
        times = [t for t in (_mtime(info) for info in infos.values()) if t is not None]
        own = self._info(path)
        if own is not None and (t := _mtime(own)) is not None:
            times.append(t)
        return max(times) if times else None

    def remove_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(path)

    def remove_tree(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.rm(path, recursive=True)

    def rename_dir(self, source: str, target: str) -> bool:
        raise NotImplementedError(f"{self.url!r} has no atomic directory rename")

    def exchange_dirs(self, one: str, other: str) -> bool:
        return False

    def move_file(self, source: str, target: str) -> None:
        if self.object_store:  # one copy and one delete of that key, nothing listed
            self._fs.cp_file(source, target)
            self._fs.rm_file(source)
            return
        self._fs.mv(source, target)

    def files_under(self, path: str) -> list[str]:
        self._fs.invalidate_cache(path)
        base = path.strip("/")
        try:
            found = cast(list[str], self._fs.find(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(
            name.strip("/")[len(base) :].lstrip("/")
            for name in found
            if name.strip("/").startswith(f"{base}/")
        )

    def remove_empty_dir(self, path: str) -> None:
        pass

    def sync_dir(self, path: str) -> None:
        pass

    @property
    def identity(self) -> str:
        return self._identity

    def local_path(self, path: str) -> str | None:
        return None


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.cache
def _renameat2() -> Any:
    try:
        function: Any = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not Linux, or a C library without it
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return function


def _exchange(one: str, other: str) -> bool:
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(one), _AT_FDCWD, os.fsencode(other), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # unsupported here
        return False
    raise OSError(error, os.strerror(error), one, None, other)


#: Identities of the object stores whose root (bucket) this process made or found.
_ROOTS_MADE: set[str] = set()

# fsspec protocols of object stores (atomic whole-object writes, prefixes for folders)
_OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"})
# ... and of those whose writes can be conditional on an object's version (ETag)
_CONDITIONAL = frozenset({"s3", "s3a"})


def _precondition_failed(error: BaseException) -> bool:
    """Whether an fsspec error is an object store's "412 Precondition Failed" (or a conflict)."""
    cause: BaseException | None = error
    while cause is not None:
        response = cast(Mapping[str, Any], getattr(cause, "response", None) or {})
        code = cast(Mapping[str, Any], response.get("Error") or {}).get("Code")
        if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
            return True
        cause = cause.__cause__
    return False


# Keys of fsspec info dicts that change whenever an object is rewritten, best first.
_CHANGE_KEYS = ("ETag", "etag", "md5Hash", "generation", "LastModified", "mtime", "created")
_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "created")


def _mtime(info: Mapping[str, object]) -> float | None:
    for key in _MTIME_KEYS:
        value = info.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, datetime.datetime):
            moment = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
            return moment.timestamp()
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


def open_storage(
    root: str | os.PathLike[str],
    storage_options: Mapping[str, object] | None = None,
    filesystem: object | None = None,
    *,
    fsync: bool = True,
) -> Storage:
    """The storage for a local path, a ``file://`` URL or any fsspec URL.

    ``filesystem``, an fsspec ``AbstractFileSystem``, is used as is when given,
    with ``root`` a path inside it. ``fsync``: whether local writes are fsynced.
    """
    text = os.fspath(root)
    if filesystem is not None:
        return _from_fsspec(filesystem, text, text, fsync)
    if "://" not in text and "::" not in text:
        if storage_options:
            raise ValueError(
                f"storage_options={dict(storage_options)!r} were given for the local path "
                f"{text!r}; they apply only to fsspec URLs such as 's3://bucket/cache'"
            )
        return LocalStorage(text, fsync=fsync)
    if text.startswith("file://") and not storage_options:
        return LocalStorage(text.removeprefix("file://"), url=text, fsync=fsync)
    fsspec_core: Any = importlib.import_module("fsspec.core")  # imported only when needed
    fs, path = cast(tuple[Any, str], fsspec_core.url_to_fs(text, **dict(storage_options or {})))
    return _from_fsspec(fs, path, text, fsync)


def _from_fsspec(fs: Any, path: str, url: str, fsync: bool) -> Storage:
    local: Any = importlib.import_module("fsspec.implementations.local")
    if isinstance(fs, local.LocalFileSystem):
        return LocalStorage(path, url=url, fsync=fsync)
    return FsspecStorage(fs, path, url)


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _digest(options: Mapping[str, Any]) -> str:
    return xxhash.xxh3_64_hexdigest(
        repr(sorted(options.items(), key=lambda item: item[0])).encode()
    )
