"""Decoding the next Parquet row groups on the other cores while the current one is used.

Arrow's own threads split one row group by column, so a file whose time goes into one
wide column (text, typically) keeps a single core busy. Decoding whole row groups side
by side, each on its own thread and file handle, keeps every core busy whatever the
column widths; the reader still sees them one at a time, in order.
"""

from __future__ import annotations

import os
import queue
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

# Row groups decoded at once. Each is at most DECODE_BYTES uncompressed, and the reader
# holds the one it uses, so the memory is bounded by (WORKERS + 1) row groups.
WORKERS = 2


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class RowGroupsAhead:
    """Row groups of a Parquet file decoded ahead of the reader, handed out in order.

    Each worker thread borrows a file handle of its own for a decode (Arrow's readers
    are not shared between threads here). A process forked while row groups were in
    flight has none of those threads: there, the rest is decoded in the caller's thread
    from a freshly opened file.

    Args:
        files: One open file per worker (their number sets the workers); closed by
            `close`.
        indices: The row groups to decode, in the order they will be asked for.
        columns: Columns to decode (default: all).
        reopen: Opens the file again (used in a forked child only).

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> pq.write_table(pa.table({"id": list(range(30))}), path, row_group_size=10)
        >>> ahead = RowGroupsAhead(
        ...     [pq.ParquetFile(path), pq.ParquetFile(path)], [2, 0], None,
        ...     lambda: pq.ParquetFile(path),
        ... )
        >>> [ahead.table(index)["id"][0].as_py() for index in (2, 0)]
        [20, 0]
        >>> ahead.close()
    """

    def __init__(
        self,
        files: Sequence[pq.ParquetFile],
        indices: Iterable[int],
        columns: Sequence[str] | None,
        reopen: Callable[[], pq.ParquetFile],
    ) -> None:
        self._files = list(files)
        self._idle: queue.SimpleQueue[pq.ParquetFile] = queue.SimpleQueue()
        for file in self._files:
            self._idle.put(file)
        self._columns = list(columns) if columns is not None else None
        self._reopen = reopen
        self._owner = os.getpid()
        self._child_file: pq.ParquetFile | None = None
        self._upcoming = iter(indices)
        self._pending: deque[tuple[int, Future[pa.Table]]] = deque()
        self._pool = ThreadPoolExecutor(len(self._files), thread_name_prefix="dagster_ds-parquet")
        self._fill()

    def table(self, index: int) -> pa.Table:
        """Row group ``index``, which must be the next one of ``indices``.

        Raises:
            Whatever decoding it raised (a corrupt page: ``OSError``/``ArrowInvalid``).
        """
        if os.getpid() != self._owner:
            return self._decode_in_child(index)
        expected, decoded = self._pending.popleft()
        if expected != index:
            raise RuntimeError(f"row group {index} asked for, {expected} decoded next")
        self._fill()
        return decoded.result()

    def close(self) -> None:
        """Stop decoding, wait for the decodes under way, and close the files."""
        if os.getpid() == self._owner:
            for _, decoded in self._pending:
                decoded.cancel()
            self._pool.shutdown(wait=True)
            for file in self._files:
                file.close(force=True)
        if self._child_file is not None:
            self._child_file.close(force=True)

    def _fill(self) -> None:
        while len(self._pending) < len(self._files):
            index = next(self._upcoming, None)
            if index is None:
                return
            self._pending.append((index, self._pool.submit(self._decode, index)))

    def _decode(self, index: int) -> pa.Table:
        file = self._idle.get()
        try:
            return file.read_row_group(index, columns=self._columns, use_threads=False)
        finally:
            self._idle.put(file)

    def _decode_in_child(self, index: int) -> pa.Table:
        if self._child_file is None:
            self._child_file = self._reopen()
        return self._child_file.read_row_group(index, columns=self._columns, use_threads=True)
