"""dataset_source: an observable source whose data version is its files' content fingerprint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg

from dagster_ds import load_dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_source
from tests.orchestration._chain import build
from tests.orchestration.conftest import observed_version, tag


def _observe(source: dg.SourceAsset, instance: dg.DagsterInstance) -> dg.AssetObservation:
    result = dg.materialize([source], instance=instance, selection=[source])
    assert result.success
    (event,) = result.get_asset_observation_events()
    return event.asset_observation_data.asset_observation


def test_the_data_version_is_the_fingerprint_load_dataset_gives_the_files(
    instance: dg.DagsterInstance, corpus: Path
) -> None:
    source = dataset_source("docs", "json", data_files=str(corpus))
    observation = _observe(source, instance)
    loaded = load_dataset("json", data_files=str(corpus), split="train")
    assert observation.data_version == loaded.fingerprint
    assert observation.metadata["dagster_ds/data_version"].value == loaded.fingerprint
    assert observation.metadata["dagster/row_count"].value == 3
    assert (
        source.description
        == f"Dataset source: 'json' with data files {str(corpus)!r}, split 'train'."
    )


def test_only_a_change_of_content_changes_the_data_version(
    instance: dg.DagsterInstance, corpus: Path
) -> None:
    source = dataset_source("docs", "json", data_files=str(corpus))
    first = _observe(source, instance).data_version
    corpus.write_bytes(corpus.read_bytes())  # new modification time, same bytes
    assert _observe(source, instance).data_version == first
    corpus.write_bytes(corpus.read_bytes().replace(b"Hello", b"Howdy"))
    assert _observe(source, instance).data_version not in (None, first)


def test_a_new_source_version_makes_its_consumers_out_of_date(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus))
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    assert dg.materialize(
        chain.all, instance=instance, resources=resources, selection=chain.all
    ).success
    consumed = tag(instance, "cleaned", "dagster/input_data_version/docs")
    assert consumed == observed_version(instance, "docs")

    with corpus.open("a") as file:
        file.write('{"text": "one more row"}\n')
    _observe(chain.docs, instance)
    # What Dagster's staleness compares: the version `cleaned` consumed is no longer the latest.
    assert observed_version(instance, "docs") != consumed
    assert body_calls() == ["cleaned", "tokens", "counts"]


def test_a_hub_repository_source_is_versioned_by_its_commit(
    tmp_path: Path, instance: dg.DagsterInstance, body_calls: Callable[[], list[str]]
) -> None:
    from dagster_ds import Dataset
    from dagster_ds.orchestration import dataset_asset
    from dagster_ds.testing import LocalHubServer
    from tests.orchestration._chain import record

    with LocalHubServer(tmp_path / "hub", token="hf_reader") as hub:
        Dataset.from_dict({"text": ["a", "b"]}).push_to_hub(
            "team/texts", token="hf_reader", endpoint=hub.endpoint
        )
        texts = dataset_source("texts", "team/texts", token="hf_reader", endpoint=hub.endpoint)

        @dataset_asset
        def counted(texts: Dataset) -> Dataset:
            record("counted")
            return texts.map(lambda example: {"n": len(example["text"])})

        assets = [texts, counted]
        resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}

        def refresh() -> str | None:
            assert dg.materialize(
                assets, instance=instance, resources=resources, selection=assets
            ).success
            return observed_version(instance, "texts")

        first, unchanged = refresh(), refresh()
        Dataset.from_dict({"text": ["a", "b", "c"]}).push_to_hub(
            "team/texts", token="hf_reader", endpoint=hub.endpoint
        )
        changed = refresh()
    assert first == unchanged != changed
    assert body_calls() == ["counted", "counted"]  # not for the unchanged commit
    assert "hf_reader" not in repr(texts.metadata) + (texts.description or "")
