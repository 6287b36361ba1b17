"""publish_to_hub: train and test in ONE Hub commit, titled with assets, fingerprints, run id."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
from huggingface_hub import GitCommitInfo, HfApi

from dagster_ds import Dataset
from dagster_ds.orchestration import (
    DatasetIOManager,
    HubResource,
    dataset_asset,
    publish_to_hub,
)
from dagster_ds.testing import LocalHubServer
from tests.orchestration._chain import build
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

REPO = "user/splits"
TOKEN = "hf_publish_secret_token"


def _assets(corpus: Path) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    chain = build(str(corpus))

    @dataset_asset
    def train(tokens: Dataset) -> Dataset:
        return tokens.filter(lambda example: len(example["tokens"]) > 2)

    @dataset_asset
    def test(tokens: Dataset) -> Dataset:
        return tokens.filter(lambda example: len(example["tokens"]) <= 2)

    published = publish_to_hub("published", REPO, {"train": train, "test": test})
    return [chain.docs, chain.cleaned, chain.tokens, train, test, published]


SPLITS = ("train", "test")


def test_a_refresh_publishes_both_splits_in_one_commit_and_nothing_when_unchanged(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    with LocalHubServer(tmp_path / "hub") as hub:
        api = HfApi(endpoint=hub.endpoint, token="reader")
        resources = {
            "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
            "hub": HubResource(endpoint=hub.endpoint, token=TOKEN),
        }

        def refresh() -> dg.ExecuteInProcessResult:
            assets = _assets(corpus)
            result = dg.materialize(assets, instance=instance, resources=resources)
            assert result.success
            return result

        def commits() -> list[GitCommitInfo]:
            return list(api.list_repo_commits(REPO, repo_type="dataset"))

        first = refresh()
        after_first = commits()
        published = latest(instance, "published")
        train = latest(instance, "train")
        test = latest(instance, "test")
        assert metadata_value(published, "dagster_ds/hub_push") == "pushed"
        head = after_first[0]
        assert head.commit_id == metadata_value(published, "dagster_ds/hub_commit")
        rows = {
            name: metadata_value(latest(instance, name), "dagster/row_count") for name in SPLITS
        }
        versions = {
            name: metadata_value(latest(instance, name), "dagster_ds/data_version")
            for name in SPLITS
        }
        assert (
            head.title
            == (  # what the commit brings, split by split
                f"train: {rows['train']:,} rows ({versions['train'][:8]});"
                f" test: {rows['test']:,} rows ({versions['test'][:8]})"
                f" (Dagster run {first.run_id[:8]})"
            )
        )
        for split in (train, test):
            assert metadata_value(split, "dagster_ds/data_version") in head.message
        assert first.run_id in head.message
        assert TOKEN not in head.title + head.message
        files = {f.path for f in api.list_repo_tree(REPO, repo_type="dataset", recursive=True)}
        parquet = {f.split("-")[0] for f in files if f.endswith(".parquet")}
        assert parquet == {"data/train", "data/test"}

        refresh()  # nothing changed: no commit, and not even a request for the card
        assert [c.commit_id for c in commits()] == [c.commit_id for c in after_first]
        assert metadata_value(latest(instance, "published"), "dagster_ds/hub_push") == (
            "skipped (unchanged)"
        )

        write_jsonl(corpus, [{"text": "one two three four"}, {"text": "five six"}])
        third = refresh()  # both splits changed: one more commit, not two
        after_third = commits()
        assert len(after_third) == len(after_first) + 1
        new_rows = {
            name: metadata_value(latest(instance, name), "dagster/row_count") for name in SPLITS
        }
        new_versions = {
            name: metadata_value(latest(instance, name), "dagster_ds/data_version")
            for name in SPLITS
        }
        changes = [
            f"{name}: {rows[name]:,} → {new_rows[name]:,} rows"
            f" ({new_rows[name] - rows[name]:+,}), {versions[name][:8]} → {new_versions[name][:8]}"
            for name in SPLITS
        ]
        assert after_third[0].title == "; ".join(changes) + f" (Dagster run {third.run_id[:8]})"


def test_the_skip_message_never_contradicts_the_push_message(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    chain = build(str(corpus))

    @dataset_asset(push_to_hub="user/pushed")
    def pushed(tokens: Dataset) -> Dataset:
        return tokens

    assets = [*chain.all, pushed]
    storage = DatasetIOManager(base_dir=str(tmp_path / "storage"))
    for hub in ("hub-a", "hub-b"):  # the second Hub does not have the stored version yet
        resources = {"io_manager": storage, "hub": HubResource(local_data_dir=str(tmp_path / hub))}
        result = dg.materialize(assets, instance=instance, resources=resources)
        assert result.success
    messages = [
        entry.user_message
        for entry in instance.all_logs(result.run_id)
        if entry.step_key == "pushed" and entry.user_message.startswith(("Skipped", "Hub:"))
    ]
    assert len(messages) == 1, messages  # one line per asset
    (line,) = messages
    skipped, _, hub = line.partition("; Hub: ")
    assert skipped.startswith("Skipped pushed:")
    assert "no data was stored" in skipped
    assert "nothing was written" not in skipped
    assert hub.startswith("pushed its stored version (not on the Hub yet) in one commit:")
