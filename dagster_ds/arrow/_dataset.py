"""The map-style Dataset: an Arrow table, an optional indices mapping, a fingerprint.

`Dataset` is the facade at the top of ``arrow/``, with `DatasetDict` (``_dict.py``),
the only module it imports back. Its methods (here and in the ``_dataset_*`` mixins,
which never import this module) call down into the engine (``_results``, ``_map``,
``_filter``, ``_indices``, ``_files``...), which works on shards and never imports
`Dataset`: a transform's result is of its parent's class (``parent._from_shards``),
and a dataset made from nothing (loaded files, a generator's rows, a stored version)
is of the class its caller passes (``cls=``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import pyarrow as pa

from dagster_ds.arrow._column import Column, as_row_key
from dagster_ds.arrow._column_lineage import same_column_sources
from dagster_ds.arrow._dataset_formats import FormatMethods
from dagster_ds.arrow._dataset_reshape import LabelMethods, ReshapeMethods
from dagster_ds.arrow._dataset_sources import SourceMethods
from dagster_ds.arrow._dataset_storage import StorageMethods
from dagster_ds.arrow._dataset_transforms import TransformMethods
from dagster_ds.arrow._formatting import OutputFormat, transmit_format
from dagster_ds.arrow._info import InfoMethods, prose_of
from dagster_ds.arrow._shards import Shard, concatenate
from dagster_ds.errors import ColumnNotFoundError
from dagster_ds.features import Features, with_features_metadata
from dagster_ds.fingerprint import LineageStep, update_fingerprint
from dagster_ds.formatting import columns_of_rows, table_of_columns, typed_table

if TYPE_CHECKING:
    import pandas as pd

    from dagster_ds.arrow._dict import DatasetDict
    from dagster_ds.cache import CacheEntry
    from dagster_ds.streaming import IterableDataset

_ITER_BATCH = 1000


class Dataset(
    TransformMethods,
    StorageMethods,
    SourceMethods,
    ReshapeMethods,
    LabelMethods,
    FormatMethods,
    InfoMethods,
):
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
        arrow_table, self._features, content = typed_table(arrow_table, features)
        self._split = split
        self._fingerprint = fingerprint or content
        self._output_format = OutputFormat()
        self._lineage: tuple[LineageStep, ...] = ()
        self._set_rows((Shard(self._fingerprint, arrow_table),), None, ())

    # -- construction ----------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Sequence[Any]],
        features: Features | None = None,
        split: str | None = None,
        info: Any = None,
        on_mixed_types: str | None = None,
    ) -> Dataset:
        """A dataset from a dict of columns.

        ``on_mixed_types="use_json"`` stores a column whose values mix types as `Json`
        (as the anchor); ``info.features`` is used when ``features`` is not given.

        Example:
            >>> Dataset.from_dict({"a": [1, 2]}).num_rows
            2
        """
        from dagster_ds.arrow._function_options import check_mixed_types

        check_mixed_types(on_mixed_types)
        if features is None and info is not None:
            features = getattr(info, "features", None)
        table, features = table_of_columns(
            mapping, features, mixed_as_json_columns=on_mixed_types == "use_json"
        )
        dataset = cls(table, features=features, split=split)
        dataset._prose = prose_of(info)
        return dataset

    @classmethod
    def from_list(
        cls,
        mapping: Sequence[Mapping[str, Any]],
        features: Features | None = None,
        split: str | None = None,
        info: Any = None,
    ) -> Dataset:
        """A dataset from a list of rows (dicts with the same keys).

        Example:
            >>> Dataset.from_list([{"a": 1}, {"a": 2}])["a"][:]
            [1, 2]
        """
        return cls.from_dict(columns_of_rows(mapping), features, split, info)

    @classmethod
    def from_pandas(
        cls,
        df: pd.DataFrame,
        features: Features | None = None,
        split: str | None = None,
        preserve_index: bool | None = None,
        info: Any = None,
    ) -> Dataset:
        """A dataset from a pandas DataFrame (pandas must be installed).

        Example:
            >>> import pandas as pd
            >>> Dataset.from_pandas(pd.DataFrame({"a": [1, 2]})).column_names
            ['a']
        """
        if features is None and info is not None:
            features = getattr(info, "features", None)
        table = pa.Table.from_pandas(df, preserve_index=preserve_index)
        dataset = cls(table.replace_schema_metadata(None), features=features, split=split)
        dataset._prose = prose_of(info)
        return dataset

    @classmethod
    def from_generator(
        cls,
        generator: Callable[..., Iterable[Mapping[str, Any]]],
        features: Features | None = None,
        gen_kwargs: Mapping[str, Any] | None = None,
        split: str | None = "train",
        writer_batch_size: int = _ITER_BATCH,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        num_proc: int | None = None,
        fingerprint: str | None = None,
    ) -> Dataset:
        """A dataset from a generator of rows, cached under the hash of the generator and kwargs.

        ``cache_dir`` is the cache the rows are stored in (and found in, by any process
        given the same folder), instead of ``$DAGSTER_DS_CACHE``. ``fingerprint`` (32
        hexadecimal characters) names the result instead of that hash, as the anchor's;
        ``keep_in_memory`` reads the rows into memory once stored; ``num_proc`` is
        accepted and the generator runs once (the rows are the same). With ``features``,
        values are cast to them (``"1"`` to an int), as the anchor. ``split`` defaults
        to ``"train"``, as the anchor.

        Example:
            >>> def rows(n):
            ...     yield from ({"i": i} for i in range(n))
            >>> Dataset.from_generator(rows, gen_kwargs={"n": 3}).num_rows
            3
        """
        from dagster_ds.arrow._dataset_sources import in_cache_dir, kept_in_memory
        from dagster_ds.arrow._sources import dataset_from_generator

        del num_proc
        with in_cache_dir(cache_dir):
            dataset = dataset_from_generator(
                cls,
                generator,
                features,
                dict(gen_kwargs or {}),
                split,
                writer_batch_size,
                fingerprint,
            )
        return kept_in_memory(dataset) if keep_in_memory else dataset

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
        """A dataset of one shard, ``data``, seen through ``indices`` (a new table's result)."""
        shard = Shard(fingerprint, data, None, tuple(entries))
        return cls._from_shards(
            parent,
            (shard,),
            fingerprint=fingerprint,
            mapping=indices,
            features=features
            or (
                parent._features if parent is not None else Features.from_arrow_schema(data.schema)
            ),
            step=step,
        )

    @classmethod
    def _from_shards(
        cls,
        parent: Dataset | None,
        shards: Sequence[Shard],
        *,
        fingerprint: str,
        mapping: pa.Array | None = None,
        mapping_entries: Iterable[CacheEntry] = (),
        features: Features | None = None,
        step: LineageStep | None = None,
    ) -> Dataset:
        """A dataset made of ``shards``, seen through ``mapping`` (logical rows) if given.

        Split, output format and lineage come from ``parent``; features too
        unless given.
        """
        dataset = cls.__new__(cls)
        if features is None:
            assert parent is not None, "a dataset without a parent needs its features"
            features = parent._features
        dataset._features = features
        dataset._split = parent._split if parent is not None else None
        dataset._prose = parent._prose if parent is not None else {}
        dataset._fingerprint = fingerprint
        dataset._output_format = parent._output_format if parent is not None else OutputFormat()
        dataset._lineage = (
            *(parent._lineage if parent is not None else ()),
            *([step] if step else []),
        )
        dataset._set_rows(tuple(shards), mapping, tuple(mapping_entries))
        return dataset

    def _set_rows(
        self,
        shards: tuple[Shard, ...],
        mapping: pa.Array | None,
        mapping_entries: tuple[CacheEntry, ...],
    ) -> None:
        """Hold ``shards`` (at least one) and ``mapping``; the physical table comes on first use.

        Shards found in the cache are opened only when their rows are read (see
        `LazyTable`): a map whose shards all hit reads none of its input.
        """
        self._shards = shards
        self._mapping = mapping
        self._mapping_entries = mapping_entries
        self._rows: tuple[pa.Table, pa.Array | None] | None = None

    def _physical(self) -> tuple[pa.Table, pa.Array | None]:
        """The shards' tables as one (with the features metadata) and the rows it holds."""
        if self._rows is None:
            table, physical = concatenate(self._shards, self._features.arrow_schema)
            if self._mapping is not None and physical is not None:
                physical = physical.take(self._mapping)
            indices = self._mapping if physical is None else physical
            self._rows = (with_features_metadata(table, self._features), indices)
        return self._rows

    @property
    def _data(self) -> pa.Table:
        return self._physical()[0]

    @property
    def _indices(self) -> pa.Array | None:
        return self._physical()[1]

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
        if self._rows is not None:  # (or the released data of a finished `with` block)
            return list(self._rows[0].column_names)
        return list(self._features)

    @property
    def num_rows(self) -> int:
        """How many rows the dataset has (after its indices mapping, if any)."""
        if self._rows is not None:
            data, indices = self._rows
            return len(indices) if indices is not None else data.num_rows
        if self._mapping is not None:
            return len(self._mapping)
        return sum(shard.num_rows for shard in self._shards)

    @property
    def num_columns(self) -> int:
        """How many columns the dataset has."""
        return len(self.column_names)

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
        """The output format, as the anchor describes it (``columns``: all, unless narrowed)."""
        described = self._output_format.as_dict()
        if described["columns"] is None:
            described["columns"] = self.column_names
        return described

    @property
    def cache_files(self) -> list[dict[str, str]]:
        """The cache entries that back this dataset's data and indices."""
        return [
            {"filename": entry.url, "fingerprint": entry.fingerprint} for entry in self._entries
        ]

    @property
    def _entries(self) -> tuple[CacheEntry, ...]:
        """Every cache entry behind the shards and the mapping, once each, in order."""
        entries = [entry for shard in self._shards for entry in shard.entries]
        return tuple(dict.fromkeys([*entries, *self._mapping_entries]))

    @property
    def num_shards(self) -> int:
        """How many shards the dataset is made of (loaded: one per group of small files)."""
        return len(self._shards)

    @property
    def lineage(self) -> tuple[LineageStep, ...]:
        """The transforms that made this dataset, oldest first."""
        return self._lineage

    def _record_column_sources(self, sources: Mapping[str, Sequence[str]]) -> None:
        """Record on the step that made this dataset which parent columns each column came from."""
        if self._lineage:
            self._lineage = (*self._lineage[:-1], self._lineage[-1].with_columns(sources))

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"Dataset({{\n    features: {self.column_names},\n    num_rows: {self.num_rows}\n}})"

    # -- reading ---------------------------------------------------------

    def __getitem__(self, key: SupportsIndex | slice | Iterable[SupportsIndex] | str) -> Any:
        """A row (int), a batch (slice or list of ints) or a lazy `Column` (str)."""
        where: int | slice | Sequence[int] | str = as_row_key(key)
        if isinstance(where, str):
            self._require_columns([where], "__getitem__")
            if self._output_format.type in ("arrow", "pandas"):  # as the anchor: the column itself
                column = self._data.select([where])
                if self._indices is not None:
                    column = column.take(self._indices)
                return self._output_format.column(column, where)
            return Column(self, where)
        rows = self._read(where)
        if isinstance(where, int):
            return self._output_format.row(rows)
        return self._output_format.batch(rows)

    def __iter__(self) -> Iterator[Any]:
        plain = self._output_format == OutputFormat()
        for table in self._iter_tables(_ITER_BATCH):
            if plain:
                yield from self._output_format.rows(table)  # decodes Json, Image, Audio
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

    def to_pandas(
        self, batch_size: int | None = None, batched: bool = False
    ) -> pd.DataFrame | Iterator[pd.DataFrame]:
        """The whole dataset as a pandas DataFrame, or (``batched``) one per ``batch_size`` rows."""
        from dagster_ds.arrow._exports import as_pandas

        if batched:
            return (as_pandas(table) for table in self._iter_tables(batch_size or _ITER_BATCH))
        return as_pandas(self._read(slice(None)))

    def to_dict(
        self, batch_size: int | None = None, batched: bool = False
    ) -> dict[str, list[Any]] | Iterator[dict[str, list[Any]]]:
        """The whole dataset as a dict of Python lists, or (``batched``) one per batch."""
        from dagster_ds.arrow._exports import as_pydict

        if batched:
            return (as_pydict(table) for table in self._iter_tables(batch_size or _ITER_BATCH))
        return as_pydict(self._read(slice(None)))

    def to_list(self) -> list[dict[str, Any]]:
        """The whole dataset as a list of Python dicts (`Json` values decoded, as the anchor)."""
        from dagster_ds.arrow._exports import as_pylist

        return as_pylist(self._read(slice(None)))

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
        missing = [name for name in names if name not in self._features]
        if missing:
            raise ColumnNotFoundError(
                f"{argument}: column(s) {missing} not in the dataset; its columns are "
                f"{self.column_names}. Check the spelling, or add the column first."
            )

    def to_iterable_dataset(self, num_shards: int = 1) -> IterableDataset:
        """A stream of this dataset's rows, in ``num_shards`` contiguous shards (zero-copy).

        More shards allow shuffling the shard order and spreading the work over
        torch ``DataLoader`` workers. Batches are slices of the Arrow table (taken
        through the indices mapping, if any); the output format is kept.

        Example:
            >>> ds = Dataset.from_dict({"a": [1, 2, 3, 4]}).to_iterable_dataset(num_shards=2)
            >>> ds.num_shards, [x["a"] for x in ds]
            (2, [1, 2, 3, 4])
        """
        from dagster_ds.streaming import stream_table

        fingerprint = update_fingerprint(
            self._fingerprint, "to_iterable_dataset", {"num_shards": num_shards}
        )
        return stream_table(
            self._data,
            self._indices,
            features=self._features,
            num_shards=num_shards,
            split=self._split,
            fingerprint=fingerprint,
            format_type=self._output_format.type,
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
        step = LineageStep("set_format", fingerprint, (self._fingerprint,)).with_columns(
            same_column_sources(self.column_names)
        )
        dataset = Dataset._from_shards(
            self,
            self._shards,
            fingerprint=fingerprint,
            mapping=self._mapping,
            mapping_entries=self._mapping_entries,
            step=step,
        )
        dataset._output_format = output_format
        return dataset

    def _relabelled(self, fingerprint: str) -> Dataset:
        """The same rows under another fingerprint (a stored asset's content fingerprint).

        The step that made them, if it is the last one, now names them by it, so
        the lineage of what is made from them leads back to that step.
        """
        relabelled = Dataset._from_shards(
            self,
            self._shards,
            fingerprint=fingerprint,
            mapping=self._mapping,
            mapping_entries=self._mapping_entries,
        )
        last = self._lineage[-1] if self._lineage else None
        if last is not None and last.fingerprint == self._fingerprint:
            renamed = LineageStep(last.transform, fingerprint, last.parents, last.columns)
            relabelled._lineage = (*self._lineage[:-1], renamed)
        return relabelled

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

    # -- splits ----------------------------------------------------------

    @transmit_format
    def train_test_split(
        self,
        test_size: float | int | None = None,
        train_size: float | int | None = None,
        shuffle: bool = True,
        stratify_by_column: str | None = None,
        seed: int | None = None,
        generator: Any = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        train_indices_cache_file_name: str | None = None,
        test_indices_cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        train_new_fingerprint: str | None = None,
        test_new_fingerprint: str | None = None,
    ) -> DatasetDict:
        """Two splits, ``train`` and ``test``, shuffled first unless ``shuffle=False``.

        ``stratify_by_column`` (a `ClassLabel` column) keeps each class's share the same
        in both splits (as the anchor; the rows chosen differ from the anchor's).

        Example:
            >>> ds = Dataset.from_dict({"a": list(range(8))})
            >>> splits = ds.train_test_split(test_size=0.25, seed=1)
            >>> len(splits["train"]), len(splits["test"])
            (6, 2)
        """
        from dagster_ds.arrow._dict import DatasetDict
        from dagster_ds.arrow._indices import train_test_split

        del keep_in_memory, load_from_cache_file, writer_batch_size
        del train_indices_cache_file_name, test_indices_cache_file_name
        if stratify_by_column is not None:
            from dagster_ds.arrow._stratify import stratified_split

            splits = stratified_split(
                self, stratify_by_column, test_size, train_size, shuffle, seed, generator
            )
        else:
            splits = train_test_split(self, test_size, train_size, shuffle, seed, generator)
        if train_new_fingerprint is not None:
            splits["train"]._fingerprint = train_new_fingerprint  # pyright: ignore[reportPrivateUsage]
        if test_new_fingerprint is not None:
            splits["test"]._fingerprint = test_new_fingerprint  # pyright: ignore[reportPrivateUsage]
        return DatasetDict(splits)
