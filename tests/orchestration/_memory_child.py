"""The first materialization of a Parquet source and one asset mapping it, as its own process.

``python -m tests.orchestration._memory_child FILES BASE_DIR`` materializes, in the
instance of ``$DAGSTER_HOME``, a `dataset_source` of the Parquet files ``FILES`` (a
glob) and an asset that maps it, stored in ``BASE_DIR`` (the cache is
``$DAGSTER_DS_CACHE``), and prints as JSON the peak resident set of the work
(``VmHWM``, reset after the imports) and the resident set it started from (after
the imports), in bytes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import dagster as dg
import s3fs  # noqa: F401  (imported before the peak is reset, as a store on S3 imports it)

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source


def add_length(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"length": [len(text) for text in batch["text"]]}


def _reset_peak() -> None:
    """Make ``VmHWM`` this process's current resident set (Linux's clear_refs, value 5)."""
    with open("/proc/self/clear_refs", "w") as file:
        file.write("5")


def _status(name: str) -> int:
    """A size in ``/proc/self/status`` (``VmHWM``, ``VmRSS``), in bytes."""
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(f"{name}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {name} in /proc/self/status")


def main(files: str, base_dir: str) -> None:
    rows = dataset_source("rows", "parquet", data_files=files)

    @dataset_asset
    def measured(rows: Dataset) -> Dataset:
        return rows.map(add_length, batched=True)

    io_manager = DatasetIOManager(base_dir=base_dir)
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with dg.DagsterInstance.get() as instance:
        _reset_peak()
        start = _status("VmRSS")
        result = dg.materialize(
            [rows, measured],
            instance=instance,
            resources={"io_manager": io_manager},
            selection=[measured],
            run_config=quiet,
        )
        assert result.success
    print(json.dumps({"peak": _status("VmHWM"), "start": start}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
