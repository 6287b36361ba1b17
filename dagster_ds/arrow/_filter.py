"""Dataset.filter: keep the examples a predicate accepts, as an indices mapping."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column_lineage import filter_column_sources, record
from dagster_ds.arrow._column_reads import ShardReads, reads_of, recorded_reads, transform_base
from dagster_ds.arrow._column_reuse import ColumnReuse
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._parallel import IndicesWork, Recipe, run_work
from dagster_ds.arrow._results import plan, units
from dagster_ds.arrow._shards import Shard
from dagster_ds.errors import TransformOutputError
from dagster_ds.fingerprint import HashNode
from dagster_ds.formatting import ReadSet, awaited_all, observed_reads, older_generations_held
from dagster_ds.parallel import ShardExecutor
from dagster_ds.progress import progress_bar

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


def filter_dataset(
    dataset: Dataset,
    function: Callable[..., Any] | None,
    *,
    with_indices: bool,
    input_columns: Sequence[str] | None,
    batched: bool,
    batch_size: int,
    fn_kwargs: Mapping[str, Any],
    load_from_cache_file: bool,
    new_fingerprint: str | None,
    desc: str | None,
    num_proc: int | None = None,
    executor: ShardExecutor | None = None,
) -> Dataset:
    """Keep the rows for which ``function`` is true (see `Dataset.filter`).

    Each shard's kept positions are cached under the transform rebased on the
    shard, computed where `run_work` says (``num_proc`` processes, or an executor).
    """
    columns = tuple(input_columns) if input_columns is not None else None
    dataset._require_columns(columns or (), "filter(input_columns=...)")  # pyright: ignore[reportPrivateUsage]
    args = {
        "function": function,
        "with_indices": with_indices,
        "input_columns": columns,
        "batched": batched,
        "batch_size": batch_size if batched else None,
        "fn_kwargs": dict(fn_kwargs),
        "format": dataset._output_format.as_dict(),  # pyright: ignore[reportPrivateUsage]
    }
    transform = plan(dataset, "filter", args, new_fingerprint)
    job = _FilterJob(
        function,
        columns,
        batched,
        batch_size if batched else 1000,
        with_indices,
        dict(fn_kwargs),
        dataset._output_format,  # pyright: ignore[reportPrivateUsage]
        transform.tree,
    )
    pieces = [
        (
            shard,
            first,
            transform.for_shard(shard.fingerprint, **({"offset": first} if with_indices else {})),
        )
        for shard, first in units(dataset)
    ]
    with progress_bar(len(dataset), desc or "Filter") as bar:
        shards = run_work(
            pieces,
            IndicesWork(
                transform,
                job.kept_rows,
                bar,
                Recipe(dataset.fingerprint, "filter", args),
                ColumnReuse(job.base, function=getattr(function, "__name__", "filter")),
            ),
            workers=min(num_proc or 1, max(len(dataset), 1)),
            load_from_cache_file=load_from_cache_file,
            executor=executor,
        )
    kept = dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset, shards, fingerprint=transform.fingerprint, step=transform.step()
    )
    reads = reads_of(shard.entries[-1] for shard in shards)
    return record(kept, dataset, filter_column_sources(dataset.column_names, reads))


@dataclass(frozen=True)
class _FilterJob:
    """The predicate of one filter call and how it is called: what a worker runs."""

    function: Callable[..., Any] | None
    columns: tuple[str, ...] | None
    batched: bool
    step: int
    with_indices: bool
    fn_kwargs: dict[str, Any]
    output_format: OutputFormat
    tree: HashNode | None = None

    def base(self, start: int) -> str | None:
        """The transform without its input, for the shard from row ``start`` (`transform_base`)."""
        return transform_base(self.tree, **({"offset": start} if self.with_indices else {}))

    def kept_rows(self, shard: Shard, first: int, bar: Any) -> tuple[pa.Array, dict[str, Any]]:
        """The positions in ``shard`` (whose first row is ``first``) that pass.

        With what the predicate read, to record (see `_column_reads`).
        """
        import pyarrow.compute as pc

        log = ShardReads()
        if self.function is None:
            return pa.array(range(shard.num_rows), pa.uint64()), {}
        kept: list[pa.Array] = []
        for offset in range(0, shard.num_rows, self.step):
            table = shard.read(offset, offset + self.step)
            mask, reads = self.keep(
                table, first + offset, lazy=not log.read_all(table.schema.names)
            )
            log.add(reads, (), ())
            kept.append(pc.add(pc.indices_nonzero(mask), pa.scalar(offset, pa.uint64())))
            bar.update(table.num_rows)
        positions = pa.concat_arrays(kept) if kept else pa.array([], pa.uint64())
        return positions, recorded_reads(log, shard, self.base(first), rows_kept=False)

    def keep(self, table: pa.Table, offset: int, *, lazy: bool = True) -> tuple[pa.Array, ReadSet]:
        """The verdict of each row of ``table``, whose first row is ``offset``; what it read.

        ``lazy``: per example in the default format, `LazyRow` examples (their reads
        observed), else plain dicts (cheaper when every column is read anyway).
        """
        function, columns, output_format = self.function, self.columns, self.output_format
        assert function is not None
        inputs = table.select(list(columns)) if columns is not None else table
        where = f"rows {offset} to {offset + table.num_rows - 1}"
        if self.batched:
            batch = (
                output_format.function_batch(inputs)  # lazy, as the anchor
                if columns is None
                else output_format.batch(inputs)
            )
            call: list[Any] = [batch] if columns is None else [batch[c] for c in columns]
            if self.with_indices:
                call.append(list(range(offset, offset + table.num_rows)))
            verdict = awaited_all([function(*call, **self.fn_kwargs)])[0]
            reads = observed_reads(batch, columns)
            return _as_mask(verdict, table.num_rows, where), reads
        with older_generations_held():  # the rows die inside: see `older_generations_held`
            verdicts, reads = self._per_example(inputs, offset, lazy)
        return _as_mask(verdicts, table.num_rows, where), reads

    def _per_example(self, inputs: pa.Table, offset: int, lazy: bool) -> tuple[list[Any], ReadSet]:
        """The function's verdict on each row of ``inputs``, and the columns it read."""
        function, columns, output_format = self.function, self.columns, self.output_format
        assert function is not None
        plain = output_format == OutputFormat()
        rows = (
            (output_format.function_rows if lazy else output_format.rows)(inputs)  # decoded
            if plain
            else [output_format.row(inputs.slice(i, 1)) for i in range(inputs.num_rows)]
        )
        verdicts = []
        for index, row in enumerate(rows):
            call = [row] if columns is None else [row[c] for c in columns]
            if self.with_indices:
                call.append(offset + index)
            verdicts.append(function(*call, **self.fn_kwargs))
        return awaited_all(verdicts), observed_reads(rows, columns)


def _as_mask(verdicts: Any, expected: int, where: str) -> pa.Array:
    import pyarrow.compute as pc

    if isinstance(verdicts, pa.ChunkedArray):
        verdicts = verdicts.combine_chunks()
    if not isinstance(verdicts, pa.Array):
        try:
            verdicts = pa.array(list(verdicts), pa.bool_())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as error:
            raise TransformOutputError(
                f"filter's function returned values that are not booleans for {where}: {error}. "
                "Return True/False per example (a list of them when batched)."
            ) from error
    if len(verdicts) != expected:
        raise TransformOutputError(
            f"filter's function returned {len(verdicts)} verdicts for {expected} rows ({where}); "
            "return exactly one boolean per row."
        )
    if not pa.types.is_boolean(verdicts.type):
        verdicts = verdicts.cast(pa.bool_())
    return pc.fill_null(verdicts, False)
