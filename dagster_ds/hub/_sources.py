"""Datasets as splits to push: how many shards, and how each source shard is read."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa
import xxhash

from dagster_ds.cache import parse_size
from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep
from dagster_ds.hub._layout import file_key
from dagster_ds.hub._push import (
    OutputFile,
    PushResult,
    PushTarget,
    SplitLayout,
    SplitSource,
    check_push_arguments,
    push_splits,
)
from dagster_ds.hub._shards import shard_runs, split_evenly


class _Shard(Protocol):
    """What a push reads of one shard of a map-style dataset (`dagster_ds.arrow.Shard`)."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def num_rows(self) -> int:
        """Rows the shard holds (after its row positions, if any)."""
        ...

    @property
    def table_rows(self) -> int:
        """Rows of its table, without opening it."""
        ...

    @property
    def table(self) -> pa.Table:
        """Its table, opened now if it was not."""
        ...

    @property
    def table_entry(self) -> _Sized | None:
        """The cache entry holding its whole table, if any."""
        ...


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


class MapStyleSplit(Protocol):
    """What a push reads of a map-style dataset (`dagster_ds.arrow.Dataset`): rows as Arrow."""

    @property
    def fingerprint(self) -> str:
        """The dataset's fingerprint."""
        ...

    @property
    def features(self) -> Features:
        """The dataset's features."""
        ...

    @property
    def lineage(self) -> tuple[LineageStep, ...]:
        """The transforms that made it."""
        ...

    @property
    def split(self) -> str | None:
        """Its split, if it has one."""
        ...

    @property
    def data(self) -> pa.Table:
        """The whole Arrow table (before any indices mapping)."""
        ...

    @property
    def _shards(self) -> Sequence[_Shard]:
        """The shards the rows are made of, in order."""
        ...

    @property
    def _mapping(self) -> pa.Array | None:
        """The indices mapping over the shards' rows (None: none)."""
        ...

    def __len__(self) -> int:
        """The number of rows."""
        ...

    def _read(self, key: slice) -> pa.Table:
        """Rows ``key`` as an Arrow table, through the indices mapping."""
        ...


DEFAULT_MAX_SHARD_SIZE = 500 << 20  # the anchor's config.MAX_SHARD_SIZE
_BATCH_BYTES = 32 << 20
_MAX_BATCH_ROWS = 1 << 20
_STREAM_BATCH_ROWS = 10_000


def dataset_source(
    dataset: MapStyleSplit,
    split: str,
    num_shards: int | None,
    max_shard_size: int | str | None,
    num_proc: int | None,
) -> SplitSource:
    """A map-style dataset as output files of contiguous rows (planned when it is pushed).

    Without ``num_shards`` or ``max_shard_size``, a dataset gets a file per
    shard (an empty shard none; a shard over 500 MiB of Arrow data is cut in
    even parts), each keyed by the shard's fingerprint, so a shard already on
    the Hub is not written again. Through an indices mapping (a ``select`` of
    a list), the file of a shard holds the rows the mapping takes from it, and
    its key adds their positions, as long as the mapping keeps the shards'
    order. A mapping that does not (a shuffle, most sorts: the order of the
    rows is then the content) and ``num_shards`` or ``max_shard_size`` cut the
    rows as the anchor does: ``num_shards`` files, or the Arrow size over
    ``max_shard_size`` (500 MiB by default) plus one, at least ``num_proc``.
    """
    limit = parse_size(max_shard_size) if max_shard_size is not None else DEFAULT_MAX_SHARD_SIZE
    if limit <= 0:
        raise InvalidArgumentError(
            f"push_to_hub: max_shard_size must be positive, got {max_shard_size!r}."
        )
    follow = num_shards is None and max_shard_size is None

    def layout() -> SplitLayout:
        schema = dataset.features.arrow_schema.serialize().to_pybytes()
        pieces = _shard_pieces(dataset, schema, limit) if follow else None
        ranked = pieces is not None
        if pieces is None:
            pieces = _cut(dataset, schema, num_shards, limit, num_proc)
        ranges, keys, sizes = pieces
        return _map_style_layout(dataset, ranges, keys, sizes, ranked=ranked)

    return SplitSource(
        name=split,
        fingerprint=dataset.fingerprint,
        features=dataset.features,
        lineage=dataset.lineage,
        layout=layout,
        requested_shards=num_shards,
        workers=num_proc or 1,
    )


_Pieces = tuple[list[tuple[int, int]], list[str], list[int]]


def _shard_pieces(dataset: MapStyleSplit, schema: bytes, limit: int) -> _Pieces | None:
    """Row ranges, keys and Arrow sizes of the files following ``dataset``'s shards.

    None when an indices mapping does not keep the shards' order.
    """
    shards = dataset._shards  # pyright: ignore[reportPrivateUsage]
    mapping = dataset._mapping  # pyright: ignore[reportPrivateUsage]
    starts = list(itertools.accumulate((shard.num_rows for shard in shards), initial=0))
    if mapping is None:
        runs = [(i, starts[i], starts[i + 1]) for i in range(len(shards))]
    else:
        found = shard_runs(mapping, starts)
        if found is None:
            return None
        runs = found
    ranges: list[tuple[int, int]] = []
    keys: list[str] = []
    sizes: list[int] = []
    for index, start, stop in runs:
        shard = shards[index]
        rows = stop - start
        if not rows:
            continue
        # The entry's size when there is one: the table is not opened (nor read) for it.
        whole = shard.table_entry.size if shard.table_entry is not None else shard.table.nbytes
        nbytes = whole * rows // max(shard.table_rows, 1)
        taken = () if mapping is None else (_positions(mapping, start, stop, starts[index]),)
        parts = int(nbytes / limit) + 1
        for part in range(parts):
            low, high = split_evenly(rows, parts, part)
            ranges.append((start + low, start + high))
            keys.append(file_key(shard.fingerprint, f"{part}/{parts}", schema, *taken))
            sizes.append(nbytes * (high - low) // rows)
    if not ranges:  # no rows: one empty file, as the anchor writes
        return [(0, 0)], [file_key(dataset.fingerprint, "empty", schema)], [0]
    return ranges, keys, sizes


def _positions(mapping: pa.Array, start: int, stop: int, first: int) -> bytes:
    """Names the rows of its shard that ``mapping[start:stop]`` takes (its first row ``first``)."""
    import numpy as np

    rows = mapping.slice(start, stop - start).to_numpy(zero_copy_only=False).astype(np.uint64)
    return xxhash.xxh3_128_digest((rows - np.uint64(first)).tobytes())


def _cut(
    dataset: MapStyleSplit, schema: bytes, num_shards: int | None, limit: int, num_proc: int | None
) -> _Pieces:
    """Row ranges, keys and Arrow sizes of the anchor's cut into ``num_shards`` even parts."""
    rows = len(dataset)
    table = dataset.data
    nbytes = table.nbytes * rows // table.num_rows if table.num_rows else 0
    count = num_shards if num_shards is not None else max(int(nbytes / limit) + 1, num_proc or 1)
    ranges = [split_evenly(rows, count, i) for i in range(count)]
    keys = [file_key(dataset.fingerprint, f"{i}/{count}", schema) for i in range(count)]
    sizes = [nbytes * (high - low) // rows if rows else 0 for low, high in ranges]
    return ranges, keys, sizes


def _map_style_layout(
    dataset: MapStyleSplit,
    ranges: list[tuple[int, int]],
    keys: list[str],
    sizes: list[int],
    *,
    ranked: bool,
) -> SplitLayout:
    rows = len(dataset)
    nbytes = sum(sizes)
    row_bytes = max(nbytes // rows, 1) if rows else 1
    batch_rows = max(1, min(_BATCH_BYTES // row_bytes, _MAX_BATCH_ROWS))

    def read(index: int) -> Iterator[pa.Table]:
        start, stop = ranges[index]
        for offset in range(start, stop, batch_rows):
            yield dataset._read(slice(offset, min(offset + batch_rows, stop)))  # pyright: ignore[reportPrivateUsage]

    files = tuple(
        OutputFile(key, high - low, size)
        for key, (low, high), size in zip(keys, ranges, sizes, strict=True)
    )
    return SplitLayout(files=files, ranked=ranked, num_sources=len(files), read=read)


def iterable_source(
    dataset: Any,
    split: str,
    num_shards: int | None,
    max_shard_size: int | str | None,
    num_proc: int | None,
) -> SplitSource:
    """A streaming dataset as its own shards, each read once, in Arrow batches.

    By default, a file per stream shard, named by the bytes written (ranked
    names, see `dagster_ds.hub._layout`): a shard whose file the split already
    has is read and written (nothing else says what it holds) but not
    uploaded, so appending a source file uploads one file. With
    ``num_shards`` (more output shards than source shards are filled round
    robin) or ``max_shard_size`` (the stream is read once first to measure it,
    as the anchor does), the files are the anchor's cut, keyed by the stream's
    fingerprint and their place in the cut.
    """
    limit = parse_size(max_shard_size) if max_shard_size is not None else None
    if limit is not None and limit <= 0:
        raise InvalidArgumentError(
            f"push_to_hub: max_shard_size must be positive, got {max_shard_size!r}."
        )
    features = dataset.features
    if features is None:
        features = _first_schema_features(dataset)
    sources = int(dataset.num_shards)

    def layout() -> SplitLayout:
        count = num_shards
        if count is None and limit is not None:
            nbytes = sum(table.nbytes for table in _arrow_batches(dataset))
            count = max(int(nbytes / limit) + 1, num_proc or 1)
        read = _StreamReader(dataset, sources)
        if count is None:
            files = tuple(OutputFile(None) for _ in range(max(sources, 1)))
            return SplitLayout(files=files, ranked=True, num_sources=sources, read=read)
        schema = features.arrow_schema.serialize().to_pybytes()
        files = tuple(
            OutputFile(file_key(dataset.fingerprint, f"{i}/{count}", schema)) for i in range(count)
        )
        return SplitLayout(files=files, ranked=False, num_sources=sources, read=read)

    return SplitSource(
        name=split,
        fingerprint=dataset.fingerprint,
        features=features,
        lineage=tuple(getattr(dataset, "lineage", ())),
        layout=layout,
        requested_shards=num_shards,
        workers=num_proc or 1,
        processes=(num_proc or 1) > 1,
    )


class _StreamReader:
    """Reads source shard ``index`` of a stream; pickles (with dill) for worker processes."""

    def __init__(self, dataset: Any, num_sources: int) -> None:
        self.dataset = dataset
        self.num_sources = num_sources

    def __call__(self, index: int) -> Iterator[pa.Table]:
        shard = self.dataset.shard(num_shards=self.num_sources, index=index, contiguous=True)
        return _arrow_batches(shard)


def _arrow_batches(dataset: Any) -> Iterator[pa.Table]:
    return dataset.with_format("arrow").iter(batch_size=_STREAM_BATCH_ROWS)


def _first_schema_features(dataset: Any) -> Features:
    """The features of a stream whose features are unknown (after a map): its first batch's."""
    first = next(iter(dataset.with_format("arrow").iter(batch_size=1)), None)
    if first is None:
        raise InvalidArgumentError(
            "push_to_hub: the streaming dataset is empty and its features are unknown; "
            "cast it to known features first (ds.cast(features))."
        )
    return Features.from_arrow_schema(first.schema)


def push_iterable(
    dataset: Any,
    target: PushTarget,
    split: str | None,
    max_shard_size: int | str | None,
    num_shards: int | None,
    num_proc: int | None,
) -> PushResult:
    """`IterableDataset.push_to_hub` (see there)."""
    name = split if split is not None else dataset.split or "train"
    check_push_arguments(target, [name], max_shard_size, {name: num_shards})
    source = iterable_source(dataset, name, num_shards, max_shard_size, num_proc)
    return push_splits(target, [source], replace_splits=False)


def push_dataset(
    dataset: MapStyleSplit,
    target: PushTarget,
    split: str | None,
    max_shard_size: int | str | None,
    num_shards: int | None,
    num_proc: int | None,
) -> PushResult:
    """`Dataset.push_to_hub` (see there)."""
    name = split if split is not None else dataset.split or "train"
    check_push_arguments(target, [name], max_shard_size, {name: num_shards})
    source = dataset_source(dataset, name, num_shards, max_shard_size, num_proc)
    return push_splits(target, [source], replace_splits=False)


def push_dataset_dict(
    splits: Mapping[str, Any],
    target: PushTarget,
    max_shard_size: int | str | None,
    num_shards: Mapping[str, int | None] | None,
    num_proc: int | None,
    *,
    streaming: bool = False,
) -> PushResult:
    """`DatasetDict.push_to_hub` (and `IterableDatasetDict`'s with ``streaming``)."""
    shards: Mapping[str, Any] = num_shards or {}
    if not isinstance(shards, Mapping):
        raise InvalidArgumentError(
            "DatasetDict.push_to_hub: num_shards must be a dict of split to count, e.g. "
            f"{{'train': 8, 'test': 1}}; got {num_shards!r}."
        )
    unknown = sorted(set(shards) - set(splits))
    if unknown:
        raise InvalidArgumentError(
            f"DatasetDict.push_to_hub: num_shards names unknown split(s) {unknown}; the splits "
            f"are {sorted(splits)}."
        )
    if not splits:
        raise InvalidArgumentError("DatasetDict.push_to_hub: the DatasetDict has no split.")
    check_push_arguments(target, list(splits), max_shard_size, dict(shards))
    make_source = iterable_source if streaming else dataset_source
    sources = [
        make_source(dataset, name, shards.get(name), max_shard_size, num_proc)
        for name, dataset in splits.items()
    ]
    return push_splits(target, sources, replace_splits=True)
