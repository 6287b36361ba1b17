"""What every reader shares: read statistics, row filters and the final batching stage."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from dagster_ds.errors import ColumnNotFoundError, FormatOptionError, InvalidFilterError

if TYPE_CHECKING:
    import pyarrow.compute as pc

DEFAULT_BATCH_SIZE = 10_000

# A string: pyarrow.compute (about 40 ms to import) and pyarrow.parquet load at their
# first use, not here.
Filters: TypeAlias = "pc.Expression | Sequence[Any]"


@dataclass
class ReadStats:
    """Counters a reader updates while it runs; pass one in to observe the work done.

    One object may be passed to several readers in turn to add up their work.

    Attributes:
        row_groups_total: Parquet row groups in the files opened.
        row_groups_read: Parquet row groups actually read (the others were pruned by
            their statistics or skipped to reach ``start_row``).
        rows_read: Rows decoded from storage, before filtering and skipping.
        rows_yielded: Rows in the batches yielded.
        batches_yielded: Batches yielded.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> write_batches([pa.table({"id": list(range(100))})], path, row_group_size=10)
        100
        >>> stats = ReadStats()
        >>> filters = [("id", "<", 10)]
        >>> batches = list(iter_parquet_batches(path, filters=filters, stats=stats))
        >>> stats.row_groups_read, stats.row_groups_total, stats.rows_yielded
        (1, 10, 10)
    """

    row_groups_total: int = 0
    row_groups_read: int = 0
    rows_read: int = 0
    rows_yielded: int = 0
    batches_yielded: int = 0


def to_expression(filters: Filters | None) -> pc.Expression | None:
    """A filter as an Arrow expression, from DNF tuples or an Expression."""
    if filters is None:
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if isinstance(filters, pc.Expression):
        return filters
    try:
        if not filters:
            raise ValueError("the filter list is empty")
        return pq.filters_to_expression(list(filters))
    except (ValueError, TypeError, KeyError, IndexError, pa.ArrowException) as error:
        raise InvalidFilterError(
            f"Invalid filters {filters!r}: {error}. Pass DNF as pyarrow does, a list of "
            "(column, op, value) tuples ANDed together, or a list of such lists ORed "
            "together, e.g. [('year', '>=', 2020), ('lang', 'in', ['en', 'fr'])]; "
            "or a pyarrow.compute Expression such as pc.field('year') >= 2020."
        ) from error


def check_positions(batch_size: int, start_row: int) -> None:
    if batch_size < 1:
        raise FormatOptionError(
            f"batch_size must be a positive number of rows, got {batch_size!r}."
        )
    if start_row < 0:
        raise FormatOptionError(f"start_row must be 0 or more, got {start_row!r}.")


def select_columns(batch: pa.RecordBatch, columns: Sequence[str], source: str) -> pa.RecordBatch:
    missing = [name for name in columns if name not in batch.schema.names]
    if missing:
        raise ColumnNotFoundError(
            f"Column(s) {missing!r} not found in {source!r}, which has columns "
            f"{batch.schema.names!r}. Fix columns=."
        )
    return batch.select(list(columns))


def filter_batch(batch: pa.RecordBatch, expression: pc.Expression, source: str) -> pa.RecordBatch:
    try:
        return batch.filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise InvalidFilterError(
            f"Cannot apply filter {expression} to {source!r} (columns {batch.schema.names!r}): "
            f"{error}. Fix filters= to name existing columns with comparable values."
        ) from error


def finish(
    batches: Iterable[pa.RecordBatch],
    *,
    source: str,
    batch_size: int,
    skip: int = 0,
    columns: Sequence[str] | None = None,
    expression: pc.Expression | None = None,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """Filter, project, skip and cut a reader's raw batches; the last stage of every reader.

    Empty batches are dropped, except that a source yielding no row at all yields one
    empty batch with its schema (when known), so callers always learn the schema.
    """
    schema: pa.Schema | None = None
    yielded = False
    for raw in batches:
        batch = raw
        if expression is not None:
            batch = filter_batch(batch, expression, source)
        if columns is not None:
            batch = select_columns(batch, columns, source)
        schema = batch.schema
        if skip:
            if batch.num_rows <= skip:
                skip -= batch.num_rows
                continue
            batch = batch.slice(skip)
            skip = 0
        for offset in range(0, batch.num_rows, batch_size):
            piece = batch.slice(offset, batch_size)
            if stats is not None:
                stats.rows_yielded += piece.num_rows
                stats.batches_yielded += 1
            yielded = True
            yield piece
    if not yielded and schema is not None:
        if stats is not None:
            stats.batches_yielded += 1
        yield pa.RecordBatch.from_pylist([], schema=schema)
