"""A partitioned source's partition is a stored version: its readers name its changed columns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
from click.testing import CliRunner

from dagster_ds import Dataset
from dagster_ds.arrow import all_versions
from dagster_ds.cli import main
from dagster_ds.orchestration import (
    DatasetIOManager,
    DatasetStore,
    dataset_asset,
    dataset_source,
    plan_refresh,
)
from tests.conftest import RunPython, s3_requests
from tests.orchestration._chain import correct_labels, record, write_label_files
from tests.orchestration.conftest import metadata_value

PARTITIONS = dg.StaticPartitionsDefinition(["a", "b"])


def _assets(folder: Path | str, storage_options: dict[str, Any] | None = None) -> list[Any]:
    raw = dataset_source(
        "raw",
        "json",
        data_files=f"{folder}/{{partition_key}}/*.jsonl",
        partitions_def=PARTITIONS,
        storage_options=storage_options,
    )

    @dataset_asset(partitions_def=PARTITIONS)
    def lengths(raw: Dataset) -> Dataset:
        def n_chars(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
            record(f"n_chars:{len(batch['text'])}")
            return {"n_chars": [len(text) for text in batch["text"]]}

        return raw.map(n_chars, batched=True)

    return [raw, lengths]


def test_a_label_corrected_in_a_source_partition_is_named_by_column_and_its_readers_reused(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    folder, storage = tmp_path / "data", tmp_path / "storage"
    for partition in ("a", "b"):
        write_label_files(folder / partition)
    assets = _assets(folder)
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage))}

    def materialize(partition: str) -> None:
        result = dg.materialize(
            assets,
            instance=instance,
            resources=resources,
            partition_key=partition,
            selection=["lengths"],
        )
        assert result.success

    for partition in ("a", "b"):
        materialize(partition)
    first = _recipe(_latest(instance, "a"))
    correct_labels(folder / "a")
    defs = dg.Definitions(assets=assets, resources=resources)
    plan = plan_refresh(
        defs.get_repository_def(),
        instance,
        dg.AssetSelection.assets("lengths"),
        store=DatasetStore(str(storage)),
    )
    steps = {(step.asset, step.partition): step for step in plan.steps}
    calls = len(body_calls())
    materialize("a")

    said = "parent 'raw': column 'label' changed in 1 of 1 shards"
    changed = metadata_value(_latest(instance, "a"), "dagster_ds/changed")
    assert said in changed
    assert "'n_chars' reads only 'text': reused 1 of 1 changed shards (1 in all)" in changed
    # The plan said it before the run, reading only partition a's changed files.
    assert steps["lengths", "a"].action == "run"
    assert said in steps["lengths", "a"].why
    assert steps["raw", "a"].why[-1].startswith("read 3 changed files (")
    assert steps["lengths", "b"].action == "skip"
    assert [call for call in body_calls()[calls:] if call.startswith("n_chars")] == []
    explained = CliRunner().invoke(
        main,
        [
            "hash",
            "explain",
            first[:12],
            _recipe(_latest(instance, "a"))[:12],
            "--store",
            str(storage),
        ],
    )
    assert explained.exit_code == 0, explained.output
    assert f"  - {said}" in explained.stdout.splitlines()


def _latest(instance: dg.DagsterInstance, partition: str) -> dg.AssetMaterialization:
    """The latest materialization of ``lengths``'s ``partition``."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("lengths"), asset_partitions=[partition]),
        limit=1,
    ).records
    assert records
    assert records[0].asset_materialization is not None
    return records[0].asset_materialization


def _recipe(materialization: dg.AssetMaterialization) -> str:
    return str(metadata_value(materialization, "dagster_ds/recipe"))


def test_each_source_partition_keeps_its_own_versions(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    """``keep_versions`` counts a source's versions by partition: loading partition a's new
    files drops a's older version, never b's."""
    folder, storage = tmp_path / "data", tmp_path / "storage"
    for partition in ("a", "b"):
        write_label_files(folder / partition)
    resources = {"io_manager": DatasetIOManager(base_dir=str(storage), keep_versions=1)}

    def materialize(partition: str) -> None:
        assets = _assets(folder)
        assert dg.materialize(
            assets, instance=instance, resources=resources, partition_key=partition
        ).success

    def source_versions() -> dict[str, int]:
        """How many versions of ``raw`` the store holds, by partition."""
        partitions = [
            str(version.get("partition"))
            for version in all_versions(DatasetStore(str(storage)).cache)
            if version.get("asset") == "raw"
        ]
        return {partition: partitions.count(partition) for partition in partitions}

    materialize("a")
    materialize("b")
    assert source_versions() == {"a": 1, "b": 1}
    correct_labels(folder / "a")
    materialize("a")
    assert source_versions() == {"a": 1, "b": 1}
    materialize("b")  # b's version is still stored: its rows did not change
    assert source_versions() == {"a": 1, "b": 1}


def test_loading_many_partitions_reads_the_store_in_proportion_to_them(
    tmp_path: Path, run_python: RunPython
) -> None:
    """An unpartitioned reader of every partition, with ``keep_versions``: retention runs
    once for the partitions it stored, not once per partition over a growing store."""
    opened: dict[int, int] = {}
    for count in (4, 12):
        folder, store = tmp_path / f"data-{count}", tmp_path / f"store-{count}"
        keys = [f"p{index:02d}" for index in range(count)]
        for key in keys:
            write_label_files(folder / key, files=1)
        printed = run_python(
            f"""
            import sys
            import dagster as dg
            from dagster_ds.cache import cache_root
            from dagster_ds.orchestration import dataset_source
            from dagster_ds.orchestration._source_partitions import load_partitions
            partitions = dg.StaticPartitionsDefinition({keys!r})
            source = dataset_source(
                "raw", "json", data_files={str(folder / "{partition_key}" / "*.jsonl")!r},
                partitions_def=partitions,
            )
            spec = getattr(source.observe_fn, "dagster_ds_spec")
            opened = []
            sys.addaudithook(
                lambda event, args: opened.append(args[0])
                if event == "open" and str(args[0]).endswith("manifest.json") else None
            )
            with cache_root({str(store)!r}):
                loaded = load_partitions(spec, partitions, {keys!r}, keep_versions=1)
            assert loaded.num_rows == 5 * {count}
            print(len(opened))
            """
        )
        opened[count] = int(printed)
    assert opened[12] <= 3 * opened[4], opened  # per partition: quadratic (48, then 188)


def test_on_s3_a_source_partition_s_changed_column_is_named_and_an_unchanged_one_writes_nothing(
    s3_endpoint: str, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    """The same on an object store: the source's files and the store on S3 (moto)."""
    import s3fs

    options = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}
    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)

    def write(partition: str, index: int, label: int) -> None:
        rows = "".join(f'{{"text": "t{index}-{row}", "label": {label}}}\n' for row in range(5))
        fs.pipe(f"datasets/src/{partition}/part-{index}.jsonl", rows.encode())

    for partition in ("a", "b"):
        for index in range(3):
            write(partition, index, 0)
    assets = _assets("s3://datasets/src", {**options, "skip_instance_cache": True})
    store = DatasetIOManager(base_dir="s3://datasets/store", storage_options=options)

    def materialize(partition: str) -> Counter[str]:
        with s3_requests() as requests:
            assert dg.materialize(
                assets,
                instance=instance,
                resources={"io_manager": store},
                partition_key=partition,
                selection=["lengths"],
            ).success
        return Counter(method for method, _ in requests.made())

    materialize("a")
    materialize("b")
    unchanged = materialize("b")
    assert unchanged["PUT"] + unchanged["DELETE"] + unchanged["POST"] == 0, unchanged
    write("a", 1, 1)
    calls = len(body_calls())
    materialize("a")

    changed = metadata_value(_latest(instance, "a"), "dagster_ds/changed")
    assert "parent 'raw': column 'label' changed in 1 of 1 shards" in changed
    assert [call for call in body_calls()[calls:] if call.startswith("n_chars")] == []
