"""One measured run of bench_scale.py: a new process, as a scheduled refresh is.

Run by the benchmark, never by hand: ``python _scale_child.py SPEC RESULT``, where SPEC
is a JSON object (``side``: ours / anchor / raw; ``pipeline``: plain / dagster / load /
memory; ``files``: the data files' glob; ``storage_options``; ``store``: the
DatasetIOManager's base_dir) and RESULT the file this process writes its own figures to:
CPU seconds and ``/proc/self/io`` after its imports and at its end, its peak RSS, the
rows it made, and the CPU of the common imports its library does not make itself
(``lent_cpu``: the library is imported first).

Between the two, it stats two marker paths that do not exist, so that a trace of the
process (strace) can count the system calls of the work alone, imports excluded.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
from typing import Any

START_MARKER = "/bench-scale-work-starts"
END_MARKER = "/bench-scale-work-ends"


def add_length(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    """The map of every pipeline (batched): adds a column, the length of each text."""
    return {"length": [len(text) for text in batch["text"]]}


def keep(batch: dict[str, list[Any]]) -> list[bool]:
    """The filter of every pipeline (batched): drops one row in three."""
    return [identifier % 3 != 0 for identifier in batch["id"]]


def _io() -> dict[str, int]:
    """This process's I/O counters (``rchar``: bytes read by any read call, page cache
    included; ``read_bytes``: bytes fetched from the storage device)."""
    with open("/proc/self/io") as file:
        return {name: int(value) for name, value in (line.split(": ") for line in file)}


def _peak_rss() -> int:
    """This process's peak resident set, in bytes (VmHWM: of this program's memory alone;
    ``ru_maxrss`` counts the parent's resident set at the fork too)."""
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: not Linux?")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _mark(path: str) -> None:
    """A system call a trace can find (the path does not exist)."""
    with contextlib.suppress(FileNotFoundError):
        os.stat(path)


def _ours_plain(spec: dict[str, Any]) -> int:
    from dagster_ds import load_dataset

    dataset = load_dataset(
        "json", data_files=spec["files"], split="train", storage_options=spec["storage_options"]
    )
    return len(dataset.map(add_length, batched=True).filter(keep, batched=True))


def _anchor_plain(spec: dict[str, Any]) -> int:
    import datasets

    dataset = datasets.load_dataset(
        "json", data_files=spec["files"], split="train", storage_options=spec["storage_options"]
    )
    return len(dataset.map(add_length, batched=True).filter(keep, batched=True))


def _raw_plain(spec: dict[str, Any]) -> int:
    """The floor of a full recompute: read every file, compute, filter (no cache)."""
    import glob

    import pyarrow as pa
    import pyarrow.json as pajson

    rows = 0
    for path in sorted(glob.glob(spec["files"])):
        table = pajson.read_json(path)
        table = table.append_column("length", pa.array(add_length(table.to_pydict())["length"]))
        rows += table.filter(pa.array(keep(table.to_pydict()))).num_rows
    return rows


def _ours_load(spec: dict[str, Any]) -> int:
    from dagster_ds import load_dataset

    return len(load_dataset("parquet", data_files=spec["files"], split="train"))


def _anchor_load(spec: dict[str, Any]) -> int:
    import datasets

    return len(datasets.load_dataset("parquet", data_files=spec["files"], split="train"))


def _materialize(assets: list[Any], selection: list[Any], spec: dict[str, Any]) -> None:
    import dagster as dg

    from dagster_ds.orchestration import DatasetIOManager

    io_manager = DatasetIOManager(base_dir=spec["store"], storage_options=spec["storage_options"])
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with dg.DagsterInstance.get() as instance:  # $DAGSTER_HOME: kept from run to run
        result = dg.materialize(
            assets,
            instance=instance,
            resources={"io_manager": io_manager},
            selection=selection,
            run_config=quiet,
        )
    if not result.success:
        raise RuntimeError(f"the run of {spec!r} failed")


def _ours_dagster(spec: dict[str, Any]) -> int:
    """A source and two assets (map, then filter), materialized on a kept instance."""
    from dagster_ds import Dataset
    from dagster_ds.orchestration import dataset_asset, dataset_source

    docs = dataset_source(
        "docs", "json", data_files=spec["files"], storage_options=spec["storage_options"]
    )

    @dataset_asset
    def measured(docs: Dataset) -> Dataset:
        return docs.map(add_length, batched=True)

    @dataset_asset
    def kept(measured: Dataset) -> Dataset:
        return measured.filter(keep, batched=True)

    _materialize([docs, measured, kept], [measured, kept], spec)
    return 0


def _ours_memory(spec: dict[str, Any]) -> int:
    """A Parquet source and one asset mapping it, materialized on a kept instance."""
    from dagster_ds import Dataset
    from dagster_ds.orchestration import dataset_asset, dataset_source

    rows = dataset_source("rows", "parquet", data_files=spec["files"])

    @dataset_asset
    def measured(rows: Dataset) -> Dataset:
        return rows.map(add_length, batched=True)

    _materialize([rows, measured], [measured], spec)
    return 0


PIPELINES = {
    ("ours", "plain"): _ours_plain,
    ("anchor", "plain"): _anchor_plain,
    ("raw", "plain"): _raw_plain,
    ("ours", "load"): _ours_load,
    ("anchor", "load"): _anchor_load,
    ("ours", "dagster"): _ours_dagster,
    ("ours", "memory"): _ours_memory,
}
IMPORTS = {"ours": ["dagster_ds"], "anchor": ["datasets"], "raw": []}
# Imported by every side before the work starts (the anchor imports them all with itself;
# dagster_ds imports some at their first use): the work's figures are the library's own.
COMMON_IMPORTS = ["numpy", "pandas", "fsspec", "pyarrow.compute", "pyarrow.json", "pyarrow.parquet"]


def main() -> None:
    spec, result_path = json.loads(sys.argv[1]), sys.argv[2]
    pipeline = PIPELINES[spec["side"], spec["pipeline"]]
    modules = COMMON_IMPORTS + IMPORTS[spec["side"]]
    if spec["pipeline"] in ("dagster", "memory"):
        modules.append("dagster")
    if "s3://" in json.dumps(spec):
        modules.append("s3fs")
    for module in IMPORTS[spec["side"]]:  # the library first: what it imports itself
        __import__(module)
    own_imports = _cpu()
    for module in modules:  # the rest, imported before the work's figures start
        __import__(module)
    cpu, io = _cpu(), _io()
    _mark(START_MARKER)
    rows = pipeline(spec)
    _mark(END_MARKER)
    end_cpu, end_io = _cpu(), _io()
    figures = {
        "rows": rows,
        "work_cpu": end_cpu - cpu,
        # CPU of the common imports the library had not made itself: a process running
        # only this pipeline would not pay it.
        "lent_cpu": cpu - own_imports,
        "work_rchar": end_io["rchar"] - io["rchar"],
        "work_read_bytes": end_io["read_bytes"] - io["read_bytes"],
        "rchar": end_io["rchar"],
        "read_bytes": end_io["read_bytes"],
        "rss_mb": _peak_rss() / 2**20,
    }
    with open(result_path, "w") as file:
        json.dump(figures, file)


if __name__ == "__main__":
    main()
