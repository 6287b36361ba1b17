"""The map-style Dataset: an Arrow table, an optional indices mapping, a fingerprint."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column import Column
from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._lineage import LineageStep
from dagster_ds.errors import ColumnNotFoundError
from dagster_ds.features import Features, cast_table
from dagster_ds.fingerprint import Hasher, update_fingerprint

if TYPE_CHECKING:
    import pandas as pd

    from dagster_ds.arrow._dict import DatasetDict
    from dagster_ds.cache import CacheEntry
    from dagster_ds.hub import PushResult

_ITER_BATCH = 1000


class Dataset:
    """A table of examples backed by Arrow, with a fingerprint that names its content.

    A dataset is an Arrow table (in memory, or memory-mapped from the cache)
    plus an optional indices mapping (what `select`, `shuffle`, `sort` and
    `filter` produce, without copying data). Every transform derives a new
    fingerprint from this one and is cached under it, so the same transform of
    the same data is computed once, in any process that shares the cache.

    Example:
        >>> ds = Dataset.from_dict({"text": ["a", "bb"]})
        >>> ds.map(lambda example: {"length": len(example["text"])})[1]
        {'text': 'bb', 'length': 2}
    """

    def __init__(
        self,
        arrow_table: pa.Table,
        *,
        features: Features | None = None,
        split: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        if features is not None:
            arrow_table = cast_table(arrow_table, features)
        self._data = arrow_table
        self._indices: pa.UInt64Array | None = None
        self._features = features or Features.from_arrow_schema(arrow_table.schema)
        self._split = split
        self._fingerprint = fingerprint or Hasher.hash(
            {"table": arrow_table, "features": self._features.to_dict()}
        )
        self._output_format = OutputFormat()
        self._entries: tuple[CacheEntry, ...] = ()
        self._lineage: tuple[LineageStep, ...] = ()

    # -- construction ----------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Sequence[Any]],
        features: Features | None = None,
        split: str | None = None,
    ) -> Dataset:
        """A dataset from a dict of columns.

        Example:
            >>> Dataset.from_dict({"a": [1, 2]}).num_rows
            2
        """
        schema = features.arrow_schema if features is not None else None
        columns: dict[str, Any] = dict(mapping)
        try:
            table = pa.Table.from_pydict(columns, schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            table = pa.Table.from_pydict(columns)
        return cls(table, features=features, split=split)

    @classmethod
    def from_list(
        cls,
        mapping: Sequence[Mapping[str, Any]],
        features: Features | None = None,
        split: str | None = None,
    ) -> Dataset:
        """A dataset from a list of rows (dicts with the same keys).

        Example:
            >>> Dataset.from_list([{"a": 1}, {"a": 2}])["a"][:]
            [1, 2]
        """
        names: dict[str, None] = {}
        for row in mapping:
            names.update(dict.fromkeys(row))
        return cls.from_dict(
            {name: [row.get(name) for row in mapping] for name in names}, features, split
        )

    @classmethod
    def from_pandas(
        cls,
        df: pd.DataFrame,
        features: Features | None = None,
        split: str | None = None,
        preserve_index: bool | None = None,
    ) -> Dataset:
        """A dataset from a pandas DataFrame (pandas must be installed).

        Example:
            >>> import pandas as pd
            >>> Dataset.from_pandas(pd.DataFrame({"a": [1, 2]})).column_names
            ['a']
        """
        table = pa.Table.from_pandas(df, preserve_index=preserve_index)
        return cls(table.replace_schema_metadata(None), features=features, split=split)

    @classmethod
    def from_generator(
        cls,
        generator: Callable[..., Iterable[Mapping[str, Any]]],
        features: Features | None = None,
        gen_kwargs: Mapping[str, Any] | None = None,
        split: str | None = None,
        writer_batch_size: int = _ITER_BATCH,
    ) -> Dataset:
        """A dataset from a generator of rows, cached under the hash of the generator and kwargs.

        Example:
            >>> def rows(n):
            ...     yield from ({"i": i} for i in range(n))
            >>> Dataset.from_generator(rows, gen_kwargs={"n": 3}).num_rows
            3
        """
        from dagster_ds.arrow._sources import dataset_from_generator

        return dataset_from_generator(
            cls, generator, features, dict(gen_kwargs or {}), split, writer_batch_size
        )

    @classmethod
    def _derived(
        cls,
        parent: Dataset | None,
        *,
        data: pa.Table,
        indices: pa.UInt64Array | None,
        fingerprint: str,
        features: Features | None = None,
        entries: Iterable[CacheEntry] = (),
        step: LineageStep | None = None,
    ) -> Dataset:
        dataset = cls.__new__(cls)
        dataset._data = data
        dataset._indices = indices
        dataset._features = features or (
            parent._features if parent else Features.from_arrow_schema(data.schema)
        )
        dataset._split = parent._split if parent else None
        dataset._fingerprint = fingerprint
        dataset._output_format = parent._output_format if parent else OutputFormat()
        dataset._entries = (*(parent._entries if parent else ()), *entries)
        dataset._lineage = (*(parent._lineage if parent else ()), *([step] if step else []))
        return dataset

    # -- properties ------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """The 32-hexadecimal-character fingerprint of this dataset's content."""
        return self._fingerprint

    @property
    def features(self) -> Features:
        """The column types."""
        return self._features.copy()

    @property
    def column_names(self) -> list[str]:
        """The column names, in order."""
        return list(self._data.column_names)

    @property
    def num_rows(self) -> int:
        """How many rows the dataset has (after its indices mapping, if any)."""
        return len(self._indices) if self._indices is not None else self._data.num_rows

    @property
    def num_columns(self) -> int:
        """How many columns the dataset has."""
        return self._data.num_columns

    @property
    def shape(self) -> tuple[int, int]:
        """``(num_rows, num_columns)``."""
        return self.num_rows, self.num_columns

    @property
    def data(self) -> pa.Table:
        """The backing Arrow table (before any indices mapping)."""
        return self._data

    @property
    def split(self) -> str | None:
        """The split name, if any."""
        return self._split

    @property
    def format(self) -> dict[str, Any]:
        """The output format, as the anchor describes it."""
        return self._output_format.as_dict()

    @property
    def cache_files(self) -> list[dict[str, str]]:
        """The cache entries that back this dataset's data and indices."""
        return [
            {"filename": entry.url, "fingerprint": entry.fingerprint} for entry in self._entries
        ]

    @property
    def lineage(self) -> tuple[LineageStep, ...]:
        """The transforms that made this dataset, oldest first."""
        return self._lineage

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"Dataset({{\n    features: {self.column_names},\n    num_rows: {self.num_rows}\n}})"

    # -- reading ---------------------------------------------------------

    def __getitem__(self, key: int | slice | Sequence[int] | str) -> Any:
        """A row (int), a batch (slice or list of ints) or a lazy `Column` (str)."""
        if isinstance(key, str):
            self._require_columns([key], "__getitem__")
            return Column(self, key)
        rows = self._read(key)
        if isinstance(key, int):
            return self._output_format.row(rows)
        return self._output_format.batch(rows)

    def __iter__(self) -> Iterator[Any]:
        plain = self._output_format == OutputFormat()
        for table in self._iter_tables(_ITER_BATCH):
            if plain:
                yield from table.to_pylist()
            else:
                for index in range(table.num_rows):
                    yield self._output_format.row(table.slice(index, 1))

    def iter(self, batch_size: int, drop_last_batch: bool = False) -> Iterator[Any]:
        """Iterate over batches of ``batch_size`` rows in the dataset's format.

        Example:
            >>> [b["a"] for b in Dataset.from_dict({"a": [1, 2, 3]}).iter(batch_size=2)]
            [[1, 2], [3]]
        """
        for table in self._iter_tables(batch_size, drop_last_batch):
            yield self._output_format.batch(table)

    def to_pandas(self) -> pd.DataFrame:
        """The whole dataset as a pandas DataFrame."""
        return self._read(slice(None)).to_pandas()

    def to_dict(self) -> dict[str, list[Any]]:
        """The whole dataset as a dict of Python lists."""
        return self._read(slice(None)).to_pydict()

    def to_list(self) -> list[dict[str, Any]]:
        """The whole dataset as a list of Python dicts."""
        return self._read(slice(None)).to_pylist()

    def _read(self, key: int | slice | Sequence[int]) -> pa.Table:
        """The rows at ``key`` (logical positions) as an Arrow table."""
        size = self.num_rows
        if isinstance(key, int):
            position = key + size if key < 0 else key
            if not 0 <= position < size:
                raise IndexError(f"Index {key} is out of range for a dataset of {size} rows.")
            if self._indices is None:
                return self._data.slice(position, 1)
            return self._data.take(self._indices.slice(position, 1))
        if isinstance(key, slice):
            start, stop, step = key.indices(size)
            if step == 1 and self._indices is None:
                return self._data.slice(start, max(stop - start, 0))
            if step == 1 and self._indices is not None:
                return self._data.take(self._indices.slice(start, max(stop - start, 0)))
            positions = pa.array(range(start, stop, step), pa.int64())
        else:
            wanted = [int(p) for p in key]
            outside = [p for p in wanted if not -size <= p < size]
            if outside:
                raise IndexError(
                    f"Indices {outside[:10]} are out of range for a dataset of {size} rows."
                )
            positions = pa.array([p + size if p < 0 else p for p in wanted], pa.int64())
        physical = self._indices.take(positions) if self._indices is not None else positions
        return self._data.take(physical)

    def _iter_tables(self, batch_size: int, drop_last_batch: bool = False) -> Iterator[pa.Table]:
        size = self.num_rows
        for start in range(0, size, batch_size):
            stop = min(start + batch_size, size)
            if drop_last_batch and stop - start < batch_size:
                return
            yield self._read(slice(start, stop))

    def _require_columns(self, names: Iterable[str], argument: str) -> None:
        missing = [name for name in names if name not in self._data.column_names]
        if missing:
            raise ColumnNotFoundError(
                f"{argument}: column(s) {missing} not in the dataset; its columns are "
                f"{self.column_names}. Check the spelling, or add the column first."
            )

    # -- formats ---------------------------------------------------------

    def with_format(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Dataset:
        """A copy whose rows, batches and columns come in another format.

        ``type`` is None/"python", "numpy", "arrow" or "pandas". Functions given
        to `map` and `filter` receive data in this format too, so an
        Arrow-vectorised map is ``ds.with_format("arrow").map(f, batched=True)``.

        Example:
            >>> Dataset.from_dict({"a": [1]}).with_format("arrow")[:].num_rows
            1
        """
        output_format = OutputFormat.create(type, columns, output_all_columns, **format_kwargs)
        if output_format.columns is not None:
            self._require_columns(output_format.columns, "with_format(columns=...)")
        fingerprint = update_fingerprint(self._fingerprint, "set_format", output_format.as_dict())
        step = LineageStep("set_format", fingerprint, (self._fingerprint,))
        dataset = Dataset._derived(
            self, data=self._data, indices=self._indices, fingerprint=fingerprint, step=step
        )
        dataset._output_format = output_format
        return dataset

    def set_format(
        self,
        type: str | None = None,
        columns: Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> None:
        """Change this dataset's format in place (see `with_format`)."""
        formatted = self.with_format(type, columns, output_all_columns, **format_kwargs)
        self._output_format, self._fingerprint = formatted._output_format, formatted._fingerprint

    def reset_format(self) -> None:
        """Return Python objects again (see `with_format`)."""
        self.set_format(None)

    # -- transforms ------------------------------------------------------

    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
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
    ) -> Dataset:
        """Apply ``function`` to every example (or batch) and cache the result by fingerprint.

        The function gets an example as a dict (a batch as a dict of lists when
        ``batched``; Arrow tables or DataFrames after `with_format`) and returns a
        dict of columns that updates it, or None for no update. A batched
        function may return more or fewer rows than it was given, when the input
        columns are removed. ``remove_columns`` are dropped before the output is
        merged. ``num_proc``, ``desc``, ``writer_batch_size``, ``keep_in_memory``
        and ``cache_file_name`` change how it runs, not its fingerprint.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> ds.map(lambda x: {"a": x["a"] + 1})["a"][:]
            [2, 3]
        """
        from dagster_ds.arrow._map import MapSpec, map_dataset

        del keep_in_memory, cache_file_name, disable_nullable
        spec = MapSpec(
            function=function,
            with_indices=with_indices,
            input_columns=_names(input_columns),
            batched=batched,
            batch_size=batch_size if batch_size and batch_size > 0 else max(len(self), 1),
            drop_last_batch=drop_last_batch,
            remove_columns=_names(remove_columns) or (),
            fn_kwargs=dict(fn_kwargs or {}),
            features=features,
        )
        return map_dataset(
            self,
            spec,
            num_proc=num_proc,
            writer_batch_size=writer_batch_size or 1000,
            load_from_cache_file=load_from_cache_file is not False,
            new_fingerprint=new_fingerprint,
            desc=desc,
        )

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
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
    ) -> Dataset:
        """Keep the examples for which ``function`` returns True (an indices mapping, no copy).

        Example:
            >>> Dataset.from_dict({"a": [1, 2, 3]}).filter(lambda x: x["a"] > 1)["a"][:]
            [2, 3]
        """
        from dagster_ds.arrow._filter import filter_dataset

        del keep_in_memory, cache_file_name, writer_batch_size, num_proc
        return filter_dataset(
            self,
            function,
            with_indices=with_indices,
            input_columns=_names(input_columns),
            batched=batched,
            batch_size=batch_size if batch_size and batch_size > 0 else max(len(self), 1),
            fn_kwargs=dict(fn_kwargs or {}),
            load_from_cache_file=load_from_cache_file is not False,
            new_fingerprint=new_fingerprint,
            desc=desc,
        )

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
        from dagster_ds.arrow._indices import select_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        rows = indices if isinstance(indices, range | pa.Array) else list(indices)
        return select_rows(self, rows, new_fingerprint)

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
        from dagster_ds.arrow._indices import shuffle_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        return shuffle_rows(
            self, seed, generator, load_from_cache_file is not False, new_fingerprint
        )

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
        from dagster_ds.arrow._indices import sort_rows

        del keep_in_memory, indices_cache_file_name, writer_batch_size
        return sort_rows(
            self,
            column_names,
            reverse,
            null_placement,
            load_from_cache_file is not False,
            new_fingerprint,
        )

    def train_test_split(
        self,
        test_size: float | int | None = None,
        train_size: float | int | None = None,
        shuffle: bool = True,
        seed: int | None = None,
        generator: Any = None,
    ) -> DatasetDict:
        """Two splits, ``train`` and ``test``, shuffled first unless ``shuffle=False``.

        Example:
            >>> ds = Dataset.from_dict({"a": list(range(8))})
            >>> splits = ds.train_test_split(test_size=0.25, seed=1)
            >>> len(splits["train"]), len(splits["test"])
            (6, 2)
        """
        from dagster_ds.arrow._dict import DatasetDict
        from dagster_ds.arrow._indices import train_test_split

        return DatasetDict(train_test_split(self, test_size, train_size, shuffle, seed, generator))

    def shard(self, num_shards: int, index: int, contiguous: bool = True) -> Dataset:
        """The ``index``-th of ``num_shards`` parts: contiguous blocks, or every n-th row.

        Example:
            >>> Dataset.from_dict({"a": [0, 1, 2, 3]}).shard(2, 1)["a"][:]
            [2, 3]
        """
        from dagster_ds.errors import InvalidArgumentError

        if not 0 <= index < num_shards:
            raise InvalidArgumentError(
                f"shard: index={index} must lie in [0, num_shards={num_shards})."
            )
        size = len(self)
        if contiguous:
            div, mod = divmod(size, num_shards)
            start = div * index + min(index, mod)
            return self.select(range(start, start + div + (1 if index < mod else 0)))
        return self.select(range(index, size, num_shards))

    def flatten_indices(
        self, keep_in_memory: bool = False, new_fingerprint: str | None = None
    ) -> Dataset:
        """Copy the rows an indices mapping points at into a table of their own.

        Example:
            >>> Dataset.from_dict({"a": [1, 2]}).select([1]).flatten_indices()["a"][:]
            [2]
        """
        from dagster_ds.arrow._results import plan, table_result

        del keep_in_memory
        transform = plan(self, "flatten_indices", {}, new_fingerprint)
        features = self._features

        def write(sink: Any) -> None:
            for table in self._iter_tables(10_000):
                sink.write(table)
            if sink.num_rows == 0:
                sink.write(self._data.schema.empty_table())

        return table_result(self, transform, write, lambda _schema: features)

    def rename_column(
        self, original_column_name: str, new_column_name: str, new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset with one column renamed (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1]}).rename_column("a", "b").column_names
            ['b']
        """
        from dagster_ds.arrow._columns import rename_columns

        return rename_columns(self, {original_column_name: new_column_name}, new_fingerprint)

    def rename_columns(
        self, column_mapping: Mapping[str, str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset with columns renamed by ``{old: new}`` (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).rename_columns({"a": "x"}).column_names
            ['x', 'b']
        """
        from dagster_ds.arrow._columns import rename_columns

        return rename_columns(self, column_mapping, new_fingerprint)

    def remove_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset without some columns (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).remove_columns("a").column_names
            ['b']
        """
        from dagster_ds.arrow._columns import remove_columns

        return remove_columns(self, _names(column_names) or (), new_fingerprint)

    def select_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """The dataset with only some columns, in the given order (zero-copy).

        Example:
            >>> Dataset.from_dict({"a": [1], "b": [2]}).select_columns(["b"]).column_names
            ['b']
        """
        from dagster_ds.arrow._columns import select_columns

        return select_columns(self, _names(column_names) or (), new_fingerprint)

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
        from dagster_ds.arrow._columns import add_column

        return add_column(self, name, column, feature, new_fingerprint)

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
        from dagster_ds.arrow._columns import cast_dataset

        del batch_size, keep_in_memory, cache_file_name, writer_batch_size, num_proc
        return cast_dataset(self, features, load_from_cache_file is not False, new_fingerprint)

    def cast_column(self, column: str, feature: Any, new_fingerprint: str | None = None) -> Dataset:
        """The dataset with one column cast to ``feature``.

        Example:
            >>> from dagster_ds.features import Value
            >>> Dataset.from_dict({"a": [1]}).cast_column("a", Value("string"))["a"][:]
            ['1']
        """
        self._require_columns([column], "cast_column")
        features = self.features
        features[column] = feature
        return self.cast(features, new_fingerprint=new_fingerprint)

    # -- storage ---------------------------------------------------------

    def save_to_disk(
        self,
        dataset_path: str,
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
        num_proc: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Save to a folder or fsspec URL; `load_from_disk` gives back the same fingerprint.

        The layout is the anchor's, writing is batch by batch (bounded memory),
        and atomic: an interrupted save leaves nothing loadable.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/saved"
            >>> ds = Dataset.from_dict({"a": [1]})
            >>> ds.save_to_disk(folder)
            >>> Dataset.load_from_disk(folder).fingerprint == ds.fingerprint
            True
        """
        from dagster_ds.arrow._disk import save_to_disk

        del num_proc
        save_to_disk(self, str(dataset_path), max_shard_size, num_shards, storage_options)

    def push_to_hub(
        self,
        repo_id: str,
        config_name: str = "default",
        set_default: bool | None = None,
        split: str | None = None,
        data_dir: str | None = None,
        commit_message: str | None = None,
        commit_description: str | None = None,
        private: bool | None = None,
        token: str | None = None,
        revision: str | None = None,
        create_pr: bool | None = False,
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
        embed_external_files: bool = True,
        num_proc: int | None = None,
        *,
        endpoint: str | None = None,
    ) -> PushResult:
        """Push to a Hub dataset repository as Parquet shards, in one commit; skip if unchanged.

        The layout is the anchor's (``<data_dir>/<split>-XXXXX-of-YYYYY.parquet``
        and README.md with ``dataset_info`` and ``configs``), so
        ``datasets.load_dataset(repo_id)`` reads it; other configs and splits on
        the Hub are kept. The card also records the fingerprint and lineage. If
        it already records this fingerprint for ``config_name``/``split`` (same
        ``data_dir``, and same ``num_shards`` when given), no commit is made and
        the result says ``skipped``. Otherwise shards are written to temporary
        files one job at a time (``num_proc`` jobs in parallel, threads),
        pre-uploaded, and committed with the card in ONE commit: readers never
        see a half-pushed split, and an interrupted push leaves the branch as it
        was (a retry finds the uploaded files on the Hub). A missing repository
        is created (``private``), but a missing ``revision`` is an error: create
        the branch first. ``embed_external_files`` has no effect (there are no
        media features). ``endpoint``: the Hub's address (default
        ``HF_ENDPOINT``, else huggingface.co).

        Returns:
            A `PushResult` (commit id and URL, or ``skipped=True``).

        Raises:
            InvalidRepoIdError: ``repo_id`` is malformed (nothing was sent).
            HubAuthError: the token is missing or refused.
            RevisionNotFoundError: ``revision`` does not exist.
            HubFeaturesMismatchError: the config's other splits have other features.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2]})
            >>> ds.push_to_hub("user/demo", token="hf_...").commit_url  # doctest: +SKIP
            'https://huggingface.co/datasets/user/demo/commit/4f5c...'
        """
        from dagster_ds.hub._push import PushTarget
        from dagster_ds.hub._sources import push_dataset

        del embed_external_files
        target = PushTarget(
            repo_id=repo_id,
            config_name=config_name,
            set_default=set_default,
            data_dir=data_dir,
            commit_message=commit_message,
            commit_description=commit_description,
            private=private,
            token=token,
            revision=revision,
            create_pr=create_pr,
            endpoint=endpoint,
        )
        return push_dataset(self, target, split, max_shard_size, num_shards, num_proc)

    @classmethod
    def load_from_disk(
        cls,
        dataset_path: str,
        keep_in_memory: bool | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Dataset:
        """Load a dataset saved by `save_to_disk` (ours or the anchor's), memory-mapped.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/saved"
            >>> Dataset.from_dict({"a": [1]}).save_to_disk(folder)
            >>> Dataset.load_from_disk(folder)["a"][:]
            [1]
        """
        from dagster_ds.arrow._disk import load_from_disk

        del keep_in_memory
        return load_from_disk(cls, str(dataset_path), storage_options)


def _names(names: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if names is None:
        return None
    return (names,) if isinstance(names, str) else tuple(names)
