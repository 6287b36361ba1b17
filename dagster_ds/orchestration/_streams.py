"""Streaming assets: an IterableDataset written to storage in bounded memory, read back as one."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa

from dagster_ds.arrow import Dataset
from dagster_ds.features import Features
from dagster_ds.streaming import IterableDataset

_BATCH_ROWS = 10_000
_DATA_FILE = "data-00000-of-00001.arrow"
STREAM_FLAG = "streaming"


def write_stream(dataset: IterableDataset, folder: str) -> None:
    """Write ``dataset`` batch by batch as a ``save_to_disk`` folder (one Arrow stream file).

    The folder is what `Dataset.save_to_disk` writes, with ``"streaming": true``
    in ``state.json``, so it loads as a memory-mapped `Dataset` too.
    """
    os.makedirs(folder)
    declared = dataset.features
    schema: pa.Schema | None = declared.arrow_schema if declared is not None else None
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    with open(os.path.join(folder, _DATA_FILE), "wb") as file:
        for table in dataset.with_format("arrow").iter(batch_size=_BATCH_ROWS):
            target: pa.Schema = schema or table.schema
            schema = target
            writer = writer or pa.ipc.new_stream(file, target)
            writer.write_table(table if table.schema == target else table.cast(target))
        if writer is None:
            writer = pa.ipc.new_stream(file, schema or pa.schema([]))
        writer.close()
    features = declared or Features.from_arrow_schema(schema or pa.schema([]))
    lineage = [step.to_dict() for step in getattr(dataset, "lineage", ())]
    _write_json(os.path.join(folder, "dataset_info.json"), {"features": features.to_dict()})
    _write_json(
        os.path.join(folder, "state.json"),  # last: the folder is complete once it exists
        {
            "_data_files": [{"filename": _DATA_FILE}],
            "_fingerprint": dataset.fingerprint,
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": dataset.split,
            "_dagster_ds": {"lineage": lineage, STREAM_FLAG: True},
        },
    )


def is_stream(state: dict[str, Any]) -> bool:
    """Whether a folder's ``state.json`` says it holds a streaming asset."""
    return bool(state.get("_dagster_ds", {}).get(STREAM_FLAG, False))


def as_stream(dataset: Dataset, fingerprint: str) -> IterableDataset:
    """A stored dataset streamed back (zero-copy slices), with the stored fingerprint."""
    from dagster_ds.streaming._construct import stream_table

    return stream_table(
        dataset.data,
        None,
        features=dataset.features,
        num_shards=1,
        split=dataset.split,
        fingerprint=fingerprint,
        format_type=None,
    )


def relabel_stream(dataset: IterableDataset, fingerprint: str) -> IterableDataset:
    """The same lazy pipeline, under the asset's fingerprint."""
    return IterableDataset(
        dataset._node,  # pyright: ignore[reportPrivateUsage]
        features=dataset._declared,  # pyright: ignore[reportPrivateUsage]
        formatter=dataset._formatter,  # pyright: ignore[reportPrivateUsage]
        split=dataset.split,
        fingerprint=fingerprint,
    )


def _write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2)
