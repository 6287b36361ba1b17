"""One dataset made of parts (an asset's partitions), each part one shard named by its fingerprint.

Nothing is copied: each part's rows stay in the entries they live in. A
row-local transform of the whole (a map, a filter) is cached per shard, under
the part's fingerprint, so when one part is new or changed only its shard is
computed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dagster_ds.arrow._column_lineage import combined_column_sources
from dagster_ds.arrow._shards import Shard, shards_fingerprint
from dagster_ds.errors import InvalidArgumentError
from dagster_ds.fingerprint import LineageStep

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


def dataset_of_parts(parts: Sequence[Dataset]) -> Dataset:
    """A dataset whose shards are ``parts`` in order, one shard each (zero-copy).

    Its fingerprint derives from the parts' fingerprints in order; columns
    missing from some parts (or all null in them) are null there, as in
    ``concatenate_datasets``. Split, format and class are the first part's.
    """
    from dagster_ds.arrow._combine import merged_features
    from dagster_ds.features import unify_schemas

    if not parts:
        raise InvalidArgumentError(
            "A dataset of partitions needs at least one partition; none was given. Materialize"
            " the partitions first, or narrow the partition mapping."
        )
    schema = unify_schemas([part.features.arrow_schema for part in parts], "combine partitions")
    features = merged_features([part.features for part in parts], schema)
    shards = [_one_shard(part) for part in parts]
    fingerprint = shards_fingerprint([shard.fingerprint for shard in shards])
    step = LineageStep(
        "partitions", fingerprint, tuple(part.fingerprint for part in parts)
    ).with_columns(combined_column_sources([part.column_names for part in parts], list(features)))
    dataset = type(parts[0])._from_shards(  # pyright: ignore[reportPrivateUsage]
        None, shards, fingerprint=fingerprint, features=features, step=step
    )
    dataset._split = parts[0].split  # pyright: ignore[reportPrivateUsage]
    dataset._output_format = parts[0]._output_format  # pyright: ignore[reportPrivateUsage]
    return dataset


def _one_shard(part: Dataset) -> Shard:
    """``part`` as one shard named by its fingerprint, holding every entry it uses open."""
    entries = part._entries  # pyright: ignore[reportPrivateUsage]
    shards = part._shards  # pyright: ignore[reportPrivateUsage]
    if len(shards) == 1 and part._mapping is None:  # pyright: ignore[reportPrivateUsage]
        shard = shards[0]
        return Shard(part.fingerprint, shard.rows, shard.indices, entries, shard.table_entry)
    return Shard(part.fingerprint, part.data, part._indices, entries)  # pyright: ignore[reportPrivateUsage]
