"""Dataset.map: apply a function to examples or batches and write the result."""

from __future__ import annotations

import io
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._results import plan, table_result
from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, arrow_type_to_feature, cast_table
from dagster_ds.progress import progress_bar
from dagster_ds.streaming._calls import awaited_all, returned_input

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

    def fingerprint_args(self) -> dict[str, Any]:
        return {
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
) -> Dataset:
    """Run ``spec`` over ``dataset`` through the cache (see `Dataset.map`)."""
    dataset._require_columns(spec.input_columns or (), "map(input_columns=...)")  # pyright: ignore[reportPrivateUsage]
    dataset._require_columns(spec.remove_columns, "map(remove_columns=...)")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "map", spec.fingerprint_args(), new_fingerprint)
    job = _MapJob(dataset, spec, writer_batch_size)

    def write(sink: TableSink) -> None:
        workers = min(num_proc or 1, max(len(dataset), 1))
        with progress_bar(len(dataset), desc or "Map") as bar:
            if workers > 1:
                job.write_in_workers(sink, workers, bar)
            else:
                job.write_range(sink, 0, len(dataset), bar)

    return table_result(
        dataset, transform, write, job.features_for, load_from_cache_file=load_from_cache_file
    )


class _MapJob:
    """The work of one map call: batches in, function applied, batches out."""

    def __init__(self, dataset: Dataset, spec: MapSpec, writer_batch_size: int) -> None:
        self.dataset = dataset
        self.spec = spec
        self.batch_size = spec.batch_size if spec.batched else writer_batch_size
        self.output_format: OutputFormat = dataset._output_format  # pyright: ignore[reportPrivateUsage]
        self.overwritten: set[str] = set()

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

    def write_range(self, sink: TableSink, start: int, stop: int, bar: Any) -> None:
        wrote = False
        for offset in range(start, stop, self.batch_size):
            size = min(self.batch_size, stop - offset)
            if self.spec.drop_last_batch and self.spec.batched and size < self.batch_size:
                break
            table = self.dataset._read(slice(offset, offset + size))  # pyright: ignore[reportPrivateUsage]
            sink.write(self.apply(table, offset))
            wrote = True
            bar.update(size)
        if not wrote:
            sink.write(self.apply(self.dataset.data.schema.empty_table(), start))

    def write_in_workers(self, sink: TableSink, workers: int, bar: Any) -> None:
        size = len(self.dataset)
        bounds = [size * i // workers for i in range(workers + 1)]
        with tempfile.TemporaryDirectory(prefix="dagster_ds-map-") as folder:
            shards = [
                (Path(folder) / f"shard-{i:05d}", bounds[i], bounds[i + 1]) for i in range(workers)
            ]
            context = multiprocessing.get_context("fork")
            _WORKER_JOB[os.getpid()] = self
            try:
                with context.Pool(workers) as pool:
                    for overwritten, rows in pool.imap(_run_shard, shards):
                        self.overwritten |= set(overwritten)
                        bar.update(rows)
            finally:
                _WORKER_JOB.pop(os.getpid(), None)
            for shard, _, _ in shards:
                for path in sorted(shard.iterdir()):
                    for batch in pa.ipc.open_file(pa.memory_map(str(path))).read_all().to_batches():
                        sink.write(batch)

    def apply(self, table: pa.Table, offset: int) -> pa.Table:
        """The output rows for the input rows ``table`` starting at logical row ``offset``."""
        spec = self.spec
        where = f"rows {offset} to {offset + table.num_rows - 1}"
        inputs = table.select(list(spec.input_columns)) if spec.input_columns is not None else table
        if spec.function is None:
            output = None
        elif spec.batched:
            formatted, returned = self._call_batched(inputs, offset)
            output = _as_table(returned, where)
            output = self._without_removed(output, returned is formatted)
        else:
            rows, results = self._call_per_example(inputs, offset)
            output = _rows_as_table(results, offset)
            output = self._without_removed(output, returned_input(rows, results))
        result = self._merge(table, output, where)
        if spec.features is not None:
            result = cast_table(result, spec.features)
        return result

    def _without_removed(self, output: pa.Table | None, returned_input: bool) -> pa.Table | None:
        """A function that returned its (changed) input does not bring back removed columns."""
        if output is None or not returned_input:
            return output
        return output.drop_columns(
            [c for c in self.spec.remove_columns if c in output.column_names]
        )

    def _call_batched(self, inputs: pa.Table, offset: int) -> tuple[Any, Any]:
        spec = self.spec
        assert spec.function is not None
        batch = self.output_format.batch(inputs)
        args: list[Any] = (
            [batch] if spec.input_columns is None else [batch[c] for c in spec.input_columns]
        )
        if spec.with_indices:
            args.append(list(range(offset, offset + inputs.num_rows)))
        return batch, awaited_all([spec.function(*args, **spec.fn_kwargs)])[0]

    def _call_per_example(self, inputs: pa.Table, offset: int) -> tuple[Sequence[Any], list[Any]]:
        spec = self.spec
        assert spec.function is not None
        if self.output_format == OutputFormat():
            rows: Sequence[Any] = inputs.to_pylist()
        else:
            rows = [self.output_format.row(inputs.slice(i, 1)) for i in range(inputs.num_rows)]
        function, kwargs = spec.function, spec.fn_kwargs
        results: list[Any] = []
        for index, row in enumerate(rows):
            args: list[Any] = (
                [row] if spec.input_columns is None else [row[c] for c in spec.input_columns]
            )
            if spec.with_indices:
                args.append(offset + index)
            results.append(function(*args, **kwargs))
        return rows, awaited_all(results)

    def _merge(self, table: pa.Table, output: pa.Table | None, where: str) -> pa.Table:
        removed = [c for c in self.spec.remove_columns if c in table.column_names]
        base = table.drop_columns(removed)
        if output is None:
            return base
        self.overwritten |= set(output.column_names)
        if output.num_rows != base.num_rows:
            kept = [c for c in base.column_names if c not in output.column_names]
            if kept:
                raise TransformOutputError(
                    f"map returned {output.num_rows} rows for {table.num_rows} input rows "
                    f"({where}), "
                    f"so input columns {kept} cannot be kept. Pass remove_columns={kept} "
                    "(or dataset.column_names) to drop them, or return as many rows as you get."
                )
            return output
        for name in output.column_names:
            column = output.column(name)
            if name in base.column_names:
                base = base.set_column(base.column_names.index(name), name, column)
            else:
                base = base.append_column(name, column)
        return base


def _as_table(result: Any, where: str) -> pa.Table | None:
    """The table a batched function returned (a dict of columns, a table or a DataFrame)."""
    if result is None:
        return None
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatch):
        return pa.Table.from_batches([result])
    if isinstance(result, Mapping):
        columns: Mapping[str, Any] = result
        lengths = {str(name): len(values) for name, values in columns.items()}
        if len(set(lengths.values())) > 1:
            raise TransformOutputError(
                f"map returned columns of unequal lengths {lengths} for {where}; every column "
                "of a batch must have the same number of values."
            )
        return _from_columns(columns, where)
    if type(result).__name__ == "DataFrame":
        return pa.Table.from_pandas(result, preserve_index=False)
    raise TransformOutputError(
        f"map returned {type(result).__name__} for {where}; a batched function must return a dict "
        "of columns (lists or arrays), a pyarrow.Table or a pandas.DataFrame, or None."
    )


def _rows_as_table(results: list[Any], offset: int) -> pa.Table | None:
    """The table made from one output dict per example (None: no update)."""
    if all(result is None for result in results):
        return None
    keys: list[str] | None = None
    for index, result in enumerate(results):
        if not isinstance(result, Mapping):
            raise TransformOutputError(
                f"map returned {type(result).__name__} ({_preview(result)}) "
                f"for row {offset + index}; "
                "the function must return a dict of the columns to add or update, or None."
            )
        if keys is None:
            keys = list(result)
        elif list(result) != keys and set(result) != set(keys):
            raise TransformOutputError(
                f"map returned keys {sorted(result)} for row {offset + index} but {sorted(keys)} "
                f"for row {offset}; return the same keys for every example."
            )
    assert keys is not None
    columns = {key: [result[key] for result in results] for key in keys}
    return _from_columns(columns, f"rows {offset} to {offset + len(results) - 1}")


def _from_columns(columns: Mapping[str, Any], where: str) -> pa.Table:
    arrays: dict[str, Any] = {}
    for name, values in columns.items():
        try:
            arrays[str(name)] = (
                values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
            raise TransformOutputError(
                f"map returned values for column {name!r} ({where}) that do not fit one Arrow "
                f"type: {error}. Return values of one type per column (or pass features=...)."
            ) from error
    return pa.table(arrays)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _FolderWriter:
    """What `TableSink` needs from an entry writer, over a plain local folder."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder

    def open(self, name: str) -> io.BufferedIOBase:
        return open(self._folder / name, "wb")


# The job a forked worker runs, keyed by the pid of the parent that forked it:
# workers inherit it, so the user's function is never pickled.
_WORKER_JOB: dict[int, _MapJob] = {}


def _run_shard(shard: tuple[Path, int, int]) -> tuple[list[str], int]:
    folder, start, stop = shard
    job = _WORKER_JOB[os.getppid()]
    sink = TableSink(_FolderWriter(folder))  # type: ignore[arg-type]
    job.write_range(sink, start, stop, progress_bar(None, "", unit=""))
    sink.close()
    return sorted(job.overwritten), stop - start
