"""Transform results are cached by fingerprint and reused by later processes."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_ds import Dataset, UnhashableTransformWarning
from dagster_ds.arrow._entries import read_table
from dagster_ds.cache import CacheStore
from tests import _fast
from tests.conftest import REPO_ROOT, RunPython

PIPELINE = """
import json, os, sys
from pathlib import Path
from dagster_ds import Dataset

COUNTER = Path(os.environ["COUNTER"])
OFFSET = int(os.environ.get("OFFSET", "1"))

def add(example):
    with COUNTER.open("a") as f:
        f.write("x")
    return {"b": example["a"] + OFFSET}

def run(rows=50, **kwargs):
    ds = Dataset.from_dict({"a": list(range(rows))})
    out = ds.map(add, **kwargs)
    return ds, out
"""


def _project(tmp_path: Path, pipeline: str = PIPELINE) -> Path:
    (tmp_path / "pipeline.py").write_text(pipeline)
    return tmp_path


def _run_pipeline(run_python: RunPython, project: Path, counter: Path, **env: str) -> dict:
    printed = run_python(
        """
        import json, pipeline
        ds, out = pipeline.run()
        print(json.dumps({"parent": ds.fingerprint, "fp": out.fingerprint, "b": out["b"][:]}))
        """,
        path=[project],
        env={"COUNTER": str(counter), **env},
    )
    return json.loads(printed)


def _calls(counter: Path) -> int:
    return len(counter.read_text()) if counter.exists() else 0


def test_the_seed_example_has_two_fingerprints_that_every_process_agrees_on(
    run_python: RunPython,
) -> None:
    source = """
        from dagster_ds import Dataset
        dataset1 = Dataset.from_dict({"a": [1, 2, 3]})
        dataset2 = dataset1.map(lambda x: {"a": x["a"] + 1})
        print(dataset1._fingerprint, dataset2._fingerprint)
    """
    first, second = run_python(source), run_python(source, env={"PYTHONHASHSEED": "9"})
    assert first == second
    parent, child = first.split()
    assert parent != child


def test_a_second_process_reuses_an_in_memory_map_without_calling_the_function(
    run_python: RunPython, tmp_path: Path
) -> None:
    project, counter = _project(tmp_path), tmp_path / "calls"
    first = _run_pipeline(run_python, project, counter)
    assert _calls(counter) == 50
    second = _run_pipeline(run_python, project, counter)
    assert _calls(counter) == 50
    assert second == first
    assert first["b"] == [a + 1 for a in range(50)]


def test_changing_the_function_a_global_or_an_argument_recomputes(
    run_python: RunPython, tmp_path: Path
) -> None:
    project, counter = _project(tmp_path), tmp_path / "calls"
    base = _run_pipeline(run_python, project, counter)
    other_global = _run_pipeline(run_python, project, counter, OFFSET="2")
    assert other_global["fp"] != base["fp"]
    assert other_global["b"][0] == 2
    assert _calls(counter) == 100
    _project(
        tmp_path, PIPELINE.replace('{"b": example["a"] + OFFSET}', '{"b": example["a"] - OFFSET}')
    )
    edited = _run_pipeline(run_python, project, counter)
    assert edited["fp"] != base["fp"]
    assert _calls(counter) == 150
    argument = run_python(
        "import pipeline; print(pipeline.run(input_columns=None, fn_kwargs={})[1].fingerprint)",
        path=[project],
        env={"COUNTER": str(counter)},
    )
    assert argument == edited["fp"]


def test_an_unhashable_transform_is_recomputed_every_time(tmp_path: Path) -> None:
    import sqlite3

    connection = sqlite3.connect(":memory:")
    calls: list[int] = []

    def lookup(example: dict) -> dict:
        calls.append(1)
        return {"one": connection.execute("select 1").fetchone()[0]}

    ds = Dataset.from_dict({"a": [1, 2]})
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first, second = ds.map(lookup), ds.map(lookup)
    finally:
        connection.close()
    assert first.fingerprint != second.fingerprint
    assert len(calls) == 4
    assert first["one"][:] == [1, 1]
    assert any(issubclass(w.category, UnhashableTransformWarning) for w in caught)


def test_with_caching_disabled_results_live_in_a_temporary_folder_removed_at_exit(
    run_python: RunPython, tmp_path: Path
) -> None:
    project, counter = _project(tmp_path), tmp_path / "calls"
    printed = run_python(
        """
        import json, pipeline
        from dagster_ds.cache import disable_caching
        disable_caching()
        _, first = pipeline.run()
        _, second = pipeline.run()
        files = [first.cache_files[0]["filename"], second.cache_files[0]["filename"]]
        print(json.dumps({"fps": [first.fingerprint, second.fingerprint], "files": files}))
        """,
        path=[project],
        env={"COUNTER": str(counter)},
    )
    result = json.loads(printed)
    assert _calls(counter) == 100
    enabled = _run_pipeline(run_python, project, counter)
    assert result["fps"] == [enabled["fp"], enabled["fp"]]
    assert _calls(counter) == 150
    assert result["files"][0] != result["files"][1]
    for url in result["files"]:
        assert not Path(url.removeprefix("file://")).exists()
        assert not url.removeprefix("file://").startswith(os.environ["DAGSTER_DS_CACHE"])


def test_four_processes_compute_an_expensive_map_once(tmp_path: Path) -> None:
    project, counter = _project(tmp_path), tmp_path / "calls"
    script = (
        "import json, pipeline\n_, out = pipeline.run(rows=400)\nprint(json.dumps(out['b'][:]))\n"
    )
    env = {**os.environ, "COUNTER": str(counter), "PYTHONPATH": f"{project}{os.pathsep}{REPO_ROOT}"}
    processes = [
        _fast.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0], outputs
    results = [json.loads(stdout) for stdout, _ in outputs]
    assert all(result == results[0] for result in results)
    assert _calls(counter) == 400


def test_a_corrupted_cache_file_is_detected_and_recomputed(
    run_python: RunPython, tmp_path: Path
) -> None:
    project, counter = _project(tmp_path), tmp_path / "calls"
    first = _run_pipeline(run_python, project, counter)
    entry = CacheStore().lookup(first["fp"])
    assert entry is not None
    local = entry.local_path(next(name for name in entry.files if name.startswith("data-")))
    assert local is not None
    path = Path(local)
    entry.close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    printed = run_python(
        """
        import json, warnings, pipeline
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, out = pipeline.run()
            b = out["b"][:]  # detected when read: a cached map's rows are read on first use
        print(json.dumps({"b": b, "warnings": [w.category.__name__ for w in caught]}))
        """,
        path=[project],
        env={"COUNTER": str(counter)},
    )
    result = json.loads(printed)
    assert result["b"] == first["b"]
    assert "CacheCorruptionWarning" in result["warnings"]
    assert _calls(counter) == 100


# A writer server: it imports dagster_ds and builds the dataset once, then forks a writer
# (computes the map, publishes its entry) per line read. It prints the writer's pid, then,
# once the writer ended or was killed, "ended" and the fingerprint the writer reported
# (nothing when killed first). Each writer is a process of its own, killed without the
# second of interpreter start-up in between.
_WRITERS = """
import os, sys
from dagster_ds import Dataset
ds = Dataset.from_dict({"a": list(range(100_000))})
for _ in sys.stdin:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = ds.map(
            lambda b: {"b": [v * 2 for v in b["a"]], "pad": ["x" * 40] * len(b["a"])},
            batched=True,
        )
        out.data  # its rows, read (a map found in the cache is read on first use)
        os.write(write, out.fingerprint.encode())
        os._exit(0)
    os.close(write)
    print(pid, flush=True)
    os.waitpid(pid, 0)
    with os.fdopen(read) as reported:
        print("ended", reported.read(), flush=True)
"""


# Kills spread over a writer's life, from its fork to a moment after it would have ended.
KILLS = 40


@pytest.mark.slow
def test_killing_a_writer_at_random_moments_never_leaves_a_loadable_partial_result() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    store = CacheStore()
    with _fast.Popen(
        [sys.executable, "-c", textwrap.dedent(_WRITERS)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as server:
        _kill_writers_of(server, store)


def _kill_writers_of(server: subprocess.Popen[str], store: CacheStore) -> None:
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None
    assert stdout is not None

    def start_writer() -> int:
        stdin.write("write\n")
        stdin.flush()
        return int(stdout.readline())

    def end_of_writer() -> str:
        ended, _, fingerprint = stdout.readline().strip().partition(" ")
        assert ended == "ended"
        return fingerprint

    try:
        start_writer()
        started = time.monotonic()
        fingerprint = end_of_writer()
        writing = time.monotonic() - started  # a writer's life, to spread the kills over
        assert fingerprint
        rng = random.Random(20261129)
        complete = 0
        for _ in range(KILLS):
            store.remove(fingerprint, force=True)
            writer = start_writer()
            time.sleep(rng.uniform(0.0, 1.5 * writing))
            with contextlib.suppress(ProcessLookupError):
                os.kill(writer, signal.SIGKILL)
            assert end_of_writer() in ("", fingerprint)
            entry = store.lookup(fingerprint)
            if entry is not None:
                with entry:
                    table = read_table(entry)
                assert table.column("b").to_pylist() == [v * 2 for v in range(100_000)]
                complete += 1
        assert complete < KILLS, "some kills should land before the entry is published"
        store.remove(fingerprint, force=True)
        start_writer()  # after all those kills, a writer publishes the entry again
        assert end_of_writer() == fingerprint
    finally:
        stdin.close()
        server.wait(timeout=60)
    entry = store.lookup(fingerprint)
    assert entry is not None
    with entry:
        assert read_table(entry).column("b").to_pylist() == [v * 2 for v in range(100_000)]
    store.clean_tmp(older_than=0)
    tmp = Path(os.environ["DAGSTER_DS_CACHE"]) / "tmp"
    assert not tmp.exists() or not any(tmp.iterdir())


@pytest.mark.parametrize("ipc_format", ["stream", "file"])
def test_entries_load_in_either_arrow_ipc_format(tmp_path: Path, ipc_format: str) -> None:
    # Entries are written as IPC streams; those written as IPC files by earlier
    # releases still load, zero-copy from the memory map.
    table = pa.table({"n": list(range(1000)), "s": [str(i) for i in range(1000)]})
    store = CacheStore(tmp_path)
    with store.writer("a" * 32) as writer, writer.open("data-00000.arrow") as file:
        opener = pa.ipc.new_stream if ipc_format == "stream" else pa.ipc.new_file
        with opener(file, table.schema) as ipc:
            ipc.write_table(table)
    entry = store.lookup("a" * 32)
    assert entry is not None
    with entry:
        allocated = pa.total_allocated_bytes()
        loaded = read_table(entry)
        assert pa.total_allocated_bytes() - allocated < table.nbytes // 10  # memory-mapped
        assert loaded.equals(table)
