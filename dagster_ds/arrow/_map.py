"""Dataset.map: apply a function to examples or batches and write the result."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._parallel import in_processes, run_shards
from dagster_ds.arrow._results import plan, shards_result, units
from dagster_ds.arrow._shards import Shard
from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, arrow_type_to_feature, cast_table
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
            "format": dataset.format,
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
        )
    return shards_result(dataset, transform, shards, features=spec.features)


class _ShardWrite:
    """Writes one shard's map output into a sink (what `run_shards` calls per shard)."""

    def __init__(self, job: _MapJob, shard: Shard, start: int, workers: int, bar: Any) -> None:
        self.job, self.shard, self.start, self.workers, self.bar = job, shard, start, workers, bar

    def __call__(self, sink: TableSink) -> None:
        if self.workers > 1 and self.shard.num_rows > 1:
            self.job.write_in_workers(sink, self.shard, self.start, self.workers, self.bar)
        else:
            self.job.write_range(sink, self.shard, self.start, 0, self.shard.num_rows, self.bar)


class _MapJob:
    """The work of one map call: batches in, function applied, batches out."""

    def __init__(self, dataset: Dataset, spec: MapSpec, writer_batch_size: int) -> None:
        self.dataset = dataset
        self.spec = spec
        self.batch_size = spec.batch_size if spec.batched else writer_batch_size
        self.output_format: OutputFormat = dataset._output_format  # pyright: ignore[reportPrivateUsage]
        self.overwritten: set[str] = set()

    def shard_values(self, start: int) -> dict[str, int]:
        """What a shard's output depends on besides its rows: its first row, with indices."""
        return {"offset": start} if self.spec.with_indices else {}

    # -- features ----------------------------------------------------------

    def features_for(self, schema: pa.Schema) -> Features:
        """Features of the output: the caller's, else the input's for untouched columns."""
        if self.spec.features is not None:
            return self.spec.features
        parent = self.dataset.features
        return Features(
            {
                field.name: parent[field.name]
                if field.name in parent and field.name not in self.overwritten
                else arrow_type_to_feature(field.type)
                for field in schema
            }
        )

    # -- running -----------------------------------------------------------

    def write_range(
        self, sink: TableSink, shard: Shard, first: int, start: int, stop: int, bar: Any
    ) -> None:
        """Map rows ``start`` to ``stop`` of ``shard``, whose first row is ``first``."""
        wrote = False
        for offset in range(start, stop, self.batch_size):
            size = min(self.batch_size, stop - offset)
            if self.spec.drop_last_batch and self.spec.batched and size < self.batch_size:
                break
            table = shard.read(offset, offset + size)
            sink.write(self.apply(table, first + offset))
            wrote = True
            bar.update(size)
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

            def run_range(part: tuple[Path, int, int]) -> tuple[list[str], int]:
                folder, start, stop = part
                range_sink = TableSink(_FolderWriter(folder))  # type: ignore[arg-type]
                self.write_range(range_sink, shard, first, start, stop, progress_bar(None, ""))
                range_sink.close()
                return sorted(self.overwritten), stop - start

            def what(part: tuple[Path, int, int]) -> str:
                return f"rows {first + part[1]} to {first + part[2] - 1} of the dataset"

            for overwritten, rows in in_processes(run_range, ranges, workers, what=what):
                self.overwritten |= set(overwritten)
                bar.update(rows)
            for part, _, _ in ranges:
                for path in sorted(part.iterdir()):
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
            output = _as_table(self._call_batched(inputs, offset), where)
        else:
            output = _rows_as_table(self._call_per_example(inputs, offset), offset)
        result = self._merge(table, output, where)
        if spec.features is not None:
            result = cast_table(result, spec.features)
        return result

    def _call_batched(self, inputs: pa.Table, offset: int) -> Any:
        spec = self.spec
        assert spec.function is not None
        batch = self.output_format.batch(inputs)
        args: list[Any] = (
            [batch] if spec.input_columns is None else [batch[c] for c in spec.input_columns]
        )
        if spec.with_indices:
            args.append(list(range(offset, offset + inputs.num_rows)))
        return spec.function(*args, **spec.fn_kwargs)

    def _call_per_example(self, inputs: pa.Table, offset: int) -> list[Any]:
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
        return results

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
