"""Datasets as splits to push: how many shards, and how each source shard is read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._disk import _parse_size  # pyright: ignore[reportPrivateUsage]
from dagster_ds.errors import InvalidArgumentError
from dagster_ds.hub._push import (
    PushResult,
    PushTarget,
    SplitSource,
    check_push_arguments,
    push_splits,
)
from dagster_ds.hub._shards import split_evenly

if TYPE_CHECKING:
    from dagster_ds.arrow import Dataset, DatasetDict

DEFAULT_MAX_SHARD_SIZE = 500 << 20  # the anchor's config.MAX_SHARD_SIZE
_BATCH_BYTES = 32 << 20
_MAX_BATCH_ROWS = 1 << 20


def dataset_source(
    dataset: Dataset,
    split: str,
    num_shards: int | None,
    max_shard_size: int | str | None,
    num_proc: int | None,
) -> SplitSource:
    """A map-style dataset as ``num_shards`` contiguous row ranges (the anchor's sharding).

    Without ``num_shards``, the count is the dataset's Arrow size over
    ``max_shard_size`` (500 MiB by default) plus one, and at least ``num_proc``.
    """
    rows = len(dataset)
    table = dataset.data
    nbytes = table.nbytes * rows // table.num_rows if table.num_rows else 0
    count = num_shards
    if count is None:
        limit = (
            _parse_size(max_shard_size) if max_shard_size is not None else DEFAULT_MAX_SHARD_SIZE
        )
        if limit <= 0:
            raise InvalidArgumentError(
                f"push_to_hub: max_shard_size must be positive, got {max_shard_size!r}."
            )
        count = max(int(nbytes / limit) + 1, num_proc or 1)
    row_bytes = max(nbytes // rows, 1) if rows else 1
    batch_rows = max(1, min(_BATCH_BYTES // row_bytes, _MAX_BATCH_ROWS))

    def read(index: int) -> Iterator[pa.Table]:
        start, stop = split_evenly(rows, count, index)
        for offset in range(start, stop, batch_rows):
            yield dataset._read(slice(offset, min(offset + batch_rows, stop)))  # pyright: ignore[reportPrivateUsage]

    return SplitSource(
        name=split,
        fingerprint=dataset.fingerprint,
        features=dataset.features,
        lineage=dataset.lineage,
        num_sources=count,
        read=read,
        num_shards=count,
        requested_shards=num_shards,
        workers=num_proc or 1,
    )


def push_dataset(
    dataset: Dataset,
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
    splits: DatasetDict,
    target: PushTarget,
    max_shard_size: int | str | None,
    num_shards: Mapping[str, int | None] | None,
    num_proc: int | None,
) -> PushResult:
    """`DatasetDict.push_to_hub` (see there)."""
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
    sources = [
        dataset_source(dataset, name, shards.get(name), max_shard_size, num_proc)
        for name, dataset in splits.items()
    ]
    return push_splits(target, sources, replace_splits=True)
