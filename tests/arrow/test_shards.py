"""Shards: a dataset read from files with ``shard_bytes=0`` is one shard per file, and
row-local transforms run shard by shard, each output shard cached under its own fingerprint.

(Small files grouped into shards, the default: tests/arrow/test_files.py.)"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset, load_dataset
from tests.conftest import RunPython

# A batched map that logs how many rows it computed, run in a fresh process each time.
SCRIPT = """
import sys
from pathlib import Path

from dagster_ds import load_dataset

LOG = Path({log!r})


def measure(batch):
    with LOG.open("a") as log:
        log.write(f"{{len(batch['text'])}}\\n")
    return {{"length": [len(text) for text in batch["text"]]}}


def long(example):
    with LOG.open("a") as log:
        log.write("1\\n")
    return example["length"] > 3


ds = load_dataset("json", data_files={pattern!r}, split="train", shard_bytes=0)
mapped = ds.map(measure, batched=True, batch_size=500)
kept = mapped.filter(long)
print(ds.num_shards, len(kept), sum(mapped["length"][:]), kept.fingerprint)
"""


def _write_file(folder: Path, index: int, rows: int) -> None:
    lines = [
        json.dumps({"text": f"file {index} row {row} " + "x" * (row % 7)}) for row in range(rows)
    ]
    (folder / f"part-{index:03d}.jsonl").write_text("\n".join(lines) + "\n")


def _computed_rows(log: Path) -> int:
    rows = sum(int(line) for line in log.read_text().split()) if log.exists() else 0
    log.unlink(missing_ok=True)
    return rows


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@pytest.mark.slow
def test_appending_one_file_recomputes_and_stores_only_that_file(
    tmp_path: Path, run_python: RunPython
) -> None:
    source, cache, log = tmp_path / "src", tmp_path / "cache", tmp_path / "computed.log"
    source.mkdir()
    rows = 2_000
    for index in range(20):
        _write_file(source, index, rows)
    script = SCRIPT.format(log=str(log), pattern=str(source / "*.jsonl"))
    env = {"DAGSTER_DS_CACHE": str(cache)}

    first = run_python(script, env=env).split()
    assert first[0] == "20"
    assert _computed_rows(log) == 2 * 20 * rows  # map and filter, every row once
    stored = _size(cache)

    _write_file(source, 20, rows)
    second = run_python(script, env=env).split()
    assert second[0] == "21"
    recomputed = _computed_rows(log)
    assert 0 < recomputed <= 1.5 * 2 * rows  # the new file's rows, by map and by filter
    assert _size(cache) - stored <= 0.15 * stored

    # The result is the one a fresh cache computes from scratch.
    fresh = run_python(script, env={"DAGSTER_DS_CACHE": str(tmp_path / "fresh")}).split()
    assert second == fresh
    _computed_rows(log)

    (source / "part-007.jsonl").unlink()
    third = run_python(script, env=env).split()
    assert third[0] == "20"
    assert _computed_rows(log) == 0  # removing a file recomputes nothing


def _files_dataset(folder: Path, sizes: list[int], shard_bytes: int = 0) -> Dataset:
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for index, size in enumerate(sizes):
        lines = [json.dumps({"n": start + row, "s": str(start + row)}) for row in range(size)]
        (folder / f"part-{index:03d}.jsonl").write_text("".join(f"{line}\n" for line in lines))
        start += size
    pattern = str(folder / "*.jsonl")
    return load_dataset("json", data_files=pattern, split="train", shard_bytes=shard_bytes)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sizes=st.lists(st.integers(0, 7), min_size=1, max_size=5),
    batch_size=st.integers(1, 4),
    seed=st.integers(0, 3),
    shard_bytes=st.sampled_from([0, 60, 4 << 20]),  # a file per shard, some, all in one
)
def test_sharded_transforms_equal_the_same_transforms_on_one_table(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    batch_size: int,
    seed: int,
    shard_bytes: int,
) -> None:
    if sum(sizes) == 0:
        sizes = [*sizes, 1]
    sharded = _files_dataset(tmp_path_factory.mktemp("files"), sizes, shard_bytes)
    single = Dataset(
        pa.table({"n": list(range(sum(sizes))), "s": [str(n) for n in range(sum(sizes))]})
    )
    assert 1 <= sharded.num_shards <= len(sizes)
    assert shard_bytes != 0 or sharded.num_shards == len(sizes)
    assert shard_bytes != 4 << 20 or sharded.num_shards == 1
    for ds in (sharded, single):
        assert ds["n"][:] == list(range(sum(sizes)))

    def pipeline(ds: Dataset) -> list[dict[str, object]]:
        mapped = ds.map(
            lambda batch, idx: {"m": [n * 10 + i for n, i in zip(batch["n"], idx, strict=True)]},
            with_indices=True,
            batched=True,
            batch_size=batch_size,
        )
        kept = mapped.filter(lambda row, i: (row["n"] + i) % 3 != 0, with_indices=True)
        renamed = kept.rename_column("s", "text").cast_column("m", kept.features["m"])
        shuffled = renamed.shuffle(seed=seed).select(range(min(3, len(renamed))))
        return [
            *renamed.to_list(),
            *shuffled.to_list(),
            *renamed.select(range(min(1, len(renamed)), min(3, len(renamed)))).to_list(),
        ]

    assert pipeline(sharded) == pipeline(single)


def test_batches_never_straddle_shards(tmp_path: Path) -> None:
    ds = _files_dataset(tmp_path, [3, 2])
    sizes = ds.map(lambda b: {"size": [len(b["n"])] * len(b["n"])}, batched=True, batch_size=4)
    assert sizes["size"][:] == [3, 3, 3, 2, 2]


def test_each_shard_is_cached_once_whatever_the_dataset_around_it(tmp_path: Path) -> None:
    log = tmp_path / "computed.log"

    def double(batch: dict[str, list[int]]) -> dict[str, list[int]]:
        with log.open("a") as file:
            file.write(f"{len(batch['n'])}\n")
        return {"d": [n * 2 for n in batch["n"]]}

    first = _files_dataset(tmp_path / "a", [4, 5]).map(double, batched=True)
    assert _computed_rows(log) == 9
    os.remove(tmp_path / "a" / "part-000.jsonl")
    second = load_dataset("json", data_files=str(tmp_path / "a" / "*.jsonl"), split="train")
    assert second.map(double, batched=True)["d"][:] == first["d"][4:]
    assert _computed_rows(log) == 0


@pytest.mark.parametrize("sizes", [[40], [10, 10, 10, 10]], ids=["row ranges", "whole shards"])
def test_a_worker_killed_mid_map_fails_clearly_and_caches_nothing_half_done(
    tmp_path: Path, sizes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    from dagster_ds.errors import WorkerDiedError

    ds = _files_dataset(tmp_path / "files", sizes)
    log = tmp_path / "computed.log"

    def tenfold(row: dict[str, int]) -> dict[str, int]:
        if row["n"] == 25 and os.environ.get("KILL_AT_ROW_25") == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        with log.open("a") as file:
            file.write("1\n")
        return {"m": row["n"] * 10}

    monkeypatch.setenv("KILL_AT_ROW_25", "1")
    with pytest.raises(WorkerDiedError, match=r"worker process died while computing .*rows"):
        ds.map(tenfold, num_proc=2)
    _computed_rows(log)
    monkeypatch.setenv("KILL_AT_ROW_25", "0")
    again = ds.map(tenfold, num_proc=2)  # the same fingerprint: only complete shards were kept
    assert again["m"][:] == [n * 10 for n in range(sum(sizes))]
    recomputed = _computed_rows(log)
    assert recomputed >= (10 if len(sizes) > 1 else 40)  # at least the killed shard's rows


def _mapped_cache_files() -> set[str]:
    """The cache files this process has memory-mapped (Linux: /proc/self/maps)."""
    cache = os.environ["DAGSTER_DS_CACHE"]
    with open("/proc/self/maps") as maps:
        paths = {line.split(maxsplit=5)[-1].strip() for line in maps if cache in line}
    return {path for path in paths if path.startswith(cache)}


def test_shards_found_in_the_cache_are_read_only_when_their_rows_are(tmp_path: Path) -> None:
    """A refresh whose map finds its shards stored reads neither them nor their input."""

    def double(batch: dict[str, list[int]]) -> dict[str, list[int]]:
        return {"d": [n * 2 for n in batch["n"]]}

    expected = _files_dataset(tmp_path / "a", [5, 5, 5]).map(double, batched=True)["d"][:]
    gc.collect()
    before = _mapped_cache_files()
    again = _files_dataset(tmp_path / "a", [5, 5, 5]).map(double, batched=True)
    assert again.num_rows == 15
    assert again.column_names == ["n", "s", "d"]
    assert _mapped_cache_files() == before  # nothing read yet
    assert again["d"][:] == expected  # read now, on first use
    assert len(_mapped_cache_files() - before) >= 3
