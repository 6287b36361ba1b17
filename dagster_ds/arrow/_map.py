"""Dataset.map: apply a function to examples or batches and write the result."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column_lineage import map_column_sources, record
from dagster_ds.arrow._column_reads import (
    FingerprintingSink,
    ShardReads,
    reads_of,
    recorded_reads,
    transform_base,
    written_of,
)
from dagster_ds.arrow._column_reuse import ColumnReuse
from dagster_ds.arrow._entries import TableSink, read_ipc
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._parallel import Recipe, run_shards
from dagster_ds.arrow._results import plan, shards_result, units
from dagster_ds.arrow._shards import Shard
from dagster_ds.arrow._streamed import StreamedRows, streamed_rows
from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, arrow_type_to_feature, cast_table
from dagster_ds.fingerprint import HashNode
from dagster_ds.formatting import (
    FunctionCall,
    deleted_columns,
    function_output,
    merge,
    observed_reads,
    older_generations_held,
    per_example_output,
)
from dagster_ds.parallel import ShardExecutor, in_processes
from dagster_ds.progress import progress_bar

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


@dataclass(frozen=True)
class MapSpec:
    """What `Dataset.map` was asked to do (the arguments that decide its result)."""

    function: Callable[..., Any] | None
    with_indices: bool = False
    input_columns: tuple[str, ...] | None = None
    batched: bool = False
    batch_size: int = 1000
    drop_last_batch: bool = False
    remove_columns: tuple[str, ...] = ()
    fn_kwargs: Mapping[str, Any] = field(default_factory=dict[str, Any])
    features: Features | None = None

    def fingerprint_args(self, dataset: Dataset) -> dict[str, Any]:
        return {
            "format": dataset._output_format.as_dict(),  # pyright: ignore[reportPrivateUsage]
            "function": self.function,
            "with_indices": self.with_indices,
            "input_columns": self.input_columns,
            "batched": self.batched,
            "batch_size": self.batch_size if self.batched else None,
            "drop_last_batch": self.drop_last_batch if self.batched else None,
            "remove_columns": self.remove_columns,
            "fn_kwargs": dict(self.fn_kwargs),
            "features": self.features.to_dict() if self.features is not None else None,
        }


def map_dataset(
    dataset: Dataset,
    spec: MapSpec,
    *,
    num_proc: int | None,
    writer_batch_size: int,
    load_from_cache_file: bool,
    new_fingerprint: str | None,
    desc: str | None,
    executor: ShardExecutor | None = None,
) -> Dataset:
    """Run ``spec`` over ``dataset`` shard by shard, through the cache (see `Dataset.map`).

    Each shard's output is cached under the transform rebased on the shard's
    fingerprint (and its first row, for ``with_indices``), so a shard already
    mapped in any process is read back, not recomputed. Batches never
    straddle shards.
    """
    dataset._require_columns(spec.input_columns or (), "map(input_columns=...)")  # pyright: ignore[reportPrivateUsage]
    dataset._require_columns(spec.remove_columns, "map(remove_columns=...)")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "map", spec.fingerprint_args(dataset), new_fingerprint)
    job = _MapJob(dataset, spec, writer_batch_size)
    job.tree = transform.tree
    pieces = [
        (shard, start, transform.for_shard(shard.fingerprint, **job.shard_values(start)))
        for shard, start in units(dataset)
    ]
    workers = min(num_proc or 1, max(len(dataset), 1))
    with progress_bar(len(dataset), desc or "Map") as bar:
        shards = run_shards(
            pieces,
            lambda shard, start, workers_left: _ShardWrite(job, shard, start, workers_left, bar),
            job.features_for,
            workers=workers,
            load_from_cache_file=load_from_cache_file,
            keeps_columns=True,
            executor=executor,
            recipe=Recipe(dataset.fingerprint, "map", spec.fingerprint_args(dataset)),
            whole=transform,
            column_reuse=ColumnReuse(
                job.base, job.overwritten.update, getattr(spec.function, "__name__", "map")
            ),
        )
    mapped = shards_result(dataset, transform, shards, features=spec.features)
    outputs = [shard.entries[0] for shard, _ in shards]
    sources = job.column_sources(mapped.column_names, reads_of(outputs), written_of(outputs))
    return record(mapped, dataset, sources)


class _ShardWrite:
    """Writes one shard's map output into a sink (what `run_shards` calls per shard)."""

    def __init__(self, job: _MapJob, shard: Shard, start: int, workers: int, bar: Any) -> None:
        self.job, self.shard, self.start, self.workers, self.bar = job, shard, start, workers, bar

    def __call__(self, sink: TableSink) -> dict[str, Any]:
        """Write the shard's output; what its function read, to record (see `_column_reads`)."""
        self.job.log = ShardReads()
        self.job.streamed_schema = None
        written: Any = FingerprintingSink(sink)
        if self.workers > 1 and self.shard.num_rows > 1:
            self.job.write_in_workers(written, self.shard, self.start, self.workers, self.bar)
        else:
            self.job.write_range(written, self.shard, self.start, 0, self.shard.num_rows, self.bar)
        recorded = recorded_reads(
            self.job.log,
            self.shard,
            self.job.base(self.start),
            schema=self.job.streamed_schema,
        )
        return {**recorded, "column_fingerprints": written.hexdigests()}


class _MapJob:
    """The work of one map call: batches in, function applied, batches out."""

    def __init__(self, dataset: Dataset, spec: MapSpec, writer_batch_size: int) -> None:
        self.dataset = dataset
        self.spec = spec
        self.batch_size = spec.batch_size if spec.batched else writer_batch_size
        output_format: OutputFormat = dataset._output_format  # pyright: ignore[reportPrivateUsage]
        self.call = (
            FunctionCall(
                spec.function,
                input_columns=spec.input_columns,
                with_indices=spec.with_indices,
                fn_kwargs=spec.fn_kwargs,
                formatter=output_format,
            )
            if spec.function is not None
            else None
        )
        self.overwritten: set[str] = set()
        # The transform's hash tree (None: a random fingerprint), and what the function
        # read and wrote of the shard being written.
        self.tree: HashNode | None = None
        self.log = ShardReads()
        # The schema of the shard whose rows the last pass read a batch at a time.
        self.streamed_schema: pa.Schema | None = None
        self._schema: pa.Schema | None = None
        # What decided the merged schema of the last batch whose types were checked.
        self._layout: _Layout | None = None

    def column_sources(
        self,
        output_columns: Sequence[str],
        reads: Collection[str] | None,
        recorded_written: Collection[str] | None = None,
    ) -> dict[str, tuple[str, ...]]:
        """The parent columns each output column came from, the function having read ``reads``.

        The columns it wrote are known when it ran here, else from what its output
        entries recorded (``recorded_written``); without either (outputs of an earlier
        release, run elsewhere) a kept column may have been overwritten.
        """
        written = self.overwritten if self.overwritten or self.call is None else recorded_written
        parent = self.dataset.column_names
        return map_column_sources(parent, output_columns, reads, self.spec.remove_columns, written)

    def shard_values(self, start: int) -> dict[str, int]:
        """What a shard's output depends on besides its rows: its first row, with indices."""
        return {"offset": start} if self.spec.with_indices else {}

    def base(self, start: int) -> str | None:
        """The transform without its input, for the shard from row ``start`` (`transform_base`)."""
        return transform_base(self.tree, **self.shard_values(start))

    # -- features ----------------------------------------------------------

    def features_for(self, schema: pa.Schema) -> Features:
        """Features of the output: the caller's, else the input's for untouched columns."""
        if self.spec.features is not None:
            return self.spec.features
        parent = self.dataset.features
        # As the anchor: a column the function returned keeps its feature (a ClassLabel, say)
        # when its values still have that feature's Arrow type.
        return Features(
            {
                field.name: parent[field.name]
                if field.name in parent
                and (
                    field.name not in self.overwritten
                    or parent.arrow_schema.field(field.name).type.equals(field.type)
                )
                else arrow_type_to_feature(field.type)
                for field in schema
            }
        )

    # -- running -----------------------------------------------------------

    def write_range(
        self, sink: TableSink, shard: Shard, first: int, start: int, stop: int, bar: Any
    ) -> None:
        """Map rows ``start`` to ``stop`` of ``shard``, whose first row is ``first``.

        The function sees batches of ``batch_size`` rows; their outputs are merged with
        their input rows and written `_ROWS_PER_WRITE` rows at a time (see `_WriteGroup`),
        so the work of merging and writing is not repeated per small batch.
        """
        wrote = False
        rows = _input_rows(shard, start, stop)
        group = _WriteGroup(self, sink, shard, first, bar, rows)
        for offset in range(start, stop, self.batch_size):
            size = min(self.batch_size, stop - offset)
            if self.spec.drop_last_batch and self.spec.batched and size < self.batch_size:
                break
            table = rows.read(offset, offset + size)
            output, removed = self.compute(table, first + offset)
            group.add(offset, table, output, removed)
            wrote = True
        group.flush()
        if isinstance(rows, StreamedRows):
            rows.finish()
            self.streamed_schema = rows.schema
        if not wrote:
            sink.write(self.apply(self.dataset.data.schema.empty_table(), first + start))

    def write_in_workers(
        self, sink: TableSink, shard: Shard, first: int, workers: int, bar: Any
    ) -> None:
        """Map one shard in ``workers`` forked processes, by row ranges."""
        size = shard.num_rows
        bounds = [size * i // workers for i in range(workers + 1)]
        with tempfile.TemporaryDirectory(prefix="dagster_ds-map-") as folder:
            ranges = [
                (Path(folder) / f"range-{i:05d}", bounds[i], bounds[i + 1]) for i in range(workers)
            ]

            def run_range(part: tuple[Path, int, int]) -> tuple[list[str], int, ShardReads]:
                folder, start, stop = part
                range_sink = TableSink(_FolderWriter(folder))  # type: ignore[arg-type]
                self.write_range(range_sink, shard, first, start, stop, progress_bar(None, ""))
                range_sink.close()
                return sorted(self.overwritten), stop - start, self.log

            def what(part: tuple[Path, int, int]) -> str:
                return f"rows {first + part[1]} to {first + part[2] - 1} of the dataset"

            for overwritten, rows, log in in_processes(run_range, ranges, workers, what=what):
                self.overwritten |= set(overwritten)
                self.log.update(log)
                bar.update(rows)
            for part, _, _ in ranges:
                for path in sorted(part.iterdir()):
                    for batch in read_ipc(pa.memory_map(str(path)).read_buffer()).to_batches():
                        sink.write(batch)

    def apply(self, table: pa.Table, offset: int) -> pa.Table:
        """The output rows for the input rows ``table`` starting at logical row ``offset``."""
        return self.merged(table, *self.compute(table, offset), offset)

    def _per_example(
        self, inputs: pa.Table, offset: int, lazy: bool, where: str
    ) -> tuple[pa.RecordBatch | None, frozenset[str] | None]:
        """The per-example function's output columns for ``inputs``, and the columns it read."""
        assert self.call is not None
        rows, results = self.call.per_example(inputs, offset, lazy=lazy)
        reads = observed_reads(rows, self.spec.input_columns)
        return per_example_output(rows, results, offset, self.spec.remove_columns, where), reads

    def compute(
        self, table: pa.Table, offset: int
    ) -> tuple[pa.RecordBatch | None, tuple[str, ...]]:
        """The function's output columns for ``table`` and the input columns to remove.

        Checked as `merged` would check them, so an error names these rows.
        """
        spec = self.spec
        where = f"examples {offset} to {offset + table.num_rows - 1}"
        inputs = table.select(list(spec.input_columns)) if spec.input_columns is not None else table
        removed = spec.remove_columns
        reads: frozenset[str] | None = frozenset()
        if self.call is None:
            output = None
        elif spec.batched:
            formatted, returned = self.call.batched(inputs, offset)
            reads = observed_reads(formatted, spec.input_columns)
            output = function_output(returned, formatted, removed, where)
            removed = (*removed, *deleted_columns(formatted, returned))
        else:
            # Once every column is read in this shard, reads need not be seen: plain rows.
            lazy = not self.log.read_all(inputs.schema.names)
            with older_generations_held():  # the rows die inside: see `older_generations_held`
                output, reads = self._per_example(inputs, offset, lazy, where)
        written = output.schema.names if output is not None else []
        self.log.add(reads, written, removed)
        self.overwritten.update(written)
        if output is not None and output.num_rows != table.num_rows:
            merge(table, output, removed, where)  # refused if input columns are to be kept
        layout = (table.schema, output.schema if output is not None else None, removed)
        if spec.features is None and not _same_layout(layout, self._layout):
            self._layout = layout  # the merged schema is known from these: checked once
            empty = output.slice(0, 0) if output is not None else None
            self._check_types(self.merged(table.slice(0, 0), empty, removed, offset).schema, where)
        return output, removed

    def merged(
        self,
        table: pa.Table,
        output: pa.RecordBatch | pa.Table | None,
        removed: tuple[str, ...],
        offset: int,
    ) -> pa.Table:
        """The input rows ``table`` (from logical row ``offset``) updated with ``output``."""
        where = f"examples {offset} to {offset + table.num_rows - 1}"
        merged = merge(table, output, removed, where)
        result = merged if isinstance(merged, pa.Table) else pa.Table.from_batches([merged])
        return cast_table(result, self.spec.features) if self.spec.features is not None else result

    def _check_types(self, schema: pa.Schema, where: str) -> None:
        """Refuse a column whose type changes from batch to batch (int, then str)."""
        known = self._schema
        if known is None or known.equals(schema):
            self._schema = schema if known is None else self._schema
            return
        try:
            self._schema = pa.unify_schemas([known, schema], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            changed = {
                field.name: f"{known.field(field.name).type} before, {field.type} now"
                for field in schema
                if field.name in known.names
                and not pa.types.is_null(field.type)
                and not pa.types.is_null(known.field(field.name).type)
                and not known.field(field.name).type.equals(field.type)
            }
            raise TransformOutputError(
                f"map returned values of another type for {where} than for the examples "
                f"before: {changed}. Return one type per column in every batch, or pass "
                "features=... to give the column its type."
            ) from error


_ROWS_PER_WRITE = 10_000  # map output rows handed to the sink at once

#: What decides a batch's merged schema: its input schema, its output schema (None: no
#: output) and the input columns removed.
_Layout = tuple[pa.Schema, pa.Schema | None, tuple[str, ...]]


def _input_rows(shard: Shard, start: int, stop: int) -> Shard | StreamedRows:
    """What a pass over rows ``start`` to ``stop`` of ``shard`` reads them from.

    A pass over a whole shard not read yet reads its entry a batch at a time
    (`streamed_rows`): mapping it holds a write group's rows, not the shard's (on an
    object store, a download held in memory; locally, a memory map's touched pages).
    """
    if start == 0 and stop == shard.num_rows:
        streamed = streamed_rows(shard)
        if streamed is not None:
            return streamed
    return shard


def _same_layout(one: _Layout, other: _Layout | None) -> bool:
    if other is None or one[2] != other[2] or not one[0].equals(other[0], check_metadata=True):
        return False
    if one[1] is None or other[1] is None:
        return one[1] is other[1]
    return one[1].equals(other[1], check_metadata=True)


class _WriteGroup:
    """Consecutive map outputs of one layout, merged with their input rows and written at once.

    The input rows of the whole group are read as one slice of the shard, so the columns
    kept from the input are the shard's own arrays in one piece (cheap to recognise for
    the sink, which then stores only the changed columns). Through an indices mapping,
    the rows the batches took are put together instead (not taken twice).
    """

    def __init__(
        self,
        job: _MapJob,
        sink: TableSink,
        shard: Shard,
        first: int,
        bar: Any,
        rows: Shard | StreamedRows,
    ) -> None:
        self.job, self.sink, self.shard, self.first, self.bar = job, sink, shard, first, bar
        self.rows = rows
        self.outputs: list[pa.RecordBatch] = []
        self.inputs: list[pa.Table] = []
        self.layout: _Layout | None = None
        self.start = self.stop = 0

    def add(
        self,
        offset: int,
        table: pa.Table,
        output: pa.RecordBatch | None,
        removed: tuple[str, ...],
    ) -> None:
        """Add the output of the input rows ``table``, which start at ``offset`` of the shard."""
        layout = (table.schema, output.schema if output is not None else None, removed)
        if self.layout is not None and (
            offset != self.stop or not _same_layout(layout, self.layout)
        ):
            self.flush()
        if self.layout is None:
            self.layout, self.start = layout, offset
        self.stop = offset + table.num_rows
        if output is not None:
            self.outputs.append(output)
        if self.shard.indices is not None:
            self.inputs.append(table)
        if self.stop - self.start >= _ROWS_PER_WRITE:
            self.flush()

    def flush(self) -> None:
        if self.layout is None:
            return
        if self.shard.indices is None:
            inputs = self.rows.read(self.start, self.stop)
        else:
            inputs = self.inputs[0] if len(self.inputs) == 1 else pa.concat_tables(self.inputs)
        outputs = self.outputs
        _, schema, removed = self.layout
        output = (
            None
            if schema is None
            else outputs[0]
            if len(outputs) == 1
            else pa.Table.from_batches(outputs, schema=schema)
        )
        self.sink.write(self.job.merged(inputs, output, removed, self.first + self.start), inputs)
        if isinstance(self.rows, StreamedRows):
            self.rows.release(self.stop)
        self.bar.update(self.stop - self.start)
        self.outputs, self.inputs, self.layout = [], [], None


class _FolderWriter:
    """What `TableSink` needs from an entry writer, over a plain local folder."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder

    def open(self, name: str) -> io.BufferedIOBase:
        return open(self._folder / name, "wb")
