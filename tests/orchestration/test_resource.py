"""HubResource and push_to_hub: the embedded Hub by default, one commit per new fingerprint."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from huggingface_hub import HfApi

from dagster_ds import Dataset
from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.orchestration import DatasetIOManager, HubResource, HubTarget, dataset_asset
from dagster_ds.orchestration.resource import HUB_ENDPOINT
from dagster_ds.testing import LocalHubServer
from tests.orchestration._chain import build, record
from tests.orchestration.conftest import latest, metadata_value, write_jsonl


def test_where_the_resource_points() -> None:
    assert HubResource().is_embedded
    assert HubResource(token="hf_x").url == HUB_ENDPOINT
    assert HubResource(endpoint="http://hub.internal/").url == "http://hub.internal"
    assert HubResource(endpoint="http://hub.internal").repo_url("me/docs") == (
        "http://hub.internal/datasets/me/docs"
    )
    with pytest.raises(DatasetAssetDefinitionError, match="inside a run's step only"):
        _ = HubResource().url


def test_from_env_reads_the_token_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert HubResource.from_env().is_embedded
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    resource = HubResource.from_env()
    assert not resource.is_embedded
    assert resource.token == dg.EnvVar("HF_TOKEN")  # the UI shows the variable, not the secret


def _pipeline(corpus: Path, repo: str = "user/docs") -> list[Any]:
    chain = build(str(corpus))

    @dataset_asset(push_to_hub=HubTarget(repo, split="train"))
    def published(counts: Dataset) -> Dataset:
        record("published")
        return counts

    return [*chain.all, published]


def _commits(data_dir: Path, repo: str) -> list[str]:
    with LocalHubServer(data_dir) as hub:
        api = HfApi(endpoint=hub.endpoint, token="reader")
        return [commit.commit_id for commit in api.list_repo_commits(repo, repo_type="dataset")]


def test_a_push_is_skipped_when_the_hub_has_the_fingerprint(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    assets = _pipeline(corpus)
    hub_data = tmp_path / "hub"
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
        "hub": HubResource(local_data_dir=str(hub_data)),
    }
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    first = latest(instance, "published")
    commit = metadata_value(first, "dagster_ds/hub_commit")
    assert metadata_value(first, "dagster_ds/hub_push") == "pushed"
    assert len(commit) == 40
    url = metadata_value(first, "dagster_ds/hub_url")
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith(f"/datasets/user/docs/commit/{commit}")
    commits = _commits(hub_data, "user/docs")
    assert commits[0] == commit

    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    second = latest(instance, "published")
    assert metadata_value(second, "dagster_ds/cache") == "hit"
    assert metadata_value(second, "dagster_ds/hub_push") == "skipped (unchanged)"
    assert metadata_value(second, "dagster_ds/hub_commit") == commit
    assert _commits(hub_data, "user/docs") == commits  # no new commit
    assert body_calls() == ["cleaned", "tokens", "counts", "published"]


def test_a_push_commit_says_what_changed_in_its_split(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    hub_data = tmp_path / "hub"
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
        "hub": HubResource(local_data_dir=str(hub_data)),
    }

    def refresh() -> tuple[str, int, str]:
        assets = _pipeline(corpus)
        result = dg.materialize(assets, instance=instance, resources=resources, selection=assets)
        assert result.success
        published = latest(instance, "published")
        with LocalHubServer(hub_data) as hub:
            api = HfApi(endpoint=hub.endpoint, token="reader")
            (head, *_) = api.list_repo_commits("user/docs", repo_type="dataset")
        version = metadata_value(published, "dagster_ds/data_version")
        return head.title, metadata_value(published, "dagster/row_count"), version

    title, rows, version = refresh()
    assert title.startswith(f"train: {rows:,} rows ({version[:8]}) (Dagster run ")
    write_jsonl(corpus, [{"text": f"row number {i}"} for i in range(rows + 3)])
    title, new_rows, new_version = refresh()
    assert title.startswith(
        f"train: {rows:,} → {new_rows:,} rows (+3), {version[:8]} → {new_version[:8]} (Dagster run "
    )


def test_the_embedded_hub_lives_in_the_instance_and_stops_after_the_step(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    assets = _pipeline(corpus)
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
        "hub": HubResource(),
    }
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    data_dir = Path(instance.storage_directory()) / "dagster_ds_hub"
    assert _commits(data_dir, "user/docs")
    url = metadata_value(latest(instance, "published"), "dagster_ds/hub_url")
    port = int(url.split(":")[2].split("/")[0])
    with socket.socket() as sock:  # the server that served the push is gone
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_a_configured_endpoint_and_token_are_used(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    with LocalHubServer(tmp_path / "remote", token="hf_the_only_token") as hub:
        endpoint = hub.endpoint
        assets = _pipeline(corpus, repo="team/docs")
        resources = {
            "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
            "hub": HubResource(endpoint=hub.endpoint, token="hf_the_only_token"),
        }
        assert dg.materialize(
            assets, instance=instance, resources=resources, selection=assets
        ).success
        api = HfApi(endpoint=hub.endpoint, token="hf_the_only_token")
        files = api.list_repo_files("team/docs", repo_type="dataset")
        assert any(f.startswith("data/train-") and f.endswith(".parquet") for f in files)
    materialization = latest(instance, "published")
    assert metadata_value(materialization, "dagster_ds/hub_url").startswith(endpoint)
    assert "hf_the_only_token" not in str(materialization.metadata)


def test_pushing_without_a_hub_resource_says_how_to_add_one(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    assets = _pipeline(corpus)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="'hub'"):
        dg.materialize(
            assets,
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        )


def test_check_hub_when_unchanged_asks_the_hub_again(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    assets = _pipeline(corpus)
    hub_data = tmp_path / "hub"
    resources: dict[str, Any] = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
        "hub": HubResource(local_data_dir=str(hub_data)),
    }
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    commits = _commits(hub_data, "user/docs")
    # Someone else commits to the repository; a skipped asset records the Hub's new head.
    with LocalHubServer(hub_data) as hub:
        api = HfApi(endpoint=hub.endpoint, token="someone")
        api.upload_file(
            path_or_fileobj=b"notes",
            path_in_repo="NOTES.md",
            repo_id="user/docs",
            repo_type="dataset",
        )
    head = _commits(hub_data, "user/docs")[0]
    resources["hub"] = HubResource(local_data_dir=str(hub_data), check_hub_when_unchanged=True)
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    materialization = latest(instance, "published")
    assert metadata_value(materialization, "dagster_ds/cache") == "hit"
    assert metadata_value(materialization, "dagster_ds/hub_push") == "skipped (unchanged)"
    assert metadata_value(materialization, "dagster_ds/hub_commit") == head
    assert _commits(hub_data, "user/docs") == [head, *commits]


def test_a_stream_is_pushed_as_a_stream_without_a_dataset_io_manager(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    from dagster_ds.orchestration import dataset_source
    from dagster_ds.streaming import IterableDataset

    docs = dataset_source("docs", "json", data_files=str(corpus), streaming=True)

    @dataset_asset(io_manager_key="memory", push_to_hub=HubTarget("user/stream", split="train"))
    def upper(docs: IterableDataset) -> IterableDataset:
        return docs.map(lambda example: {"text": example["text"].upper()})

    hub_data = tmp_path / "hub"
    resources = {
        "memory": dg.InMemoryIOManager(),
        "hub": HubResource(local_data_dir=str(hub_data)),
    }
    assert dg.materialize([docs, upper], instance=instance, resources=resources).success
    materialization = latest(instance, "upper")
    assert metadata_value(materialization, "dagster_ds/hub_push") == "pushed"
    assert metadata_value(materialization, "dagster_ds/cache") == "miss"
    assert _commits(hub_data, "user/stream")[0] == metadata_value(
        materialization, "dagster_ds/hub_commit"
    )


def test_the_embedded_hub_keeps_one_port_so_recorded_links_open(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    import urllib.request

    assets = _pipeline(corpus)
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
        "hub": HubResource(),
    }
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    first = metadata_value(latest(instance, "published"), "dagster_ds/hub_url")
    corpus.write_text(corpus.read_text() + '{"text": "one more line of text"}\n')  # a new commit
    assert dg.materialize(assets, instance=instance, resources=resources, selection=assets).success
    second = metadata_value(latest(instance, "published"), "dagster_ds/hub_url")
    assert first != second
    assert first.split("/datasets/")[0] == second.split("/datasets/")[0]  # one port
    data_dir = Path(instance.storage_directory()) / "dagster_ds_hub"
    with LocalHubServer(data_dir, stable_port=True) as hub:  # what `make ui` serves
        assert second.startswith(hub.endpoint)
        for url in (first, second, second.split("/commit/")[0]):
            with urllib.request.urlopen(url, timeout=10) as page:
                assert page.status == 200
                assert "text/html" in page.headers["content-type"]
