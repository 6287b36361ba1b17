"""Partitioned dataset assets: a version per partition, backfills that skip, mappings, shards."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.cache import CacheCorruptionWarning
from dagster_ds.errors import (
    DatasetAssetDefinitionError,
    DatasetNotStoredError,
    DatasetSourceNotFoundError,
)
from dagster_ds.orchestration import DatasetIOManager, DatasetStore, dataset_asset, dataset_source
from dagster_ds.orchestration.io_manager import pinned_versions
from tests import _fast
from tests.conftest import REPO_ROOT
from tests.orchestration._chain import record
from tests.orchestration._daily import BARRIER_ENV, build
from tests.orchestration.conftest import metadata_value, write_jsonl

CLEANED = dg.AssetKey("cleaned")


def _write_days(data: Path, days: Sequence[str]) -> None:
    for day in days:
        write_jsonl(
            data / f"{day}.jsonl",
            [{"id": f"{day}/{i}", "text": f"  Paragraph {i} of {day} "} for i in range(2)],
        )


def _partition_versions(
    instance: dg.DagsterInstance, key: dg.AssetKey
) -> dict[str, tuple[str, str]]:
    """partition -> (recipe fingerprint, data version) of its latest materialization."""
    records = instance.fetch_materializations(key, limit=1000, ascending=True).records
    found: dict[str, tuple[str, str]] = {}
    for record_ in records:
        materialization = record_.asset_materialization
        assert materialization is not None
        assert materialization.partition is not None
        tags = materialization.tags or {}
        found[materialization.partition] = (
            metadata_value(materialization, "dagster_ds/recipe"),
            tags["dagster/data_version"],
        )
    return found


def _observed(instance: dg.DagsterInstance, key: str) -> dict[str, str]:
    """partition -> data version of its latest observation."""
    records = instance.fetch_observations(dg.AssetKey(key), limit=1000, ascending=True).records
    return {
        str(r.partition_key): str(r.asset_observation.data_version)
        for r in records
        if r.asset_observation is not None
    }


def test_a_backfill_of_30_days_with_one_changed_runs_one_transform_and_readers_see_shards(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data, store = tmp_path / "days", tmp_path / "store"
    daily = build(data, end="2024-01-31")
    days = daily.days.get_partition_keys()
    assert len(days) == 30
    _write_days(data, days)

    for day in days:  # the first backfill, one run per partition
        daily.run(instance, str(store), daily.cleaned, day)
    first = _partition_versions(instance, CLEANED)
    assert sorted(first) == days
    assert len({recipe for recipe, _ in first.values()}) == 30  # a fingerprint per partition
    assert len({version for _, version in first.values()}) == 30  # and a data version
    assert sorted(body_calls()) == sorted(f"cleaned:{day}" for day in days)
    daily.run(instance, str(store), daily.docs)
    observed = _observed(instance, "docs")
    assert len(set(observed.values())) == 30

    changed = days[11]
    write_jsonl(data / f"{changed}.jsonl", [{"id": f"{changed}/0", "text": "Rewritten"}])
    daily.run(instance, str(store), daily.docs)
    again = _observed(instance, "docs")
    assert {day for day in days if again[day] != observed[day]} == {changed}

    for day in days:  # the same backfill again: 29 partitions unchanged
        daily.run(instance, str(store), daily.cleaned, day)
    second = _partition_versions(instance, CLEANED)
    assert body_calls().count(f"cleaned:{changed}") == 2
    assert len([call for call in body_calls() if call.startswith("cleaned:")]) == 31
    assert {day for day in days if second[day] != first[day]} == {changed}
    caches = [
        metadata_value(record_.asset_materialization, "dagster_ds/cache")
        for record_ in instance.fetch_materializations(CLEANED, limit=30).records
        if record_.asset_materialization is not None
    ]
    assert sorted(caches) == ["hit"] * 29 + ["miss"]  # the 29: nothing run, nothing written
    versions = DatasetStore(str(store)).versions(CLEANED)
    assert len(versions) == 31
    assert {record_["partition"] for record_ in versions} == set(days)

    # An unpartitioned reader gets one Dataset whose shards are the 30 partitions.
    daily.run(instance, str(store), daily.lengths)
    everything = _latest_dataset(instance, store, "lengths")
    assert everything.num_shards == 30
    assert len(everything) == 2 * 29 + 1
    assert everything["text"][:2] == ["paragraph 0 of 2024-01-01", "paragraph 1 of 2024-01-01"]
    rows_mapped = [call for call in body_calls() if call.startswith("row:")]
    assert len(rows_mapped) == 59

    # A new day appears: its partition is materialized; the reader maps only its shard.
    daily = build(data, end="2024-02-01")
    _write_days(data, ["2024-01-31"])
    daily.run(instance, str(store), daily.cleaned, "2024-01-31")
    daily.run(instance, str(store), daily.lengths)
    everything = _latest_dataset(instance, store, "lengths")
    assert everything.num_shards == 31
    new_rows = [call for call in body_calls() if call.startswith("row:")][len(rows_mapped) :]
    assert sorted(new_rows) == ["row:2024-01-31/0", "row:2024-01-31/1"]
    assert everything["length"][-1] == len("paragraph 1 of 2024-01-31")


def _latest_dataset(instance: dg.DagsterInstance, store: Path, asset: str) -> Dataset:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None
    assert event.asset_materialization is not None
    fingerprint = metadata_value(event.asset_materialization, "dagster_ds/recipe")
    return DatasetStore(str(store)).load(dg.AssetKey(asset), fingerprint)


def test_partition_mappings_identity_time_window_and_all_are_honoured(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "hours"
    hours = dg.HourlyPartitionsDefinition(
        start_date="2024-01-01-00:00", end_date="2024-01-03-00:00"
    )
    days = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-03")
    # Hourly files, as a logger writes them: 2024/01/01/05.jsonl
    for hour in hours.get_partition_keys():
        window = hours.time_window_for_partition_key(hour)
        write_jsonl(data / f"{window.start:%Y/%m/%d/%H}.jsonl", [{"hour": hour}])
    logs = dataset_source(
        "logs", "json", data_files=str(data / "{start:%Y/%m/%d/%H}.jsonl"), partitions_def=hours
    )

    @dataset_asset(partitions_def=days)  # hourly -> daily: the default time-window mapping
    def day_logs(logs: Dataset) -> Dataset:
        return logs

    @dataset_asset(partitions_def=days)
    def same_day(day_logs: Dataset) -> Dataset:  # identity
        return day_logs

    @dataset_asset(
        partitions_def=days,
        ins={
            "day_logs": dg.AssetIn(partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1))
        },
    )
    def two_days(day_logs: Dataset) -> Dataset:
        return day_logs

    @dataset_asset(
        partitions_def=dg.StaticPartitionsDefinition(["report"]),
        ins={"day_logs": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())},
    )
    def every_day(day_logs: Dataset) -> Dataset:
        return day_logs

    assets = [logs, day_logs, same_day, two_days, every_day]
    store = tmp_path / "store"
    definitions = dg.Definitions(
        assets=assets, resources={"io_manager": DatasetIOManager(base_dir=str(store))}
    )
    job = definitions.resolve_implicit_global_asset_job_def()
    daily = [day_logs.key, same_day.key, two_days.key]
    for day in days.get_partition_keys():
        assert job.execute_in_process(
            instance=instance, partition_key=day, asset_selection=daily
        ).success
    assert dg.materialize(
        assets,
        instance=instance,
        partition_key="report",
        selection=[every_day],
        resources={"io_manager": DatasetIOManager(base_dir=str(store))},
    ).success

    def stored(key: dg.AssetKey, partition: str) -> Dataset:
        (record_,) = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
        ).records
        assert record_.asset_materialization is not None
        fingerprint = metadata_value(record_.asset_materialization, "dagster_ds/recipe")
        return DatasetStore(str(store)).load(key, fingerprint)

    first = stored(day_logs.key, "2024-01-01")
    assert first.num_shards == 24  # one shard per hour
    assert first["hour"][:] == [f"2024-01-01-{h:02d}:00" for h in range(24)]
    assert (
        stored(same_day.key, "2024-01-02")["hour"][:]
        == stored(day_logs.key, "2024-01-02")["hour"][:]
    )
    assert stored(two_days.key, "2024-01-01").num_rows == 24  # no day before the first
    both = stored(two_days.key, "2024-01-02")
    assert both.num_shards == 2
    assert both["hour"][0] == "2024-01-01-00:00"
    assert both["hour"][-1] == "2024-01-02-23:00"
    report = stored(every_day.key, "report")
    assert report.num_shards == 2
    assert report.num_rows == 48


def test_static_and_dynamic_partitions_observe_and_store_each_partition(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data, store = tmp_path / "data", tmp_path / "store"
    languages = dg.StaticPartitionsDefinition(["en", "fr"])
    uploads = dg.DynamicPartitionsDefinition(name="uploads")
    write_jsonl(data / "en.jsonl", [{"text": "Hello"}])
    write_jsonl(data / "fr.jsonl", [{"text": "Bonjour"}])
    write_jsonl(data / "batch-1.jsonl", [{"text": "One"}])
    texts = dataset_source(
        "texts", "json", data_files=str(data / "{partition_key}.jsonl"), partitions_def=languages
    )
    batches = dataset_source(
        "batches", "json", data_files=str(data / "{partition_key}.jsonl"), partitions_def=uploads
    )

    @dataset_asset(partitions_def=languages)
    def shouted(texts: Dataset) -> Dataset:
        record("shouted")
        return texts.map(lambda row: {"text": row["text"].upper()})

    @dataset_asset(partitions_def=uploads)
    def received(batches: Dataset) -> Dataset:
        record("received")
        return batches

    # keep_versions applies per partition: fr's version does not push en's out.
    resources = {"io_manager": DatasetIOManager(base_dir=str(store), keep_versions=1)}
    instance.add_dynamic_partitions("uploads", ["batch-1", "batch-2"])  # batch-2: no file yet
    assert dg.materialize([texts], instance=instance, selection=[texts]).success
    assert dg.materialize([batches], instance=instance, selection=[batches]).success
    assert _observed(instance, "texts").keys() == {"en", "fr"}
    assert _observed(instance, "batches").keys() == {"batch-1"}  # batch-2 is not there yet
    for language in ("en", "fr", "en"):
        result = dg.materialize(
            [texts, shouted],
            instance=instance,
            resources=resources,
            partition_key=language,
            selection=[shouted],
        )
        assert result.success
    assert body_calls() == ["shouted", "shouted"]  # en the second time: stored, skipped
    assert len(DatasetStore(str(store)).versions(shouted.key)) == 2
    versions = _partition_versions(instance, shouted.key)
    assert versions["en"] != versions["fr"]
    pinned = pinned_versions(instance, DatasetStore(str(store)))  # what gc must keep
    assert {
        DatasetStore(str(store)).version_key(shouted.key, v[0]) for v in versions.values()
    } <= pinned
    assert DatasetStore(str(store)).load(shouted.key, versions["fr"][0])["text"][:] == ["BONJOUR"]

    uploaded = [batches, received]
    result = dg.materialize(
        uploaded,
        instance=instance,
        resources=resources,
        partition_key="batch-1",
        selection=[received],
    )
    assert result.success
    assert _partition_versions(instance, received.key).keys() == {"batch-1"}
    with pytest.raises(DatasetSourceNotFoundError, match="batch-2"):
        dg.materialize(
            uploaded,
            instance=instance,
            resources=resources,
            partition_key="batch-2",
            selection=[received],
        )


def test_a_reader_of_missing_partitions_gets_a_clear_error_unless_it_allows_them(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    data, store = tmp_path / "days", tmp_path / "store"
    daily = build(data, end="2024-01-04")
    _write_days(data, daily.days.get_partition_keys())
    daily.run(instance, str(store), daily.cleaned, "2024-01-02")
    with pytest.raises(DatasetNotStoredError, match=r"'2024-01-01', '2024-01-03'.*allow_missing"):
        daily.run(instance, str(store), daily.lengths)

    @dataset_asset(ins={"cleaned": dg.AssetIn(metadata={"allow_missing_partitions": True})})
    def some_days(cleaned: Dataset) -> Dataset:
        return cleaned

    result = dg.materialize(
        [*daily.all, some_days],
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(store))},
        selection=[some_days],
    )
    assert result.success
    assert _latest_dataset(instance, store, "some_days")["id"][:] == [
        "2024-01-02/0",
        "2024-01-02/1",
    ]


def test_a_partitioned_source_must_name_its_files_by_partition() -> None:
    days = dg.DailyPartitionsDefinition(start_date="2024-01-01")
    with pytest.raises(DatasetAssetDefinitionError, match=r"\{partition_key\}"):
        dataset_source("docs", "json", data_files="data/all.jsonl", partitions_def=days)


def test_two_concurrent_runs_of_two_partitions_both_land_and_a_flipped_byte_recomputes_one(
    tmp_path: Path, dagster_home: Path, body_calls: Callable[[], list[str]]
) -> None:
    data, store, barrier = tmp_path / "days", tmp_path / "store", tmp_path / "barrier"
    days = ["2024-01-01", "2024-01-02"]
    _write_days(data, days)
    barrier.mkdir()
    (barrier / "expected").write_text("2")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        BARRIER_ENV: str(barrier),
        "PYTHONPATH": str(REPO_ROOT),
    }
    runners = [
        _fast.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("_daily.py")),
                day,
                str(data),
                str(store),
                "2024-01-03",
            ],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for day in days
    ]
    for runner in runners:
        _, err = runner.communicate(timeout=240)
        assert runner.returncode == 0, err[-3000:]
    assert sorted(body_calls()) == ["cleaned:2024-01-01", "cleaned:2024-01-02"]

    daily = build(data, end="2024-01-03")
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        versions = _partition_versions(instance, CLEANED)
        assert sorted(versions) == days
        for day in days:
            dataset = DatasetStore(str(store)).load(CLEANED, versions[day][0])
            assert dataset["text"][:] == [f"paragraph 0 of {day}", f"paragraph 1 of {day}"]

        damaged = DatasetStore(str(store)).load(CLEANED, versions[days[1]][0])
        # The partition's own table entry (the map's output; its first entry).
        target = min(Path(damaged.cache_files[0]["filename"]).glob("data-*.arrow"))
        del damaged
        content = bytearray(target.read_bytes())
        content[len(content) // 2] ^= 0xFF
        target.write_bytes(bytes(content))

        os.environ.pop(BARRIER_ENV, None)
        daily.run(instance, str(store), daily.cleaned, days[0])
        with pytest.warns(CacheCorruptionWarning, match="quarantin"):
            daily.run(instance, str(store), daily.cleaned, days[1])
        assert body_calls().count("cleaned:2024-01-01") == 1
        assert body_calls().count("cleaned:2024-01-02") == 2
        after = _partition_versions(instance, CLEANED)
        assert after == versions  # the same recipe, the same rows again
        repaired = DatasetStore(str(store)).load(CLEANED, after[days[1]][0])
        assert repaired["text"][:] == ["paragraph 0 of 2024-01-02", "paragraph 1 of 2024-01-02"]


def test_a_streaming_partitioned_asset_stores_each_partition_once_with_its_own_version(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from dagster_ds.streaming import IterableDataset

    data, store = tmp_path / "days", tmp_path / "store"
    days = ["2024-01-01", "2024-01-02"]
    _write_days(data, days)
    window = dg.DailyPartitionsDefinition(start_date=days[0], end_date="2024-01-03")
    docs = dataset_source(
        "docs",
        "json",
        data_files=str(data / "{partition_key}.jsonl"),
        partitions_def=window,
        streaming=True,
    )

    @dataset_asset(partitions_def=window)
    def streamed(docs: IterableDataset) -> IterableDataset:
        record("streamed")
        return docs.map(lambda row: {"text": row["text"].strip().upper()})

    @dataset_asset
    def both_days(streamed: IterableDataset) -> IterableDataset:
        return streamed

    resources = {"io_manager": DatasetIOManager(base_dir=str(store))}
    for day in [*days, days[0]]:  # the first day twice: stored, skipped
        result = dg.materialize(
            [docs, streamed, both_days],
            instance=instance,
            resources=resources,
            partition_key=day,
            selection=[streamed],
        )
        assert result.success
    assert body_calls() == ["streamed", "streamed"]
    versions = _partition_versions(instance, streamed.key)
    assert sorted(versions) == days
    assert versions[days[0]][1] != versions[days[1]][1]  # a data version per partition
    stored = DatasetStore(str(store)).versions(streamed.key)
    assert sorted(str(record_["partition"]) for record_ in stored) == days  # each stored once
    assert all(record_["streaming"] for record_ in stored)
    content = {str(record_["partition"]): record_["content_fingerprint"] for record_ in stored}
    for day in days:
        recipe, data_version = versions[day]
        assert content[day] == data_version  # the data version: its stored content's fingerprint
        dataset = DatasetStore(str(store)).load(streamed.key, recipe)  # verified on load
        assert dataset["text"][:] == [f"PARAGRAPH 0 OF {day}", f"PARAGRAPH 1 OF {day}"]
    caches = [
        metadata_value(r.asset_materialization, "dagster_ds/cache")
        for r in instance.fetch_materializations(streamed.key, limit=3, ascending=True).records
        if r.asset_materialization is not None
    ]
    assert caches == ["miss", "miss", "hit"]

    assert dg.materialize(
        [docs, streamed, both_days], instance=instance, resources=resources, selection=[both_days]
    ).success
    combined = _latest_dataset(instance, store, "both_days")
    assert combined["text"][:] == [f"PARAGRAPH {i} OF {day}" for day in days for i in range(2)]
