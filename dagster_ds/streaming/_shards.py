"""Shards: the independently readable parts of a source (a file, a row group, rows, a call)."""

from __future__ import annotations

import abc
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa

from dagster_ds.features import Features, cast_table
from dagster_ds.formats import (
    Filters,
    ReadStats,
    ResolvedFile,
    iter_batches,
    list_row_groups,
)
from dagster_ds.formatting import rows_to_batch
from dagster_ds.streaming._arrow import TypeKeeper, parquet_schema, table_rows

ROWS_PER_BATCH = 1000  # rows per batch for sources built from Python rows


class Shard(abc.ABC):
    """One part of a source that can be read on its own, from any row."""

    @abc.abstractmethod
    def read(self, start_row: int) -> Iterator[pa.RecordBatch]:
        """The shard's batches, skipping its first ``start_row`` rows."""

    @abc.abstractmethod
    def describe(self) -> str:
        """A short description, for errors and the pipeline's shape."""

    @property
    def schema(self) -> pa.Schema | None:
        """The schema when known without reading rows."""
        return None

    def split(self) -> tuple[Shard, ...]:
        """Smaller shards with the same rows in the same order (itself when it cannot split)."""
        return (self,)


@dataclass(frozen=True, eq=False)
class FileShard(Shard):
    """A data file (or some of a Parquet file's row groups), read through `iter_batches`."""

    file: ResolvedFile
    format: str
    columns: tuple[str, ...] | None = None
    filters: Filters | None = None
    features: Features | None = None
    row_groups: tuple[int, ...] | None = None
    storage_options: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def read(self, start_row: int) -> Iterator[pa.RecordBatch]:
        options = dict(self.options)
        if self.row_groups is not None:
            options["row_groups"] = list(self.row_groups)
        batches = iter_batches(
            self.file,
            self.format,
            start_row=start_row,
            columns=list(self.columns) if self.columns is not None else None,
            filters=self.filters,
            storage_options=self.storage_options,
            **options,
        )
        if self.features is None:
            return batches
        features = self.features
        return (cast_table(batch, features) for batch in batches)

    def describe(self) -> str:
        groups = f" row groups {list(self.row_groups)}" if self.row_groups is not None else ""
        return f"{self.file.url}{groups}"

    @property
    def schema(self) -> pa.Schema | None:
        return self._schema

    @cached_property
    def _schema(self) -> pa.Schema | None:
        if self.features is not None:
            return self.features.arrow_schema
        if self.format == "parquet":
            return parquet_schema(self.file.url, self.storage_options, self.columns)
        first = next(iter(self.read(0)), None)
        return first.schema if first is not None else None

    def split(self) -> tuple[Shard, ...]:
        if self.format != "parquet" or (self.row_groups is not None and len(self.row_groups) < 2):
            return (self,)
        groups = self.row_groups
        if groups is None:
            groups = tuple(
                group.index
                for group in list_row_groups(self.file, storage_options=self.storage_options)
            )
        if len(groups) < 2:
            return (self,)
        return tuple(replace(self, row_groups=(group,)) for group in groups)

    @property
    def stats(self) -> ReadStats | None:
        """The `ReadStats` passed in the reader options, if any."""
        stats = self.options.get("stats")
        return stats if isinstance(stats, ReadStats) else None


@dataclass(frozen=True, eq=False)
class TableShard(Shard):
    """Rows ``start`` to ``stop`` of an Arrow table (through an indices mapping when given)."""

    table: pa.Table
    start: int
    stop: int
    indices: Any = None  # a pyarrow integer Array mapping rows to table rows, or None
    batch_size: int = ROWS_PER_BATCH

    def read(self, start_row: int) -> Iterator[pa.RecordBatch]:
        first = self.start + start_row
        if self.indices is None:
            yield from table_rows(self.table, None, first, self.stop, self.batch_size)
            return
        for offset in range(first, self.stop, self.batch_size):
            stop = min(offset + self.batch_size, self.stop)
            yield from table_rows(self.table, self.indices, offset, stop, self.batch_size)

    def describe(self) -> str:
        return f"rows {self.start} to {self.stop}"

    @property
    def schema(self) -> pa.Schema | None:
        return self.table.schema


@dataclass(frozen=True, eq=False)
class GeneratorShard(Shard):
    """One call of a generator function: the rows it yields, in batches of 1,000.

    Resuming calls the generator again and skips the rows already read, so the
    generator must yield the same rows each time it is called with the same kwargs.
    """

    generator: Callable[..., Iterable[Mapping[str, Any]]]
    kwargs: Mapping[str, Any]
    features: Features | None = None

    def read(self, start_row: int) -> Iterator[pa.RecordBatch]:
        rows = itertools.islice(iter(self.generator(**self.kwargs)), start_row, None)
        keeper = TypeKeeper()
        where = f"{self.describe()}"
        position = start_row
        while chunk := list(itertools.islice(rows, ROWS_PER_BATCH)):
            batch = rows_to_batch(chunk, self.features, f"{where}, rows from {position}")
            position += len(chunk)
            yield keeper.apply(batch)

    def describe(self) -> str:
        name = getattr(self.generator, "__qualname__", repr(self.generator))
        return f"{name}(**{dict(self.kwargs)!r})"

    @property
    def schema(self) -> pa.Schema | None:
        return self.features.arrow_schema if self.features is not None else None


def split_gen_kwargs(gen_kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One kwargs dict per shard: list values are split one element per shard (as the anchor).

    Raises:
        InvalidArgumentError: Two list values have different lengths.
    """
    from dagster_ds.errors import InvalidArgumentError

    lengths = {key: len(value) for key, value in gen_kwargs.items() if isinstance(value, list)}  # pyright: ignore[reportUnknownArgumentType]
    if len(set(lengths.values())) > 1:
        raise InvalidArgumentError(
            f"from_generator: gen_kwargs has lists of different lengths {lengths}, so it is "
            "ambiguous which one gives the shards. Keep one list of data sources (or lists "
            "of the same length) and pass the other values as tuples."
        )
    count = max(lengths.values(), default=0)
    if count == 0:
        return [dict(gen_kwargs)]
    return [
        {key: [value[i]] if key in lengths else value for key, value in gen_kwargs.items()}
        for i in range(count)
    ]
