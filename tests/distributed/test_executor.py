"""DaskExecutor on a real 2-worker cluster, with the cache on a real S3 server (moto)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from dagster_ds import Dataset, load_dataset
from dagster_ds.cache import CacheCorruptionWarning, CacheStore, cache_root
from dagster_ds.distributed import DaskExecutor, ShardCounts
from dagster_ds.errors import ShardTaskError, StaleWorkerError, WorkerDiedError
from tests import _fast
from tests.conftest import REPO_ROOT
from tests.distributed import _functions
from tests.distributed._functions import double, keep_even, logged, pids
from tests.distributed.conftest import ROWS_PER_FILE, S3, in_cache, write_files

Cache = tuple[str, dict[str, Any]]


def _load(files: list[str]) -> Dataset:
    """The files, a shard each (small files would share one): these tests count shards."""
    return load_dataset("json", data_files=files, split="train", shard_bytes=0)


def _firsts(count: int, start: int = 0) -> list[int]:
    return [i * ROWS_PER_FILE for i in range(start, start + count)]


def _driver_script(
    cache: Cache, files: list[str], kwargs: dict[str, Any], function: str, method: str = "map"
) -> str:
    """A second driver: maps (or filters) the same files on the cluster, prints what it found
    and computed."""
    return textwrap.dedent(
        f"""
        import json, sys
        from dagster_ds import load_dataset
        from dagster_ds.cache import cache_root
        from dagster_ds.distributed import DaskExecutor
        from tests.distributed._functions import {function} as function

        with cache_root({cache[0]!r}, {cache[1]!r}):
            dataset = load_dataset("json", data_files={files!r}, split="train", shard_bytes=0)
            print("ready", flush=True)
            sys.stdin.readline()  # the test says go
            with DaskExecutor(address=sys.argv[1]) as executor:
                out = dataset.{method}(function, batched=True, fn_kwargs={kwargs!r})
            print(json.dumps({{"fingerprint": out.fingerprint, "rows": out.to_dict(),
                              "cached": executor.counts.cached,
                              "computed": executor.counts.computed}}))
        """
    )


def _start_driver(script: str, address: str) -> subprocess.Popen[str]:
    process = _fast.Popen(
        [sys.executable, "-c", script, address],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", process.stderr
    return process


def _finish_driver(process: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


def _go(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()


def test_the_distributed_map_equals_the_local_map_and_a_second_driver_computes_nothing(
    client: Any, s3_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log")}
    executor = DaskExecutor(client)
    with in_cache(s3_cache):
        distributed = _load(files).map(double, batched=True, fn_kwargs=kwargs, executor=executor)
        rows = distributed.to_dict()
    assert executor.counts == ShardCounts(cached=0, computed=3)
    assert sorted(logged(kwargs["log"])) == _firsts(3)

    second = _start_driver(
        _driver_script(s3_cache, files, kwargs, "double"), client.scheduler.address
    )
    _go(second)
    report = _finish_driver(second)
    assert (report["cached"], report["computed"]) == (3, 0)
    assert report["fingerprint"] == distributed.fingerprint
    assert sorted(logged(kwargs["log"])) == _firsts(3)  # nobody ran the function again

    with cache_root(str(tmp_path / "local-cache")):
        local = _load(files).map(double, batched=True, fn_kwargs=kwargs, num_proc=2)
    assert local.fingerprint == distributed.fingerprint
    assert local.to_dict() == rows == report["rows"]
    assert distributed["double"][:] == [2 * i for i in range(3 * ROWS_PER_FILE)]


def test_the_distributed_filter_equals_the_local_filter_and_a_second_driver_computes_nothing(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log")}
    with in_cache(shared_cache), DaskExecutor(client) as executor:
        distributed = _load(files).filter(_functions.keep_even, batched=True, fn_kwargs=kwargs)
        rows = distributed.to_dict()
    assert executor.counts == ShardCounts(cached=0, computed=3)
    assert sorted(logged(kwargs["log"])) == _firsts(3)
    assert os.getpid() not in pids(kwargs["log"])  # the cluster's workers ran the predicate

    second = _start_driver(
        _driver_script(shared_cache, files, kwargs, "keep_even", method="filter"),
        client.scheduler.address,
    )
    _go(second)
    report = _finish_driver(second)
    assert (report["cached"], report["computed"]) == (3, 0)
    assert report["fingerprint"] == distributed.fingerprint
    assert sorted(logged(kwargs["log"])) == _firsts(3)  # nobody ran the predicate again

    with cache_root(str(tmp_path / "local-cache")):
        local = _load(files).filter(_functions.keep_even, batched=True, fn_kwargs=kwargs)
        forked = _load(files).filter(
            _functions.keep_even, batched=True, fn_kwargs=kwargs, num_proc=2
        )
    assert local.fingerprint == forked.fingerprint == distributed.fingerprint
    assert local.to_dict() == forked.to_dict() == rows == report["rows"]
    assert distributed["id"][:] == list(range(0, 3 * ROWS_PER_FILE, 2))


def test_appending_one_file_computes_one_shard(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log")}
    with in_cache(shared_cache), DaskExecutor(client) as executor:
        _load(files).map(double, batched=True, fn_kwargs=kwargs)
        files += write_files(tmp_path / "data", 1, start=3)
        grown = _load(files).map(double, batched=True, fn_kwargs=kwargs)
    assert executor.counts == ShardCounts(cached=3, computed=4)
    assert logged(kwargs["log"])[3:] == _firsts(1, start=3)
    assert grown["double"][:] == [2 * i for i in range(4 * ROWS_PER_FILE)]


def test_a_worker_killed_mid_map_costs_only_its_shard(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 4)
    kwargs = {
        "log": str(tmp_path / "calls.log"),
        "die_on": 3 * ROWS_PER_FILE,
        "flag": str(tmp_path / "killed"),
        "wait_for": 3,
    }
    with in_cache(shared_cache):
        dataset = _load(files)
        with pytest.raises(WorkerDiedError, match=r"shard of rows 30 to 39 of the dataset"):
            dataset.map(
                _functions.double_or_die,
                batched=True,
                fn_kwargs=kwargs,
                executor=DaskExecutor(client),
            )
        assert Path(kwargs["flag"]).exists()
        first_run = logged(kwargs["log"])
        rerun = DaskExecutor(client)
        result = dataset.map(
            _functions.double_or_die, batched=True, fn_kwargs=kwargs, executor=rerun
        )
    assert sorted(first_run) == _firsts(3)
    assert rerun.counts == ShardCounts(cached=3, computed=1)
    assert sorted(logged(kwargs["log"])) == _firsts(4)  # every shard computed exactly once
    assert result["double"][:] == [2 * i for i in range(4 * ROWS_PER_FILE)]
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker


def test_two_drivers_at_once_compute_each_shard_once(
    client: Any, s3_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log"), "seconds": 0.5}
    other = _start_driver(
        _driver_script(s3_cache, files, kwargs, "slow_double"), client.scheduler.address
    )
    with in_cache(s3_cache):
        dataset = _load(files)
        _go(other)
        ours = dataset.map(
            _functions.slow_double, batched=True, fn_kwargs=kwargs, executor=DaskExecutor(client)
        )
        rows = ours.to_dict()
    theirs = _finish_driver(other)
    assert sorted(logged(kwargs["log"])) == _firsts(3)  # each shard computed once in all
    assert theirs["fingerprint"] == ours.fingerprint
    assert theirs["rows"] == rows


MAIN_SCRIPT = """
import sys
from distributed import Client
from dagster_ds import load_dataset
from dagster_ds.cache import cache_root
from dagster_ds.distributed import DaskExecutor

MIN_DIGITS = 2


def long_enough(batch):
    return {"keep": [len(str(number)) >= MIN_DIGITS for number in batch["id"]]}


if __name__ == "__main__":
    address, cache, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    with Client(address) as client, cache_root(cache), DaskExecutor(client) as executor:
        ds = load_dataset("json", data_files=files, split="train", shard_bytes=0)
        kept = ds.map(long_enough, batched=True)["keep"][:]
    print(sum(kept), executor.counts.computed)
"""


def test_a_function_of_the_script_reading_a_global_runs_on_the_workers(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    """dill ships a `__main__` function with the builtins it reads as globals: same hash."""
    files = write_files(tmp_path / "data", 3)
    script = tmp_path / "refresh.py"
    script.write_text(MAIN_SCRIPT)
    done = _fast.run(
        [sys.executable, str(script), client.scheduler.address, shared_cache[0], *files],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    kept, computed = map(int, done.stdout.split())
    assert kept == 3 * ROWS_PER_FILE - 10  # every id but 0 to 9
    assert computed == 3  # every shard ran on the cluster


def test_a_failing_function_names_the_shard_and_row_and_publishes_nothing(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log"), "bad": 25}
    with in_cache(shared_cache), DaskExecutor(client) as executor:
        dataset = _load(files)
        with pytest.raises(ShardTaskError, match=r"rows 20 to 29 .*row 20.*cannot double id 25"):
            dataset.map(_functions.double_or_raise, batched=True, fn_kwargs=kwargs)
    assert executor.counts == ShardCounts()  # the failed call recorded nothing


def test_a_failing_predicate_fails_the_filter_naming_the_shard_and_row(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log"), "bad": 15}
    with in_cache(shared_cache), DaskExecutor(client) as executor:
        dataset = _load(files)
        with pytest.raises(ShardTaskError, match=r"rows 10 to 19 .*row 10.*cannot judge id 15"):
            dataset.filter(_functions.keep_or_raise, batched=True, fn_kwargs=kwargs)
    assert executor.counts == ShardCounts()  # the failed call recorded nothing


@pytest.mark.parametrize("method", ["map", "filter"])
def test_a_worker_with_other_code_for_the_function_is_refused(
    client: Any, shared_cache: Cache, tmp_path: Path, method: str
) -> None:
    name = f"stale_{tmp_path.name.replace('-', '_')}"
    for folder, value in (("driver", 1), ("worker", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{name}.py").write_text(
            f"def tag(batch):\n    return {{'tag': [{value}] * len(batch['id'])}}\n\n\n"
            f"def keep(batch):\n    return [{value} == 1] * len(batch['id'])\n"
        )
    worker_folder = str(tmp_path / "worker")
    client.run(_functions.add_path, worker_folder)
    sys.path.insert(0, str(tmp_path / "driver"))
    try:
        module = __import__(name)
        files = write_files(tmp_path / "data", 2)
        with in_cache(shared_cache):
            dataset = _load(files)
            before = {
                info.fingerprint
                for info in CacheStore(shared_cache[0], storage_options=shared_cache[1]).ls()
            }
            transform = getattr(dataset, method)
            function = module.tag if method == "map" else module.keep
            with pytest.raises(
                StaleWorkerError, match=r"hashes to .* here but to .* on the driver"
            ):
                transform(function, batched=True, executor=DaskExecutor(client))
        after = {
            info.fingerprint
            for info in CacheStore(shared_cache[0], storage_options=shared_cache[1]).ls()
        }
        assert after == before  # nothing written
    finally:
        sys.path.remove(str(tmp_path / "driver"))
        sys.modules.pop(name, None)
        client.run(_functions.forget_path, worker_folder)


def test_an_executor_whose_client_is_not_the_default_client_runs_on_that_client(
    cluster: Any, tmp_path: Path
) -> None:
    """Completions are awaited on the executor's own client, never on Dask's default one
    (none here: the driver's only client is made with ``set_as_default=False``)."""
    files = write_files(tmp_path / "data", 3)
    script = textwrap.dedent(
        f"""
        import json, sys
        import distributed
        from dagster_ds import load_dataset
        from dagster_ds.cache import cache_root
        from dagster_ds.distributed import DaskExecutor
        from tests.distributed._functions import double, keep_even

        with cache_root({str(tmp_path / "cache")!r}), distributed.Client(
            sys.argv[1], set_as_default=False
        ) as client:
            dataset = load_dataset("json", data_files={files!r}, split="train", shard_bytes=0)
            executor = DaskExecutor(client)
            kwargs = {{"log": {str(tmp_path / "calls.log")!r}}}
            out = dataset.filter(keep_even, batched=True, fn_kwargs=kwargs, executor=executor)
            out = out.map(double, batched=True, fn_kwargs=kwargs, executor=executor)
            print(json.dumps({{"double": out["double"][:], "computed": executor.counts.computed}}))
        """
    )
    driver = _fast.run(
        [sys.executable, "-c", script, cluster.scheduler_address],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert driver.returncode == 0, driver.stderr
    report = json.loads(driver.stdout.strip().splitlines()[-1])
    assert report == {"double": [2 * i for i in range(0, 3 * ROWS_PER_FILE, 2)], "computed": 6}


def _unfinished_shard_tasks(dask_scheduler: Any) -> int:
    """The shard tasks the scheduler holds that are not finished (run on the scheduler)."""
    return sum(
        1
        for key, task in dask_scheduler.tasks.items()
        if isinstance(key, tuple)
        and key[0] == "dagster_ds-shard"
        and task.state not in ("memory", "released", "forgotten", "erred")
    )


def test_max_tasks_in_flight_bounds_the_shard_tasks_the_scheduler_holds(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 4)
    most: dict[int | None, int] = {}
    with in_cache(shared_cache):
        dataset = _load(files)
        for limit in (1, None):
            kwargs = {"log": str(tmp_path / f"{limit}.log"), "seconds": 0.3}
            done = threading.Event()
            seen: list[int] = []

            def watch(seen: list[int] = seen, done: threading.Event = done) -> None:
                while not done.is_set():
                    seen.append(client.run_on_scheduler(_unfinished_shard_tasks))

            watcher = threading.Thread(target=watch)
            watcher.start()
            try:
                out = dataset.map(
                    _functions.slow_double,
                    batched=True,
                    fn_kwargs=kwargs,
                    executor=DaskExecutor(client, max_tasks_in_flight=limit),
                )
            finally:
                done.set()
                watcher.join()
            assert out["double"][:] == [2 * i for i in range(4 * ROWS_PER_FILE)]
            most[limit] = max(seen)
    assert most[1] == 1  # one task at a time
    assert most[None] > 1  # the default submits all four at once


def test_retries_rerun_a_failed_shard_task(
    client: Any, shared_cache: Cache, tmp_path: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    with in_cache(shared_cache):
        dataset = _load(files)
        for retries, name in ((0, "no-retry"), (1, "retry")):
            kwargs = {"log": str(tmp_path / f"{name}.log"), "flag": str(tmp_path / name)}
            executor = DaskExecutor(client, retries=retries)
            if retries == 0:
                with pytest.raises(ShardTaskError, match="a transient failure"):
                    dataset.map(
                        _functions.double_failing_once,
                        batched=True,
                        fn_kwargs=kwargs,
                        executor=executor,
                    )
                continue
            out = dataset.map(
                _functions.double_failing_once, batched=True, fn_kwargs=kwargs, executor=executor
            )
            assert executor.counts == ShardCounts(cached=0, computed=3)
            assert out["double"][:] == [2 * i for i in range(3 * ROWS_PER_FILE)]
    assert sorted(logged(tmp_path / "retry.log")) == _firsts(3)  # the failed one, retried


def test_the_driver_reads_no_output_shard_until_its_rows_are_read(
    client: Any, s3: Any, s3_cache: Cache, tmp_path: Path
) -> None:
    import s3fs

    files = write_files(tmp_path / "data", 3)
    kwargs = {"log": str(tmp_path / "calls.log")}
    with in_cache(s3_cache):
        out = _load(files).map(
            double, batched=True, fn_kwargs=kwargs, executor=DaskExecutor(client)
        )
        # Remove the data of every stored output (the new column): manifests stay.
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3.options)
        outputs = [
            path
            for path in fs.find(s3_cache[0].removeprefix("s3://"))
            if "/data-" in path and any(entry.fingerprint in path for entry in out._entries)  # pyright: ignore[reportPrivateUsage]
        ]
        assert len(outputs) >= 3
        fs.rm(outputs)
        assert (len(out), out.column_names) == (3 * ROWS_PER_FILE, ["id", "double"])
        calls = len(logged(tmp_path / "calls.log"))
        with pytest.warns(CacheCorruptionWarning, match="missing"):
            # Reading is what needs the data: found gone, each shard is computed again here.
            assert out["double"][:] == [2 * i for i in range(3 * ROWS_PER_FILE)]
        assert len(logged(tmp_path / "calls.log")) == 2 * calls


def test_a_map_over_shards_of_a_store_beneath_runs_on_the_workers_and_never_writes_there(
    client: Any, s3: S3, tmp_path: Path
) -> None:
    import s3fs

    files = write_files(tmp_path / "data", 2)
    kwargs = {"log": str(tmp_path / "calls.log")}
    prod = s3.new_url()
    with in_cache((prod, s3.options)):
        _load(files).map(double, batched=True, fn_kwargs=kwargs).to_dict()
    assert sorted(logged(kwargs["log"])) == _firsts(2)
    fs: Any = s3fs.S3FileSystem(skip_instance_cache=True, **s3.options)
    before = {name: info["ETag"] for name, info in fs.find(prod, detail=True).items()}

    dev = CacheStore(
        s3.new_url(), storage_options=s3.options, read_from=[prod], read_from_options=s3.options
    )
    executor = DaskExecutor(client)
    with dev.as_default():
        doubled = _load(files).map(double, batched=True, fn_kwargs=kwargs)  # production's
        kept = doubled.filter(keep_even, batched=True, fn_kwargs=kwargs, executor=executor)
        ids, doubles = kept["id"][:], kept["double"][:]
    assert executor.counts == ShardCounts(cached=0, computed=2)  # the workers read prod's
    assert sorted(logged(kwargs["log"])) == sorted(_firsts(2) * 2)  # double did not run again
    assert ids == [i for i in range(2 * ROWS_PER_FILE) if i % 2 == 0]
    assert doubles == [2 * i for i in ids]
    assert {name: info["ETag"] for name, info in fs.find(prod, detail=True).items()} == before
