"""One store under every asset: versions by reference, verified, recomputed when damaged,
run-consistent inputs, early cutoff on content."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.cache import CacheCorruptionWarning
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from tests import _fast
from tests.conftest import REPO_ROOT
from tests.orchestration._chain import build, record
from tests.orchestration.conftest import data_version, latest, metadata_value, tag, write_jsonl
from tests.orchestration.test_automation import Ticks

CHAIN = ["cleaned", "tokens", "counts"]


def _materialize(
    assets: list, instance: dg.DagsterInstance, storage: Path
) -> dg.ExecuteInJobResult:
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}
    result = dg.materialize(assets, instance=instance, resources=resources, selection=assets)
    assert result.success
    return result


def _data_file(storage: Path, instance: dg.DagsterInstance, asset: str) -> Path:
    """The biggest Arrow file the latest version of ``asset`` references."""
    fingerprint = metadata_value(latest(instance, asset), "dagster_ds/recipe")
    dataset = DatasetStore(str(storage)).load(dg.AssetKey(asset), fingerprint)
    files = [
        path
        for entry in dataset.cache_files
        for path in Path(entry["filename"]).glob("data-*.arrow")
    ]
    return max(files, key=lambda path: path.stat().st_size)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "deleted manifest"])
def test_a_damaged_version_is_detected_and_recomputed_never_served(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
    damage: str,
) -> None:
    write_jsonl(corpus, [{"text": f"Row number {i} of the corpus"} for i in range(2_000)])
    chain = build(str(corpus))
    storage = tmp_path / "storage"
    _materialize(chain.all, instance, storage)
    good = DatasetStore(str(storage)).load(
        dg.AssetKey("counts"), metadata_value(latest(instance, "counts"), "dagster_ds/recipe")
    )["num_tokens"][:]
    target = _data_file(storage, instance, "tokens")
    if damage == "flipped byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "truncated":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    else:
        version = Path(metadata_value(latest(instance, "tokens"), "dagster_ds/path"))
        (version / "manifest.json").unlink()

    if damage == "deleted manifest":
        _materialize(chain.all, instance, storage)
    else:
        with pytest.warns(CacheCorruptionWarning, match="quarantin"):
            _materialize(chain.all, instance, storage)

    assert body_calls() == [*CHAIN, "tokens"]  # recomputed; counts' input is the same rows
    assert metadata_value(latest(instance, "tokens"), "dagster_ds/cache") == "miss"
    assert metadata_value(latest(instance, "counts"), "dagster_ds/cache") == "hit"
    fingerprint = metadata_value(latest(instance, "counts"), "dagster_ds/recipe")
    counts = DatasetStore(str(storage)).load(dg.AssetKey("counts"), fingerprint)
    assert counts["num_tokens"][:] == good
    assert DatasetStore(str(storage)).cache.verify().ok


def test_a_two_asset_pipeline_stores_its_data_once(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from dagster_ds import load_dataset

    rows = [{"text": f"Some words in row {i} " * (1 + i % 5)} for i in range(5_000)]
    data = write_jsonl(tmp_path / "docs.jsonl", rows)
    docs = dataset_source("docs", "json", data_files=str(data))

    @dataset_asset
    def measured(docs: Dataset) -> Dataset:
        return docs.map(lambda batch: {"length": [len(t) for t in batch["text"]]}, batched=True)

    @dataset_asset
    def long(measured: Dataset) -> Dataset:
        return measured.filter(lambda example: example["length"] > 40)

    storage = tmp_path / "storage"
    _materialize([docs, measured, long], instance, storage)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_DS_CACHE", str(tmp_path / "source-only"))
        load_dataset("json", data_files=str(data), split="train")
    source = sum(info.size for info in DatasetStore(str(tmp_path / "source-only")).cache.ls())
    stored = sum(info.size for info in DatasetStore(str(storage)).cache.ls())
    assert stored <= 2.2 * source  # the loaded source, the new column, the kept rows
    # What each materialization wrote: the new column; the kept row positions (no rows).
    assert metadata_value(latest(instance, "measured"), "dagster_ds/bytes_written") > 0
    assert 0 < metadata_value(latest(instance, "long"), "dagster_ds/bytes_written") < source / 10
    assert len(
        DatasetStore(str(storage)).load(
            dg.AssetKey("long"), metadata_value(latest(instance, "long"), "dagster_ds/recipe")
        )
    ) == sum(len(row["text"]) > 40 for row in rows)


def plus_one(example: dict[str, int]) -> dict[str, int]:
    return {"n": example["n"] + 1}


def one_plus(example: dict[str, int]) -> dict[str, int]:
    return {"n": 1 + example["n"]}


def _refactorable(data: Path, step: Callable[[dict[str, int]], dict[str, int]]) -> list:
    from dagster_ds.orchestration import fingerprint_changed

    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset(automation_condition=fingerprint_changed())
    def shifted(numbers: Dataset) -> Dataset:
        record("shifted")
        return numbers.map(step)

    @dataset_asset(automation_condition=fingerprint_changed())
    def doubled(shifted: Dataset) -> Dataset:
        record("doubled")
        return shifted.map(lambda example: {"n": example["n"] * 2})

    return [numbers, shifted, doubled]


def test_a_refactor_that_keeps_the_rows_keeps_the_data_version_and_the_child(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data = write_jsonl(tmp_path / "numbers.jsonl", [{"n": n} for n in range(10)])
    before, after = _refactorable(data, plus_one), _refactorable(data, one_plus)
    ticks = Ticks(instance, tmp_path / "storage")
    ticks.run_assets(before)
    version = data_version(instance, "shifted")
    assert ticks.requested_assets(before) == set()

    assert "shifted" in ticks.requested_assets(after)  # its code changed
    ticks.run_assets(after, [after[1]])
    assert data_version(instance, "shifted") == version  # same rows: same data version
    assert tag(instance, "doubled", "dagster/input_data_version/shifted") == version  # fresh
    assert ticks.requested_assets(after) == set()  # nothing downstream is requested

    ticks.run_assets(after)
    assert body_calls() == ["shifted", "doubled", "shifted"]  # the child never re-ran
    assert metadata_value(latest(instance, "doubled"), "dagster_ds/cache") == "hit"


# -- concurrent runs ---------------------------------------------------------------

PROJECT = """
import dagster as dg
from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source


class Offset(dg.Config):
    offset: int = 0


numbers = dataset_source("numbers", "json", data_files={data!r})


@dataset_asset
def shifted(numbers: Dataset, config: Offset) -> Dataset:
    return numbers.map(lambda example: {{"n": example["n"] + config.offset}})


@dataset_asset
def squared(shifted: Dataset) -> Dataset:
    return shifted.map(lambda example: {{"square": example["n"] ** 2}})


assets = [numbers, shifted, squared]
resources = {{"io_manager": DatasetIOManager(base_dir={storage!r})}}
"""

RUNNER = """
import json, sys
import dagster as dg
import project

offset, rounds = int(sys.argv[1]), int(sys.argv[2])
with dg.DagsterInstance.get() as instance:
    for round in range(rounds):
        result = dg.materialize(
            project.assets,
            instance=instance,
            resources=project.resources,
            selection=project.assets,
            run_config={{"ops": {{"shifted": {{"config": {{"offset": offset}}}}}}}},
        )
        assert result.success
        print(json.dumps({{"run": result.run_id, "offset": offset}}), flush=True)
"""


@pytest.mark.slow
def test_concurrent_runs_with_different_config_never_cross_versions(
    tmp_path: Path, dagster_home: Path
) -> None:
    data = write_jsonl(tmp_path / "numbers.jsonl", [{"n": n} for n in range(50)])
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.py").write_text(
        PROJECT.format(data=str(data), storage=str(tmp_path / "storage"))
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "PYTHONPATH": os.pathsep.join([str(project), str(REPO_ROOT)]),
    }
    script = textwrap.dedent(RUNNER.replace("{{", "{").replace("}}", "}"))
    runners = [
        _fast.Popen(
            [sys.executable, "-c", script, str(offset), "4"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for offset in (0, 1000)
    ]
    runs: dict[str, int] = {}
    for runner in runners:
        out, err = runner.communicate(timeout=240)
        assert runner.returncode == 0, err[-3000:]
        for line in out.splitlines():
            if line.startswith("{"):
                run = json.loads(line)
                runs[run["run"]] = run["offset"]
    assert len(runs) == 8

    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        store = DatasetStore(str(tmp_path / "storage"))
        for run_id, offset in runs.items():
            versions: dict[str, tuple[dict[str, str], str]] = {}
            for record_ in instance.get_records_for_run(
                run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
            ).records:
                materialization = record_.event_log_entry.asset_materialization
                assert materialization is not None
                versions[materialization.asset_key.to_user_string()] = (
                    dict(materialization.tags or {}),
                    str(materialization.metadata["dagster_ds/recipe"].value),
                )
            (shifted_tags, _), (squared_tags, squared) = versions["shifted"], versions["squared"]
            assert (
                squared_tags["dagster/input_data_version/shifted"]
                == shifted_tags["dagster/data_version"]
            ), f"run {run_id} (offset {offset}) consumed another run's version of shifted"
            rows = store.load(dg.AssetKey("squared"), squared)
            assert rows["n"][:] == [n + offset for n in range(50)]
            assert rows["square"][:] == [(n + offset) ** 2 for n in range(50)]


def test_export_writes_what_datasets_load_from_disk_reads(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    from click.testing import CliRunner

    from dagster_ds.cli import main

    chain = build(str(corpus))
    storage = tmp_path / "storage"
    _materialize(chain.all, instance, storage)
    fingerprint = metadata_value(latest(instance, "counts"), "dagster_ds/recipe")
    out = tmp_path / "exported"
    result = CliRunner().invoke(
        main,
        ["export", "counts", str(out), "--fingerprint", fingerprint[:10], "--store", str(storage)],
    )
    assert result.exit_code == 0, result.output
    check = _fast.run(
        [
            sys.executable,
            "-c",
            "import sys, datasets; ds = datasets.load_from_disk(sys.argv[1]);"
            " print(ds.to_dict()['num_tokens'])",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stderr[-2000:]
    assert check.stdout.strip() == "[2, 4]"


def test_keep_versions_bounds_the_store_and_keeps_what_is_latest(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data = tmp_path / "numbers.jsonl"
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset
    def doubled(numbers: Dataset) -> Dataset:
        return numbers.map(lambda example: {"twice": example["n"] * 2})

    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "s"), keep_versions=2)}
    store = DatasetStore(str(tmp_path / "s"))
    sizes = []
    for refresh in range(10):
        write_jsonl(data, [{"n": refresh * 1000 + n} for n in range(500)])
        assets = [numbers, doubled]
        assert dg.materialize(assets, instance=instance, resources=resources).success
        assert len(store.versions(dg.AssetKey("doubled"))) <= 2
        sizes.append(sum(info.size for info in store.cache.ls()))
        latest_fp = metadata_value(latest(instance, "doubled"), "dagster_ds/recipe")
        assert store.load(dg.AssetKey("doubled"), latest_fp)["twice"][:3] == [
            refresh * 2000,
            refresh * 2000 + 2,
            refresh * 2000 + 4,
        ]
    # Bounded: old versions and their shards go, except entries a reader still holds open
    # when retention runs (reader leases). Measured: three refreshes' worth from the
    # third refresh on, and once two and a half (the baseline of a stricter check); ten
    # refreshes without retention would hold ten.
    assert max(sizes) <= 3 * sizes[0], sizes
    assert store.cache.verify().ok


def test_cache_gc_keep_versions_from_the_command_line_keeps_the_latest(
    tmp_path: Path, instance: dg.DagsterInstance, dagster_home: Path
) -> None:
    from click.testing import CliRunner

    from dagster_ds.cli import main

    data = tmp_path / "numbers.jsonl"
    numbers = dataset_source("numbers", "json", data_files=str(data))

    @dataset_asset
    def doubled(numbers: Dataset) -> Dataset:
        return numbers.map(lambda example: {"twice": example["n"] * 2})

    storage = tmp_path / "s"
    for refresh in range(4):
        write_jsonl(data, [{"n": refresh * 100 + n} for n in range(50)])
        _materialize([numbers, doubled], instance, storage)
    store = DatasetStore(str(storage))
    assert len(store.versions(dg.AssetKey("doubled"))) == 4
    result = CliRunner().invoke(
        main,
        ["cache", "--dir", str(storage), "gc", "--keep-versions", "1", "--max-size", "0"],
        env={"DAGSTER_HOME": str(dagster_home)},
    )
    assert result.exit_code == 0, result.output
    (kept,) = store.versions(dg.AssetKey("doubled"))
    latest_fp = metadata_value(latest(instance, "doubled"), "dagster_ds/recipe")
    assert kept["fingerprint"] == latest_fp
    assert store.load(dg.AssetKey("doubled"), latest_fp)["twice"][:2] == [600, 602]


def test_hash_explain_takes_asset_fingerprints_and_their_prefixes(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    from click.testing import CliRunner

    from dagster_ds.cli import main

    storage = tmp_path / "storage"
    _materialize(build(str(corpus)).all, instance, storage)
    old = metadata_value(latest(instance, "tokens"), "dagster_ds/recipe")
    old_content = data_version(instance, "tokens")
    _materialize(build(str(corpus), separator="o").all, instance, storage)
    new = metadata_value(latest(instance, "tokens"), "dagster_ds/recipe")
    assert new != old
    for first, second in ((old[:8], new[:8]), (old_content, new)):
        result = CliRunner().invoke(main, ["hash", "explain", first, second, "--dir", str(storage)])
        assert result.exit_code == 0, result.output
        # The function's closure changed, said in words (the recipe trees are stored).
        assert "closure variable 'separator': ' ' → 'o'" in result.output
    result = CliRunner().invoke(main, ["hash", "explain", "0123", new, "--dir", str(storage)])
    assert result.exit_code != 0
    assert "at least 6 characters" in result.output


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB file system (tmpfs), so a write can fail with 'No space left on device'."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_fails_clearly_and_loses_nothing(
    tmp_path: Path, instance: dg.DagsterInstance, small_disk: Path
) -> None:
    data = write_jsonl(tmp_path / "docs.jsonl", [{"text": f"row {i} " * 40} for i in range(30_000)])
    docs = dataset_source("docs", "json", data_files=str(data))

    @dataset_asset
    def measured(docs: Dataset) -> Dataset:
        return docs.map(lambda batch: {"n": [len(t) for t in batch["text"]]}, batched=True)

    resources = {"io_manager": DatasetIOManager(base_dir=str(small_disk / "store"))}
    result = dg.materialize(
        [docs, measured], instance=instance, resources=resources, raise_on_error=False
    )
    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    message = str(failure.event_specific_data)
    assert "No space left on device" in message
    assert str(small_disk / "store") in message  # names the path
    assert "disk is full" in message
    store = DatasetStore(str(small_disk / "store"))
    assert store.versions(dg.AssetKey("measured")) == []  # nothing half-stored
    assert store.cache.verify().ok
    assert not any((small_disk / "store" / "tmp").iterdir())  # no garbage left behind

    subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
    assert dg.materialize([docs, measured], instance=instance, resources=resources).success
    fingerprint = metadata_value(latest(instance, "measured"), "dagster_ds/recipe")
    assert len(store.load(dg.AssetKey("measured"), fingerprint)) == 30_000


SAME_VERSION = """
import sys
import dagster as dg
from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

LOG = {log!r}
numbers = dataset_source("numbers", "json", data_files={data!r})


def slow_square(batch):
    import time

    time.sleep(0.2)
    with open(LOG, "a") as log:
        log.write(f"{{len(batch['n'])}}\\n")
    return {{"square": [n * n for n in batch["n"]]}}


@dataset_asset
def squared(numbers: Dataset) -> Dataset:
    return numbers.map(slow_square, batched=True, batch_size=100)


with dg.DagsterInstance.get() as instance:
    result = dg.materialize(
        [numbers, squared],
        instance=instance,
        resources={{"io_manager": DatasetIOManager(base_dir={storage!r})}},
    )
    assert result.success
"""


@pytest.mark.slow
def test_two_runs_needing_the_same_version_compute_it_once(
    tmp_path: Path, dagster_home: Path
) -> None:
    data = write_jsonl(tmp_path / "numbers.jsonl", [{"n": n} for n in range(1_000)])
    log = tmp_path / "computed.log"
    script = SAME_VERSION.format(log=str(log), data=str(data), storage=str(tmp_path / "s"))
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "PYTHONPATH": str(REPO_ROOT)}
    runs = [
        _fast.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for run in runs:
        _, err = run.communicate(timeout=240)
        assert run.returncode == 0, err[-3000:]
    assert sum(int(line) for line in log.read_text().split()) == 1_000  # once, not twice
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("squared"), limit=10).records
        versions = {
            record.asset_materialization.tags["dagster/data_version"]
            for record in records
            if record.asset_materialization is not None and record.asset_materialization.tags
        }
        assert len(records) == 2
        assert len(versions) == 1
