"""The transform methods of `Dataset` (map, filter, select, shuffle, columns, casts).

Each method checks its arguments, fingerprints the transform and runs it
through the cache; the work itself lives in the modules it delegates to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from dagster_ds.arrow._column_lineage import record, same_column_sources
from dagster_ds.arrow._exports import export
from dagster_ds.arrow._formatting import transmit_format
from dagster_ds.arrow._function_options import (
    check_mixed_types,
    with_json_for_mixed_types,
    with_no_rank,
)
from dagster_ds.arrow._map import MapSpec, map_dataset  # loaded with the package, not by a map

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset
    from dagster_ds.features import Features
    from dagster_ds.parallel import ShardExecutor


class TransformMethods:
    """Mixed into `Dataset`: the anchor's transforms, each cached by fingerprint."""

    @transmit_format
    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: str | Sequence[str] | None = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        features: Features | None = None,
        disable_nullable: bool = False,
        fn_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
        desc: str | None = None,
        try_original_type: bool | None = True,
        on_mixed_types: str | None = None,
        executor: ShardExecutor | None = None,
    ) -> Dataset:
        """Apply ``function`` to every example (or batch) and cache the result by fingerprint.

        The function gets an example as a dict (a batch as a dict of lists when
        ``batched``; Arrow tables or DataFrames after `with_format`) and returns a
        dict of columns that updates it, or None for no update. A batched
        function may return more or fewer rows than it was given, when the input
        columns are removed. ``remove_columns`` are dropped before the output is
        merged. ``num_proc``, ``desc``, ``writer_batch_size``, ``keep_in_memory``
        and ``cache_file_name`` change how it runs, not its fingerprint:
        ``cache_file_name`` also writes the result there, one Arrow file (the anchor's
        IPC stream, which `Dataset.from_file` reads), written anew on every call. With
        ``with_rank`` the function gets a last argument, the rank: None (no GPU
        worker ranks here). ``on_mixed_types="use_json"`` stores a column whose
        values mix types (dicts and lists, numbers and strings) as `Json`.
        ``executor`` runs the shards elsewhere for this call (a
        `dagster_ds.distributed.DaskExecutor`); by default the one made current
        by ``with executor:``, else ``num_proc`` local processes.

        The result's fingerprint, for a dataset in memory or on disk alike, is
        ``update_fingerprint(self.fingerprint, "map", args)`` where ``args`` holds
        ``function``, ``with_indices``, ``input_columns`` (a tuple or None),
        ``batched``, ``batch_size`` and ``drop_last_batch`` (None unless batched),
        ``remove_columns`` (a tuple), ``fn_kwargs`` (a dict), ``features`` (its
        ``to_dict()`` or None) and ``format`` (the input's format dict, ``columns``
        None when not restricted); pass ``new_fingerprint`` to choose it instead.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> ds.map(lambda x: {"a": x["a"] + 1})["a"][:]
            [2, 3]
        """
        dataset = _as_dataset(self)
        del keep_in_memory, disable_nullable, try_original_type
        check_mixed_types(on_mixed_types)
        if with_rank and function is not None:
            function = with_no_rank(function)
        if on_mixed_types == "use_json" and function is not None:
            function = with_json_for_mixed_types(function, batched)
        spec = MapSpec(
            function=function,
            with_indices=with_indices,
            input_columns=_names(input_columns),
            batched=batched,
            batch_size=batch_size if batch_size and batch_size > 0 else max(len(dataset), 1),
            drop_last_batch=drop_last_batch,
            remove_columns=_names(remove_columns) or (),
            fn_kwargs=dict(fn_kwargs or {}),
            features=features,
        )
        mapped = map_dataset(
            dataset,
            spec,
            num_proc=num_proc,
            writer_batch_size=writer_batch_size or 1000,
            load_from_cache_file=load_from_cache_file is not False,
            new_fingerprint=new_fingerprint,
            desc=desc,
            executor=executor,
        )
        if cache_file_name is not None:
            export(mapped, cache_file_name, "arrow", writer_batch_size, None, {})
        return mapped

    @transmit_format
    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        fn_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
        desc: str | None = None,
        executor: ShardExecutor | None = None,
    ) -> Dataset:
        """Keep the examples for which ``function`` returns True (an indices mapping, no copy).

        Each shard's kept positions are cached; ``num_proc`` processes, or
        ``executor`` (by default the one made current by ``with executor:``),
        compute the shards the cache lacks, as for `map`.

        Example:
            >>> Dataset.from_dict({"a": [1, 2, 3]}).filter(lambda x: x["a"] > 1)["a"][:]
            [2, 3]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._filter import filter_dataset

        del keep_in_memory, cache_file_name, writer_batch_size
        if with_rank and function is not None:
            function = with_no_rank(function)
        return filter_dataset(
            dataset,
            function,
            with_indices=with_indices,
            input_columns=_names(input_columns),
            batched=batched,
            batch_size=batch_size if batch_size and batch_size > 0 else max(len(dataset), 1),
            fn_kwargs=dict(fn_kwargs or {}),
            load_from_cache_file=load_from_cache_file is not False,
            new_fingerprint=new_fingerprint,
            desc=desc,
            num_proc=num_proc,
            executor=executor,
        )

    @transmit_format
    def select(
        self,
        indices: Iterable[int] | pa.Array,
        keep_in_memory: bool = False,
        indices_cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """The rows at ``indices``, in that order (a slice or an indices mapping, no copy).

        Example:
            >>> Dataset.from_dict({"a": [1, 2, 3]}).select([2, 0])["a"][:]
            [3, 1]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._indices import select_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        rows = indices if isinstance(indices, range | pa.Array) else list(indices)
        selected = select_rows(dataset, rows, new_fingerprint)
        return record(selected, dataset, same_column_sources(dataset.column_names))

    @transmit_format
    def shuffle(
        self,
        seed: int | None = None,
        generator: Any = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """The rows in a random order given by ``seed`` or a numpy ``generator`` (no copy).

        Example:
            >>> sorted(Dataset.from_dict({"a": [1, 2, 3]}).shuffle(seed=0)["a"][:])
            [1, 2, 3]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._indices import shuffle_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        shuffled = shuffle_rows(
            dataset, seed, generator, load_from_cache_file is not False, new_fingerprint
        )
        return record(shuffled, dataset, same_column_sources(dataset.column_names))

    @transmit_format
    def sort(
        self,
        column_names: str | Sequence[str],
        reverse: bool | Sequence[bool] = False,
        null_placement: str = "at_end",
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """The rows ordered by one or more columns (an indices mapping, no copy).

        Example:
            >>> Dataset.from_dict({"a": [2, 1]}).sort("a")["a"][:]
            [1, 2]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._indices import sort_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        ordered = sort_rows(
            dataset,
            column_names,
            reverse,
            null_placement,
            load_from_cache_file is not False,
            new_fingerprint,
        )
        return record(ordered, dataset, same_column_sources(dataset.column_names))

    @transmit_format
    def shard(
        self,
        num_shards: int,
        index: int,
        contiguous: bool = True,
        keep_in_memory: bool = False,
        indices_cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
    ) -> Dataset:
        """The ``index``-th of ``num_shards`` parts: contiguous blocks, or every n-th row.

        Example:
            >>> Dataset.from_dict({"a": [0, 1, 2, 3]}).shard(2, 1)["a"][:]
            [2, 3]
        """
        dataset = _as_dataset(self)
        from dagster_ds.errors import InvalidArgumentError

        del keep_in_memory, indices_cache_file_name, writer_batch_size  # an indices mapping
        if not 0 <= index < num_shards:
            raise InvalidArgumentError(
                f"shard: index={index} must lie in [0, num_shards={num_shards})."
            )
        size = len(dataset)
        if contiguous:
            div, mod = divmod(size, num_shards)
            start = div * index + min(index, mod)
            return dataset.select(range(start, start + div + (1 if index < mod else 0)))
        return dataset.select(range(index, size, num_shards))

    @transmit_format
    def flatten_indices(
        self, keep_in_memory: bool = False, new_fingerprint: str | None = None
    ) -> Dataset:
        """Copy the rows an indices mapping points at into a table of their own.

        Example:
            >>> Dataset.from_dict({"a": [1, 2]}).select([1]).flatten_indices()["a"][:]
            [2]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import flatten_shards

        del keep_in_memory
        return flatten_shards(dataset, new_fingerprint)

    @transmit_format
    def rename_column(
        self,
        original_column_name: str,
        new_column_name: str,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """The dataset with one column renamed (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1]}).rename_column("a", "b").column_names
            ['b']
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import rename_columns

        return rename_columns(dataset, {original_column_name: new_column_name}, new_fingerprint)

    @transmit_format
    def rename_columns(
        self, column_mapping: Mapping[str, str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset with columns renamed by ``{old: new}`` (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).rename_columns({"a": "x"}).column_names
            ['x', 'b']
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import rename_columns

        return rename_columns(dataset, column_mapping, new_fingerprint)

    @transmit_format
    def remove_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset without some columns (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).remove_columns("a").column_names
            ['b']
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import remove_columns

        return remove_columns(dataset, _names(column_names) or (), new_fingerprint)

    @transmit_format
    def select_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset with only some columns, in the given order (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).select_columns(["b"]).column_names
            ['b']
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import select_columns

        return select_columns(dataset, _names(column_names) or (), new_fingerprint)

    @transmit_format
    def add_column(
        self,
        name: str,
        column: Sequence[Any] | pa.Array,
        new_fingerprint: str | None = None,
        feature: Any = None,
    ) -> Dataset:
        """The dataset with one more column.

        Example:
            >>> Dataset.from_dict({"a": [1]}).add_column("b", ["x"])[0]
            {'a': 1, 'b': 'x'}
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import add_column

        return add_column(dataset, name, column, feature, new_fingerprint)

    @transmit_format
    def cast(
        self,
        features: Features,
        batch_size: int | None = 1000,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """The dataset cast to ``features``; casts that would lose information are refused.

        Example:
            >>> from dagster_ds.features import Features, Value
            >>> ds = Dataset.from_dict({"a": [1, 0]}).cast(Features({"a": Value("bool")}))
            >>> ds["a"][:]
            [True, False]
        """
        dataset = _as_dataset(self)
        from dagster_ds.arrow._columns import cast_dataset

        del batch_size, keep_in_memory, cache_file_name, writer_batch_size, num_proc
        return cast_dataset(dataset, features, load_from_cache_file is not False, new_fingerprint)

    @transmit_format
    def cast_column(self, column: str, feature: Any, new_fingerprint: str | None = None) -> Dataset:
        """The dataset with one column cast to ``feature``.

        Example:
            >>> from dagster_ds.features import Value
            >>> Dataset.from_dict({"a": [1]}).cast_column("a", Value("string"))["a"][:]
            ['1']
        """
        dataset = _as_dataset(self)
        dataset._require_columns([column], "cast_column")
        features = dataset.features
        features[column] = feature
        return dataset.cast(features, new_fingerprint=new_fingerprint)


def _names(names: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if names is None:
        return None
    return (names,) if isinstance(names, str) else tuple(names)


def _as_dataset(mixin: object) -> Dataset:
    """The `Dataset` this mixin is part of (it is mixed into nothing else)."""
    return cast("Dataset", mixin)
