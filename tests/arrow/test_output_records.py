"""A transform's outputs record: a cached map or filter is one read, an append finds the rest.

Every run is a new process (a scheduled refresh). What the transforms open and
stat is counted with strace between two marks the pipeline makes around them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from dagster_ds.arrow._entries import read_table
from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheCorruptionWarning, CacheEntryDamagedError
from tests import _fast
from tests.conftest import REPO_ROOT

ROWS = 30

PIPELINE = """
import os
from pathlib import Path
from dagster_ds import load_dataset

CALLS = Path(os.environ["CALLS"])

def measure(batch):
    with CALLS.open("a") as f:
        f.write("".join(f"map {i}\\n" for i in batch["id"]))
    return {"words": [len(text.split()) for text in batch["text"]]}

def keep(batch):
    with CALLS.open("a") as f:
        f.write("".join(f"filter {i}\\n" for i in batch["id"]))
    return [i % 3 != 0 for i in batch["id"]]

def mark(what):  # seen by strace: what happens between the marks is the transforms'
    os.path.exists(f"/dagster-ds-mark-{what}")

def run(folder):
    # A shard per file (not grouped): the tests count what happens per shard.
    ds = load_dataset("json", data_files=f"{folder}/*.jsonl", split="train", shard_bytes=0)
    mark("begin")
    out = ds.map(measure, batched=True).filter(keep, batched=True)
    mark("end")
    return out
"""

RUN = """
import json, warnings, pipeline
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = pipeline.run({folder!r})
    rows = out.to_list()
print(json.dumps({{"rows": rows, "warnings": [w.category.__name__ for w in caught]}}))
"""

_CALL = re.compile(r"^\d+\s+(open|openat|creat|stat|lstat|fstat|newfstatat|statx)\(")


class Project:
    """A folder of JSON Lines files and the pipeline over them, run in new processes."""

    def __init__(self, root: Path, files: int) -> None:
        self.root = root
        self.data = root / "data"
        self.data.mkdir(parents=True)
        (root / "pipeline.py").write_text(PIPELINE)
        self.calls = root / "calls"
        for _ in range(files):
            self.append()

    def append(self) -> None:
        index = len(list(self.data.glob("*.jsonl")))
        lines = (
            json.dumps({"id": index * ROWS + row, "text": "word " * (1 + row % 4)})
            for row in range(ROWS)
        )
        (self.data / f"part-{index:04d}.jsonl").write_text("\n".join(lines) + "\n")

    def run(self, *, traced: bool = False, cache: Path | None = None) -> dict:
        """Run the pipeline in a new process: its rows and warnings, its calls, its syscalls."""
        self.calls.write_text("")
        env = {
            **os.environ,
            "CALLS": str(self.calls),
            "PYTHONPATH": os.pathsep.join([str(self.root), str(REPO_ROOT)]),
            "PYTHONDONTWRITEBYTECODE": "1",
            **({"DAGSTER_DS_CACHE": str(cache)} if cache is not None else {}),
        }
        trace = self.root / "trace"
        prefix = ["strace", "-f", "-qq", "-o", str(trace)] if traced else []
        # Forked from the warm server, or started cold under strace (to see every syscall).
        completed = _fast.run(
            [*prefix, sys.executable, "-c", textwrap.dedent(RUN.format(folder=str(self.data)))],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        result = json.loads(completed.stdout)
        result["calls"] = self.calls.read_text().split("\n")[:-1]
        if traced:
            result["syscalls"] = _between_marks(trace.read_text().splitlines())
        return result


def _between_marks(lines: list[str]) -> list[str]:
    """The opens and stats between the pipeline's two marks."""
    begin = next(i for i, line in enumerate(lines) if "dagster-ds-mark-begin" in line)
    end = next(i for i, line in enumerate(lines) if "dagster-ds-mark-end" in line)
    return [line for line in lines[begin + 1 : end] if _CALL.match(line)]


def _manifests(syscalls: list[str]) -> list[str]:
    return [line for line in syscalls if "manifest.json" in line and "open" in line]


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


@needs_strace
def test_an_unchanged_rerun_opens_one_record_per_transform_whatever_the_shard_count(
    tmp_path: Path,
) -> None:
    counts = {}
    for files in (8, 40):
        project = Project(tmp_path / str(files), files)
        first = project.run()
        again = project.run(traced=True)
        assert again["rows"] == first["rows"]
        assert again["calls"] == []
        syscalls = again["syscalls"]
        # In the store: the map's record and the filter's, and nothing per shard, not
        # even a stat (the rest is the interpreter's: imports, the function's source).
        in_store = [line for line in syscalls if os.environ["DAGSTER_DS_CACHE"] in line]
        assert in_store == _manifests(syscalls), in_store
        assert len(in_store) == 2, in_store
        counts[files] = len(syscalls)
    assert counts[40] == counts[8], counts


@needs_strace
def test_an_append_computes_the_new_file_only_and_finds_the_others_in_few_reads(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path / "project", 12)
    project.run()
    project.append()
    appended = project.run(traced=True)
    new_ids = [str(12 * ROWS + row) for row in range(ROWS)]
    assert appended["calls"] == [f"map {i}" for i in new_ids] + [f"filter {i}" for i in new_ids]
    fresh = project.run(cache=tmp_path / "fresh-cache")
    assert appended["rows"] == fresh["rows"]
    # Per transform: its record (absent), its index, the previous record, and the new
    # shard's lookups (before and after taking its lock): not one per shard.
    reads = [line for line in _manifests(appended["syscalls"]) if "O_RDONLY" in line]
    assert len(reads) == 10, reads
    again = project.run(traced=True)
    assert again["rows"] == fresh["rows"]
    assert again["calls"] == []
    assert len(_manifests(again["syscalls"])) == 2


@pytest.mark.parametrize("transform", ["map", "filter"])
def test_a_damaged_output_shard_is_computed_again_when_read(tmp_path: Path, transform: str) -> None:
    project = Project(tmp_path / "project", 5)
    first = project.run()
    store = CacheStore()
    outputs = [i for i in store.ls() if i.files and i.metadata.get("transform") == transform]
    assert len(outputs) == 5
    damaged = outputs[2]
    input_key = str(damaged.metadata["parents"][0])  # type: ignore[index]
    # The input of the filter is the map's output: its ids are in the map's input.
    for info in store.ls():
        if info.fingerprint == input_key and info.metadata.get("transform") == "map":
            input_key = str(info.metadata["parents"][0])  # type: ignore[index]
    entry = store.lookup(input_key)
    assert entry is not None
    with entry:
        ids = read_table(entry).column("id").to_pylist()
    path = Path(store.entry_url(damaged.fingerprint)) / damaged.files[0]
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a lookup's stat sees nothing
    again = project.run()
    assert again["rows"] == first["rows"]
    assert "CacheCorruptionWarning" in again["warnings"]
    assert again["calls"] == [f"{transform} {i}" for i in ids]


def test_a_damaged_loaded_shard_says_it_cannot_be_computed_again_here(tmp_path: Path) -> None:
    from dagster_ds import load_dataset

    project = Project(tmp_path / "project", 1)
    ds = load_dataset("json", data_files=str(project.data / "*.jsonl"), split="train")
    (entry,) = ds._shards[0].entries
    path = Path(entry.url) / entry.files[0]
    path.write_bytes(b"\0" * path.stat().st_size)
    with pytest.warns(CacheCorruptionWarning), pytest.raises(CacheEntryDamagedError) as raised:
        ds.to_list()
    assert "cannot compute it again" in str(raised.value)
    assert "Load or compute the dataset again" in str(raised.value)
    again = load_dataset("json", data_files=str(project.data / "*.jsonl"), split="train")
    assert len(again.to_list()) == ROWS
