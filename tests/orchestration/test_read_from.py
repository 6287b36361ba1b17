"""DatasetIOManager(read_from=[PROD]): a development deployment over production's store.

Unchanged assets skip at zero copy (their versions found in PROD), changed ones
compute into DEV, and PROD is never written: byte for byte, mtimes included.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.cache import CacheCorruptionWarning
from dagster_ds.errors import CacheStoreUnavailableError, DatasetNotStoredError
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from tests import _fast
from tests.cache.test_layers import snapshot
from tests.conftest import REPO_ROOT, new_dagster_home, s3_requests
from tests.orchestration._chain import CALLS_ENV, build, record
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

ROWS = [{"text": f"Row number {i} of the corpus"} for i in range(2_000)]


@pytest.fixture
def prod_instance(dagster_homes: Path) -> Iterator[tuple[dg.DagsterInstance, Path]]:
    """Production's persistent instance (another DAGSTER_HOME than the test's `instance`).

    With the settings of its dagster.yaml, as a process started with that DAGSTER_HOME.
    """
    home = new_dagster_home(dagster_homes)
    with dg.instance_for_test(temp_dir=str(home), set_dagster_home=False) as instance:
        yield instance, home


def _corpus(tmp_path: Path) -> Path:
    """The source file, last written an hour ago.

    A file written within the timestamp granularity of its hashing is hashed again
    at each load, and its stat record rewritten (Git's racy rule): production's
    refresh would write that in its own store, as it may; this test shows it does not
    have to.
    """
    path = write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)
    past = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(past, past))
    return path


def _run(
    assets: list[Any], instance: dg.DagsterInstance, io_manager: DatasetIOManager
) -> dg.ExecuteInJobResult:
    return dg.materialize(
        assets, instance=instance, resources={"io_manager": io_manager}, selection=assets
    )


def _cache(instance: dg.DagsterInstance, asset: str) -> str:
    return metadata_value(latest(instance, asset), "dagster_ds/cache")


def _table_files(root: Path, instance: dg.DagsterInstance, asset: str) -> list[Path]:
    """The Arrow files of the stored version of ``asset`` (recorded in ``instance``)."""
    fingerprint = metadata_value(latest(instance, asset), "dagster_ds/recipe")
    dataset = DatasetStore(str(root)).load(dg.AssetKey(asset), fingerprint)
    return sorted(
        path for entry in dataset.cache_files for path in Path(entry["filename"]).glob("*.arrow")
    )


def _but_production_s_own(files: dict[str, Any], pid: int) -> dict[str, Any]:
    """``files`` (a `snapshot`) but what production's process ``pid`` may write in its store.

    Its usage record (it may read data) and its source's stat records (``state/``).
    """
    return {
        name: value
        for name, value in files.items()
        if name not in ("usage", "state")
        and not name.startswith("state/")
        and not re.fullmatch(rf"usage/[^/]+-{pid}-[0-9a-f]+", name)
    }


_PROD_REFRESH = """
import sys
import dagster as dg
from dagster_ds.orchestration import DatasetIOManager
from tests.orchestration._chain import build

chain = build(sys.argv[1])
with dg.DagsterInstance.get() as instance:
    for _ in range(int(sys.argv[3])):
        result = dg.materialize(
            chain.all,
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=sys.argv[2])},
            selection=chain.all,
        )
        assert result.success
print("refreshed", flush=True)
"""


@pytest.mark.slow
def test_a_dev_run_over_prod_computes_only_what_changed_and_never_writes_prod(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: tuple[dg.DagsterInstance, Path],
    body_calls: Callable[[], list[str]],
) -> None:
    corpus = _corpus(tmp_path)
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    production, prod_home = prod_instance
    assert _run(build(str(corpus)).all, production, DatasetIOManager(base_dir=str(prod))).success
    assert body_calls() == ["cleaned", "tokens", "counts"]
    # Bit rot in an entry of `cleaned` that dev reads: same size and mtime, other bytes.
    damaged = _table_files(prod, production, "cleaned")[0]
    stat = damaged.stat()
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    os.utime(damaged, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    before = snapshot(prod)

    # Production refreshes meanwhile, in its own process and instance.
    refresh = _fast.Popen(
        [sys.executable, "-c", textwrap.dedent(_PROD_REFRESH), str(corpus), str(prod), "2"],
        env={
            **os.environ,
            "DAGSTER_HOME": str(prod_home),
            CALLS_ENV: str(tmp_path / "prod-calls.log"),
            "PYTHONPATH": str(REPO_ROOT),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Dev changed `tokens` (its separator); `cleaned` and the source are production's.
        io_manager = DatasetIOManager(base_dir=str(dev), read_from=[str(prod)])
        changed = build(str(corpus), separator="|").all
        with (
            pytest.raises(DatasetNotStoredError, match="run again"),
            pytest.warns(CacheCorruptionWarning, match=rf"read-only store '{prod}'"),
        ):
            _run(changed, instance, io_manager)  # describing `cleaned` read the damage
        assert _but_production_s_own(snapshot(prod), refresh.pid) == _but_production_s_own(
            before, refresh.pid
        )

        assert _run(changed, instance, io_manager).success  # the damaged entry: now in dev
    finally:
        out, err = refresh.communicate(timeout=240)
    assert refresh.returncode == 0, err[-3000:]
    assert out.strip() == "refreshed"

    assert body_calls() == ["cleaned", "tokens", "counts"] * 2
    assert [_cache(instance, name) for name in ("cleaned", "tokens", "counts")] == ["miss"] * 3
    recomputed = dev / damaged.relative_to(prod)  # the same entry, computed again in dev
    assert recomputed.read_bytes() != damaged.read_bytes()
    # Not a byte, file, folder or mtime changed in prod but what production wrote itself;
    after = snapshot(prod)
    assert _but_production_s_own(after, refresh.pid) == _but_production_s_own(before, refresh.pid)
    # and dev writes none of that either: another dev run (all skips) leaves every file as is.
    assert _run(changed, instance, io_manager).success
    assert snapshot(prod) == after
    counts = metadata_value(latest(instance, "counts"), "dagster_ds/recipe")
    rows = DatasetStore(str(dev), read_from=[str(prod)]).load(dg.AssetKey("counts"), counts)
    assert rows["num_tokens"][:] == [1] * len(ROWS)  # split on "|": one token per row


def test_an_unchanged_dev_run_over_prod_is_all_skips_and_copies_nothing(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: tuple[dg.DagsterInstance, Path],
    body_calls: Callable[[], list[str]],
) -> None:
    corpus = write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    assert _run(build(str(corpus)).all, prod_instance[0], DatasetIOManager(base_dir=str(prod)))
    before = snapshot(prod)

    io_manager = DatasetIOManager(base_dir=str(dev), read_from=[str(prod)])
    assert _run(build(str(corpus)).all, instance, io_manager).success
    assert body_calls() == ["cleaned", "tokens", "counts"]  # production's run only
    assert [_cache(instance, name) for name in ("cleaned", "tokens", "counts")] == ["hit"] * 3
    copied = [path for path in dev.rglob("*.arrow")]
    assert copied == []  # zero copy: every version and shard is read in prod
    assert snapshot(prod) == before


@pytest.mark.slow
def test_a_dev_run_over_prod_on_s3_sends_prod_no_put_or_delete(
    tmp_path: Path,
    s3_endpoint: str,
    instance: dg.DagsterInstance,
    prod_instance: tuple[dg.DagsterInstance, Path],
    body_calls: Callable[[], list[str]],
) -> None:
    import s3fs

    corpus = write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)
    prod, options = "s3://datasets/prod", {"endpoint_url": s3_endpoint}
    production = DatasetIOManager(base_dir=prod, storage_options=options)
    assert _run(build(str(corpus)).all, prod_instance[0], production).success
    fs: Any = s3fs.S3FileSystem(skip_instance_cache=True, endpoint_url=s3_endpoint)
    before = {name: info["ETag"] for name, info in fs.find(prod, detail=True).items()}

    io_manager = DatasetIOManager(
        base_dir=str(tmp_path / "dev"), read_from=[prod], read_from_storage_options=options
    )
    with s3_requests() as requests:
        assert _run(build(str(corpus), separator="|").all, instance, io_manager).success
    assert body_calls() == ["cleaned", "tokens", "counts", "tokens", "counts"]
    assert _cache(instance, "cleaned") == "hit"
    methods = [method for method, _ in requests.made()]
    assert methods, "dev read nothing in prod"
    assert set(methods) <= {"GET", "HEAD"}, requests.made()  # no PUT, POST or DELETE
    assert {name: info["ETag"] for name, info in fs.find(prod, detail=True).items()} == before


def test_a_prod_store_that_vanishes_mid_run_fails_the_step_naming_it_and_is_not_recreated(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: tuple[dg.DagsterInstance, Path],
    body_calls: Callable[[], list[str]],
) -> None:
    corpus = write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)
    prod, dev, moved = tmp_path / "prod", tmp_path / "dev", tmp_path / "unmounted"
    chain = build(str(corpus))
    assert _run(chain.all, prod_instance[0], DatasetIOManager(base_dir=str(prod))).success

    @dataset_asset
    def tokens(cleaned: Dataset) -> Dataset:  # dev's new code; prod is unmounted meanwhile
        prod.rename(moved)
        return cleaned.map(lambda example: {"tokens": example["text"].split("|")})

    io_manager = DatasetIOManager(base_dir=str(dev), read_from=[str(prod)])
    with pytest.raises(CacheStoreUnavailableError, match=rf"read-only store '{prod}'.*is gone"):
        _run([chain.docs, chain.cleaned, tokens], instance, io_manager)
    assert not prod.exists()  # nothing was written there, not even a folder
    assert _cache(instance, "cleaned") == "hit"
    assert body_calls() == ["cleaned", "tokens", "counts"]  # production's run only


def _split(example: dict[str, str]) -> dict[str, list[str]]:
    record("split")
    return {"tokens": example["text"].split(" ")}


def _words(corpus: Path, *, dev: bool) -> list[Any]:
    """A source and one asset; dev's version filters what the same map returns (2 processes)."""
    docs = dataset_source("docs", "json", data_files=str(corpus))

    @dataset_asset
    def tokens(docs: Dataset) -> Dataset:
        mapped = docs.map(_split)
        if not dev:
            return mapped
        return mapped.filter(lambda example: len(example["tokens"]) > 1, num_proc=2)

    return [docs, tokens]


def test_the_transforms_of_a_changed_asset_reuse_the_shards_prod_computed(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    prod_instance: tuple[dg.DagsterInstance, Path],
    body_calls: Callable[[], list[str]],
) -> None:
    corpus = write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)
    prod, dev = tmp_path / "prod", tmp_path / "dev"
    assert _run(_words(corpus, dev=False), prod_instance[0], DatasetIOManager(base_dir=str(prod)))
    assert body_calls().count("split") == len(ROWS)
    before = snapshot(prod)

    io_manager = DatasetIOManager(base_dir=str(dev), read_from=[str(prod)])
    assert _run(_words(corpus, dev=True), instance, io_manager).success
    assert _cache(instance, "tokens") == "miss"  # the asset ran: its code changed
    assert body_calls().count("split") == len(ROWS)  # but its map was production's
    assert snapshot(prod) == before
