"""Partitioned dataset sources: each partition's files named by a template, observed by content.

``data_files`` (and ``data_dir``) of a partitioned `dataset_source` are
templates: ``{partition_key}`` is the partition's key and, for time-window
partitions, ``{start}`` and ``{end}`` are the window's datetimes (so
``"logs/{start:%Y/%m/%d}/*.jsonl"`` works). Each partition's data version is
the fingerprint `load_dataset` gives its files, a hash of their content: a
partition whose files did not change keeps its data version.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from dagster_ds.arrow import Dataset, dataset_of_parts
from dagster_ds.errors import DatasetAssetDefinitionError, DatasetSourceNotFoundError
from dagster_ds.orchestration._partitions import newest_record_id
from dagster_ds.orchestration._provenance import remember
from dagster_ds.orchestration._source_versions import load_sources
from dagster_ds.streaming import IterableDataset

if TYPE_CHECKING:
    from dagster_ds.orchestration.source import _SourceSpec  # pyright: ignore[reportPrivateUsage]

_FIELDS = ("{partition_key", "{start", "{end")


def check_templates(asset: str, data_files: Any, data_dir: str | None) -> None:
    """Refuse a partitioned source whose files do not depend on the partition.

    Raises:
        DatasetAssetDefinitionError: Neither ``data_files`` nor ``data_dir`` has a placeholder.
    """
    texts = [*_strings(data_files), *([data_dir] if data_dir else [])]
    if not any(field in text for text in texts for field in _FIELDS):
        raise DatasetAssetDefinitionError(
            f"dataset_source {asset!r} is partitioned, but its data_files {data_files!r} and"
            f" data_dir {data_dir!r} name the same files for every partition. Put"
            " '{partition_key}' (or, for time windows, '{start:%Y-%m-%d}') in data_files,"
            " e.g. data_files='logs/{partition_key}.jsonl'."
        )


def for_partition(
    spec: _SourceSpec, partitions_def: dg.PartitionsDefinition, key: str
) -> _SourceSpec:
    """The source spec of partition ``key``: its templates filled in."""
    values: dict[str, Any] = {"partition_key": key}
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        window = partitions_def.time_window_for_partition_key(key)
        values.update(start=window.start, end=window.end)
    return dataclasses.replace(
        spec,
        data_files=_fill(spec.data_files, values),
        data_dir=spec.data_dir.format(**values) if spec.data_dir is not None else None,
        partition=key,
    )


def observer(
    spec: _SourceSpec,
    partitions_def: dg.PartitionsDefinition,
) -> Callable[[dg.OpExecutionContext], dg.DataVersionsByPartition]:
    """The observe function: each partition's files' fingerprint (the run's partition, else all).

    Partitions whose files do not exist (yet) are not observed, and the log says so.
    """

    def observe(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
        if context.has_partition_key:
            keys = [context.partition_key]
        else:
            keys = list(
                partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
            )
        versions: dict[str, dg.DataVersion] = {}
        missing: list[str] = []
        for key in keys:
            try:
                dataset = for_partition(spec, partitions_def, key).load()
            except DatasetSourceNotFoundError:
                missing.append(key)
                continue
            versions[key] = dg.DataVersion(dataset.fingerprint)
        context.log.info(
            f"Observed {len(versions)} partition(s) of {spec.asset} by content"
            + (f"; {len(missing)} without files: {missing[:5]}" if missing else ".")
        )
        # DataVersionsByPartition is a Dagster beta class, and the documented way for a
        # partitioned observable source to report a data version per partition.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dg.BetaWarning)
            return dg.DataVersionsByPartition(versions)

    return observe


def load_partitions(
    spec: _SourceSpec,
    partitions_def: dg.PartitionsDefinition,
    keys: Sequence[str],
    keep_versions: int | None = None,
) -> Dataset | IterableDataset:
    """The partitions ``keys``: one as loaded, several as one dataset (a shard per partition).

    Each partition loads as a stored version of its own (`load_sources`): an asset
    reading one partition records that version, and names its changed columns.
    """
    loaded = load_sources([for_partition(spec, partitions_def, key) for key in keys], keep_versions)
    if len(loaded) == 1:
        return loaded[0]
    if all(isinstance(part, Dataset) for part in loaded):
        return dataset_of_parts([part for part in loaded if isinstance(part, Dataset)])
    from dagster_ds.combine import concatenate_datasets

    return concatenate_datasets([part for part in loaded if isinstance(part, IterableDataset)])


def remember_observed(
    context: dg.InputContext, dataset: Dataset | IterableDataset, keys: Sequence[str]
) -> None:
    """Record what a step read of a partitioned source: its fingerprint, as the input version.

    Dagster's own input data version of a partitioned observable source is not
    the partitions' (it hashes nothing), so the step tags the fingerprint of the
    partitions it read, pointing at their latest observation.
    """
    storage_id = newest_record_id(context.instance, context.asset_key, keys, observed=True)
    if storage_id is not None:
        remember(dataset, storage_id)


def _fill(data_files: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(data_files, str):
        return data_files.format(**values)
    if isinstance(data_files, Mapping):
        return {split: _fill(files, values) for split, files in data_files.items()}
    if isinstance(data_files, list | tuple):
        return [_fill(files, values) for files in data_files]
    return data_files


def _strings(data_files: Any) -> list[str]:
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, Mapping):
        return [text for files in data_files.values() for text in _strings(files)]
    if isinstance(data_files, list | tuple):
        return [text for files in data_files for text in _strings(files)]
    return []
