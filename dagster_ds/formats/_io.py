"""Opening files through fsspec: decompressing inputs and atomic, compressing outputs."""

from __future__ import annotations

import contextlib
import io
import lzma
import os
import posixpath
import uuid
from collections.abc import Iterator, Mapping
from typing import IO, Any, BinaryIO, Literal, cast

import fsspec
import pyarrow as pa
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.formats._infer import Compression, infer_compression


def url_to_fs(
    url: str, storage_options: Mapping[str, Any] | None = None
) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem for a URL and the path within it."""
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    return fs, path


def is_local(fs: AbstractFileSystem) -> bool:
    return isinstance(fs, LocalFileSystem)


@contextlib.contextmanager
def open_input(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    compression: Compression | Literal["infer"] | None = "infer",
) -> Iterator[BinaryIO]:
    """Open a file for binary reading, decompressing it as its extension says."""
    codec = infer_compression(url) if compression == "infer" else compression
    fs, path = url_to_fs(url, storage_options)
    with cast(BinaryIO, fs.open(path, "rb")) as raw:
        if codec is None:
            yield raw
        elif codec == "xz":
            with lzma.open(raw, "rb") as stream:
                yield cast(BinaryIO, stream)
        else:
            stream = pa.CompressedInputStream(cast(io.IOBase, raw), codec)
            try:
                yield cast(BinaryIO, stream)
            finally:
                stream.close()


class _KeepOpen(io.RawIOBase):
    """A write-only view of a file whose ``close`` leaves the file open."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__()
        self._file = file

    def write(self, data: Any) -> int:
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()

    def writable(self) -> bool:
        return True


class AtomicOutput:
    """A binary file written under a temporary name, published whole by `commit`.

    The temporary file sits next to the target as ``.<name>.<random>.tmp`` (hidden, so
    data files resolution ignores it). Local files are fsynced and renamed with
    ``os.replace``; on other filesystems the temporary object is moved to the target
    with ``fs.mv`` when the writer closes. `discard` removes the temporary file, so a
    failed write leaves no target behind. Compression follows the target's extension.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        compression: Compression | Literal["infer"] | None = "infer",
    ) -> None:
        self.url = url
        self._fs, self._path = url_to_fs(url, storage_options)
        parent, name = posixpath.split(self._path)
        self._tmp = posixpath.join(parent, f".{name}.{uuid.uuid4().hex[:16]}.tmp")
        if parent:
            self._fs.makedirs(parent, exist_ok=True)
        self._raw = cast(
            IO[bytes],
            open(self._tmp, "xb") if is_local(self._fs) else self._fs.open(self._tmp, "wb"),  # noqa: SIM115
        )
        codec = infer_compression(url) if compression == "infer" else compression
        self._compressor: Any = None
        if codec == "xz":
            self._compressor = lzma.LZMAFile(self._raw, "wb")  # noqa: SIM115 (closed by commit)
        elif codec is not None:
            self._compressor = pa.CompressedOutputStream(_KeepOpen(self._raw), codec)
        self.file: Any = self._compressor if self._compressor is not None else self._raw
        self.bytes_written = 0
        self._done = False

    def commit(self) -> None:
        """Finish the file and publish it under the target name."""
        if self._done:
            return
        self._done = True
        try:
            if self._compressor is not None:
                self._compressor.close()
            self.bytes_written = self._raw.tell()
            if is_local(self._fs):
                self._raw.flush()
                os.fsync(self._raw.fileno())
                self._raw.close()
                os.replace(self._tmp, self._path)
            else:
                self._raw.close()
                self._fs.mv(self._tmp, self._path)
        except BaseException:
            self._remove_tmp()
            raise

    def discard(self) -> None:
        """Drop everything written; the target is left as it was."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(Exception):
            if self._compressor is not None:
                self._compressor.close()
        with contextlib.suppress(Exception):
            self._raw.close()
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        with contextlib.suppress(FileNotFoundError, OSError):
            if is_local(self._fs):
                os.remove(self._tmp)
            else:
                self._fs.rm(self._tmp)


def is_file_object(target: object) -> bool:
    """Whether ``target`` is an open file (or buffer) rather than a path or URL."""
    return hasattr(target, "write") and not isinstance(target, str | bytes | os.PathLike)


class _Counting(io.RawIOBase):
    """A write-only view of a user's binary file that counts bytes and never closes it."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__()
        self._file = file
        self.count = 0

    def write(self, data: Any) -> int:
        written = self._file.write(data)
        self.count += written if isinstance(written, int) else len(data)
        return written if isinstance(written, int) else len(data)

    def flush(self) -> None:
        self._file.flush()

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.count


class FileObjectOutput:
    """An export into a file object the caller opened in binary mode (``open(p, "wb")``).

    Bytes go straight into the caller's file, which stays open; `commit` flushes
    it. Unlike `AtomicOutput`, a failed write cannot take back what was already
    written: the caller owns the file.
    """

    def __init__(self, target: Any, what: str) -> None:
        if isinstance(target, io.TextIOBase) or "b" not in getattr(target, "mode", "b"):
            raise InvalidArgumentError(
                f"{what}: {target!r} is a text-mode file; open it in binary mode "
                "(open(path, 'wb')) or pass the path instead."
            )
        self.url = str(getattr(target, "name", "<file object>"))
        self._counter = _Counting(target)
        self.file: Any = self._counter
        self.bytes_written = 0
        self._done = False

    def commit(self) -> None:
        """Flush what was written into the caller's file (which stays open)."""
        if not self._done:
            self._done = True
            self._counter.flush()
            self.bytes_written = self._counter.count

    def discard(self) -> None:
        """Stop writing; bytes already in the caller's file stay there."""
        self._done = True
