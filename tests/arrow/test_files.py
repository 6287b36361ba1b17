"""Loading many small files: read into shards of about ``shard_bytes`` each, so an edit
recomputes only the shards around it, and the rows are those of one shard per file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dagster_ds import Dataset, load_dataset
from dagster_ds.errors import CacheCorruptionWarning
from tests.conftest import RunPython

FILES, ROWS = 1_000, 200

# A batched map and filter that log the rows of each call (one call per shard: batches never
# straddle shards, and none is bigger than 10**9 rows), in a fresh process each time.
SCRIPT = """
import json
from pathlib import Path

from dagster_ds import load_dataset

LOG = Path({log!r})


def logged(kind, batch):
    with LOG.open("a") as log:
        log.write(json.dumps([kind, batch["id"][0], len(batch["id"])]) + "\\n")


def measure(batch):
    logged("map", batch)
    return {{"length": [len(text) for text in batch["text"]]}}


def even(batch):
    logged("filter", batch)
    return [n % 2 == 0 for n in batch["id"]]


ds = load_dataset("json", data_files={pattern!r}, split="train")
mapped = ds.map(measure, batched=True, batch_size=10**9)
kept = mapped.filter(even, batched=True, batch_size=10**9)
print(json.dumps({{
    "shards": ds.num_shards,
    "rows": len(ds),
    "kept": len(kept),
    "ids": kept["id"][:] == list(range(0, len(ds), 2)),
    "length": sum(mapped["length"][:]),
    "fingerprint": kept.fingerprint,
}}))
"""


def _write_file(folder: Path, index: int, words: str = "row") -> None:
    lines = (
        json.dumps({"id": index * ROWS + row, "text": f"{words} {index} {row} " * (1 + row % 5)})
        for row in range(ROWS)
    )
    (folder / f"part-{index:05d}.jsonl").write_text("\n".join(lines) + "\n")


def _calls(log: Path) -> dict[str, list[tuple[int, int]]]:
    """The (first id, rows) of each call of the map and of the filter, since the last read."""
    calls: dict[str, list[tuple[int, int]]] = {"map": [], "filter": []}
    if log.exists():
        for line in log.read_text().splitlines():
            kind, first, rows = json.loads(line)
            calls[kind].append((first, rows))
        log.unlink()
    return calls


def _run(run_python: RunPython, script: str, cache: Path) -> dict[str, Any]:
    return json.loads(run_python(script, env={"DAGSTER_DS_CACHE": str(cache)}))


def _holding(calls: list[tuple[int, int]], row_id: int) -> tuple[int, int]:
    """The call (a shard: first id, rows) that held the row ``row_id``."""
    return next(call for call in calls if call[0] <= row_id < call[0] + call[1])


@pytest.fixture
def many_files(tmp_path: Path) -> tuple[Path, Path, str]:
    source, log = tmp_path / "src", tmp_path / "computed.log"
    source.mkdir()
    for index in range(FILES):
        _write_file(source, index)
    return source, log, SCRIPT.format(log=str(log), pattern=str(source / "*.jsonl"))


@pytest.mark.slow
def test_appending_one_of_many_small_files_recomputes_only_the_last_shard(
    tmp_path: Path, run_python: RunPython, many_files: tuple[Path, Path, str]
) -> None:
    source, log, script = many_files
    cache = tmp_path / "cache"
    first = _run(run_python, script, cache)
    shards = _calls(log)["map"]
    assert 2 <= first["shards"] == len(shards) < FILES / 10  # grouped, and more than one
    assert first["rows"] == sum(rows for _, rows in shards) == FILES * ROWS

    _write_file(source, FILES)
    second = _run(run_python, script, cache)
    recomputed = _calls(log)
    fresh = _run(run_python, script, tmp_path / "fresh")
    from_scratch = _calls(log)
    assert second == fresh  # the rows, and their fingerprint, of a recompute from scratch
    # Only the last shard (the one the new file joined) was computed, by map and by filter.
    assert recomputed["map"] == from_scratch["map"][-1:] == recomputed["filter"]
    assert recomputed["map"][0][0] >= shards[-1][0]  # no row before the last shard's


@pytest.mark.slow
def test_changing_a_middle_file_recomputes_only_the_shard_it_is_in(
    tmp_path: Path, run_python: RunPython, many_files: tuple[Path, Path, str]
) -> None:
    source, log, script = many_files
    cache = tmp_path / "cache"
    first = _run(run_python, script, cache)
    shards = _calls(log)["map"]
    middle = FILES // 2
    start, rows = _holding(shards, middle * ROWS)

    _write_file(source, middle, words="changed words")
    second = _run(run_python, script, cache)
    recomputed = _calls(log)
    fresh = _run(run_python, script, tmp_path / "fresh")
    from_scratch = _calls(log)
    assert second == fresh
    assert second["length"] != first["length"]  # the change is seen
    assert set(recomputed["map"]) <= set(from_scratch["map"])
    for first, count in recomputed["map"]:  # within the shard that held the changed file
        assert start <= first
        assert first + count <= start + rows
    assert sum(count for _, count in recomputed["map"]) == rows


def test_shard_bytes_zero_reads_a_shard_per_file_with_the_same_rows_and_fingerprint(
    tmp_path: Path,
) -> None:
    for index in range(6):
        _write_file(tmp_path, index, words="row " * (30 if index == 3 else 1))  # 3 is big
    pattern = str(tmp_path / "*.jsonl")
    grouped = load_dataset("json", data_files=pattern, split="train")
    per_file = load_dataset("json", data_files=pattern, split="train", shard_bytes=0)
    small = load_dataset("json", data_files=pattern, split="train", shard_bytes="50kB")
    assert (grouped.num_shards, per_file.num_shards) == (1, 6)
    assert 3 <= small.num_shards < 6  # the big file is a shard of its own
    for other in (per_file, small):
        assert other.fingerprint == grouped.fingerprint
        assert other.to_list() == grouped.to_list()
    from_json = Dataset.from_json(pattern, shard_bytes=0)
    assert from_json.num_shards == 6
    assert from_json.to_list() == grouped.to_list()


def test_files_of_other_columns_in_one_shard_read_as_in_shards_of_their_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.jsonl").write_text('{"a": 1, "b": null}\n')
    (tmp_path / "b.jsonl").write_text('{"b": "x", "c": 2.5}\n{"a": 3, "c": 1}\n')
    pattern = str(tmp_path / "*.jsonl")
    grouped = load_dataset("json", data_files=pattern, split="train")
    per_file = load_dataset("json", data_files=pattern, split="train", shard_bytes=0)
    assert grouped.num_shards == 1
    assert grouped.features == per_file.features
    assert grouped.to_list() == per_file.to_list()
    assert grouped.map(lambda row: {"d": row["c"]})["d"][:] == [None, 2.5, 1.0]


def test_explaining_two_loads_of_a_shard_names_the_file_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from dagster_ds.cli import main

    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the results are in the dataset cache
    for index in range(3):
        _write_file(tmp_path, index)
    pattern = str(tmp_path / "*.jsonl")
    before = load_dataset("json", data_files=pattern, split="train")
    _write_file(tmp_path, 1, words="changed")
    after = load_dataset("json", data_files=pattern, split="train")
    (old,), (new,) = before.cache_files, after.cache_files  # one shard of the 3 files
    result = CliRunner().invoke(main, ["hash", "explain", old["fingerprint"], new["fingerprint"]])
    assert result.exit_code == 0, result.output
    assert f"file {str(tmp_path / 'part-00001.jsonl')!r}: changed" in result.output
    assert "part-00000" not in result.output


def test_num_proc_over_grouped_files_gives_the_rows_of_one_process(tmp_path: Path) -> None:
    for index in range(6):
        _write_file(tmp_path, index)
    ds = load_dataset("json", data_files=str(tmp_path / "*.jsonl"), split="train")
    assert ds.num_shards == 1  # fewer shards than processes: split into row ranges

    def words(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
        return {"words": [len(text.split()) for text in batch["text"]]}

    one = ds.map(words, batched=True, batch_size=50)
    two = ds.map(words, batched=True, batch_size=50, num_proc=2)
    assert two.to_list() == one.to_list()
    assert two.filter(lambda row: row["words"] > 6, num_proc=2).to_list() == [
        row for row in one.to_list() if row["words"] > 6
    ]


# Loads three Parquet files (and maps n_chars over them with "map" in argv), then prints the
# rows whose columns were hashed for column fingerprints (each column's rows counted) and the
# rows the map function was called on. sys.setprofile only observes the calls.
HASHING = """
import json, sys, threading
from pathlib import Path

from dagster_ds import load_dataset
from dagster_ds.fingerprint._arrow import _ColumnStreams

FEED = _ColumnStreams.feed.__code__
hashed = [0]
mapped = [0]

def observe(frame, event, arg):
    if event == "call" and frame.f_code is FEED and frame.f_back.f_code is not FEED:
        hashed[0] += len(frame.f_locals["column"])

def n_chars(batch):
    mapped[0] += len(batch["text"])
    return {"n_chars": [len(text) for text in batch["text"]]}

sys.setprofile(observe)
threading.setprofile(observe)
files = sorted(str(path) for path in Path(sys.argv[1]).glob("*.parquet"))
dataset = load_dataset("parquet", data_files=files, split="train", shard_bytes=0)
if "map" in sys.argv:
    dataset = dataset.map(n_chars, batched=True)
sys.setprofile(None)
threading.setprofile(None)
print(json.dumps([hashed[0], mapped[0]]))
"""


def test_a_new_process_hashes_only_the_edited_files_columns(
    run_python: RunPython, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "data"
    data.mkdir()
    for index in range(3):
        rows = range(20)
        table = pa.table({"text": [f"t{index}-{row}" for row in rows], "label": [0] * 20})
        pq.write_table(table, data / f"part-{index}.parquet")
    env = {"DAGSTER_DS_CACHE": str(tmp_path / "cache")}
    script = tmp_path / "hashing.py"
    script.write_text(HASHING)

    def run(*args: str) -> list[int]:
        """[rows hashed (per column), rows mapped] in a new process."""
        return json.loads(
            run_python(
                f"import runpy, sys; sys.argv = ['x', {str(data)!r}, *{list(args)!r}];"
                f" runpy.run_path({str(script)!r}, run_name='__main__')",
                env=env,
            )
        )

    assert run("map")[1] == 60
    edited = pa.table({"text": [f"t1-{row}" for row in range(20)], "label": [1] * 20})
    pq.write_table(edited, data / "part-1.parquet")
    # Loading reads the edited file only, and fingerprints its two columns as it stores them.
    assert run() == [2 * 20, 0]
    # A new process reusing the map by its read column (text) hashes no column again.
    assert run("map") == [0, 0]


def test_appending_a_file_reads_only_that_file_when_its_group_was_the_last_one_stored(
    s3_endpoint: str,
) -> None:
    # The files before it in its group are the last group stored before: its entry holds
    # their rows, and their fingerprints say they are the same, so they are not read again.
    import s3fs

    from tests.conftest import s3_requests

    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    options = {"endpoint_url": s3_endpoint, "skip_instance_cache": True}

    def write(index: int) -> None:
        rows = (json.dumps({"id": index * 3 + row, "text": f"row {row}"}) for row in range(3))
        fs.pipe(f"datasets/src/part-{index:03d}.jsonl", "\n".join(rows).encode())

    def load(**kwargs: Any) -> Dataset:
        return load_dataset(
            "json",
            data_files="s3://datasets/src/*.jsonl",
            storage_options=options,
            split="train",
            **kwargs,
        )

    for index in range(6):
        write(index)
    assert load().num_shards == 1  # tiny files: one group
    write(6)
    with s3_requests() as requests:
        appended = load()
        rows = appended["id"][:]
    read = {match[1] for line in requests.lines for match in re.finditer(r"GET (/\S+)", line)}
    assert {path for path in read if "/src/" in path} == {"/datasets/src/part-006.jsonl"}, read
    assert rows == list(range(21))
    assert appended.fingerprint == load(shard_bytes=0).fingerprint


def test_appending_a_file_after_the_last_group_was_damaged_reads_every_file_again(
    tmp_path: Path,
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for index in range(6):
        _write_file(source, index)
    loaded = load_dataset("json", data_files=str(source / "*.jsonl"), split="train")
    assert loaded.num_shards == 1
    entries = [Path(cached["filename"]) for cached in loaded.cache_files]
    for data in (path for entry in entries for path in entry.glob("data-*.arrow")):
        with data.open("r+b") as file:  # the last group's rows, as stored, are damaged
            file.seek(-16, 2)
            file.write(b"\x00" * 16)
    _write_file(source, 6)
    with pytest.warns(CacheCorruptionWarning, match="is corrupt"):
        appended = load_dataset("json", data_files=str(source / "*.jsonl"), split="train")
    assert appended["id"][:] == list(range(7 * ROWS))
