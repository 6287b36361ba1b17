"""What a stream's map or filter function read, seen while the stream was read (for lineage).

A stream computes nothing until it is iterated, so its lineage can only say what
its function read after a pass over every row (`IterableDataset.push_to_hub`
makes one). A pass cut short (``take``, a ``break``) records nothing: the rows not
reached might have read more. Until then, the function counts as reading every
column it was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster_ds.formatting import ReadSet, union_reads


class ObservedReads:
    """The reads (and output columns) of a map's or filter's complete passes, united.

    Example:
        >>> seen = ObservedReads()
        >>> seen.reads_or(None) is None
        True
        >>> seen.record(frozenset({"text"}), ["text", "n"])
        >>> sorted(seen.reads_or(None)), seen.columns
        (['text'], ['text', 'n'])
    """

    def __init__(self) -> None:
        self._seen = False
        self._reads: ReadSet = frozenset()
        #: The output's columns in the last complete pass (None: none completed).
        self.columns: list[str] | None = None

    def record(self, reads: ReadSet, columns: Sequence[str] | None) -> None:
        """Add one complete pass: the columns its function read, its output's columns."""
        self._reads = union_reads(self._reads, reads) if self._seen else reads
        self._seen = True
        if columns is not None:
            self.columns = list(columns)

    def reads_or(self, given: Sequence[str] | None) -> ReadSet:
        """The columns read in the complete passes, else ``given`` (None: every column)."""
        if self._seen:
            return self._reads
        return frozenset(given) if given is not None else None
