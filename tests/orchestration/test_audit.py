"""Write, audit, publish: a candidate reaches the Hub only after its blocking checks pass."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from huggingface_hub import HfApi

from dagster_ds import Dataset, load_dataset
from dagster_ds.orchestration import (
    DatasetIOManager,
    HubResource,
    dataset_asset,
    dataset_check,
    dataset_source,
    publish_to_hub,
    row_count_check,
)
from dagster_ds.testing import LocalHubServer
from tests.orchestration.conftest import latest, metadata_value, write_jsonl

REPO = "user/audited"
TOKEN = "hf_audit_secret_token"


@dataset_check
def no_empty_text(dataset: Dataset) -> dg.AssetCheckResult:
    """No row has an empty text."""
    empty = sum(1 for text in dataset["text"] if not text)
    return dg.AssetCheckResult(passed=empty == 0, metadata={"empty_rows": empty})


def _assets(data: Path, **options: object) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    docs = dataset_source("docs", "json", data_files=str(data))

    @dataset_asset(push_to_hub=REPO, **options)  # type: ignore[arg-type]
    def cleaned(docs: Dataset) -> Dataset:
        return docs.map(lambda row: {"text": row["text"].strip()})

    @dataset_asset
    def lengths(cleaned: Dataset) -> Dataset:
        return cleaned.map(lambda row: {"n": len(row["text"])})

    return [docs, cleaned, lengths]


def _refresh(
    assets: list, instance: dg.DagsterInstance, hub: LocalHubServer, storage: Path
) -> dg.ExecuteInProcessResult:
    resources = {
        "io_manager": DatasetIOManager(base_dir=str(storage)),
        "hub": HubResource(endpoint=hub.endpoint, token=TOKEN),
    }
    return dg.materialize(assets, instance=instance, resources=resources, raise_on_error=False)


def _hub_texts(hub: LocalHubServer) -> list[str]:
    return sorted(load_dataset(REPO, split="train", endpoint=hub.endpoint, token="r")["text"])


def _messages(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> str:
    """Everything the run logged (the run log in the UI)."""
    return "\n".join(entry.user_message for entry in instance.all_logs(result.run_id))


def test_a_failing_blocking_check_leaves_the_hub_untouched_and_says_so(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data, storage = tmp_path / "docs.jsonl", tmp_path / "store"
    with LocalHubServer(tmp_path / "hub") as hub:
        api = HfApi(endpoint=hub.endpoint, token="reader")
        write_jsonl(data, [{"text": " one "}, {"text": "two"}])
        first = _refresh(_assets(data, checks=[no_empty_text]), instance, hub, storage)
        assert first.success
        evaluation = first.get_asset_check_evaluations()[0]
        assert evaluation.passed
        assert evaluation.check_name == "no_empty_text"
        commits = [c.commit_id for c in api.list_repo_commits(REPO, repo_type="dataset")]
        assert _hub_texts(hub) == ["one", "two"]

        write_jsonl(data, [{"text": " one "}, {"text": "   "}, {"text": "three"}])
        second = _refresh(_assets(data, checks=[no_empty_text]), instance, hub, storage)

        (evaluation,) = second.get_asset_check_evaluations()
        assert not evaluation.passed
        assert evaluation.metadata["empty_rows"].value == 1
        # The Hub is untouched: no commit, the old rows.
        assert [c.commit_id for c in api.list_repo_commits(REPO, repo_type="dataset")] == commits
        assert _hub_texts(hub) == ["one", "two"]
        # The candidate was written (the store has it), and the run log says why it was not
        # published.
        candidate = latest(instance, "cleaned")
        assert metadata_value(candidate, "dagster/row_count") == 3
        withheld = metadata_value(candidate, "dagster_ds/hub_push")
        assert withheld.startswith("withheld: blocking check 'no_empty_text' failed on candidate")
        assert "Hub push of cleaned withheld: blocking check 'no_empty_text' failed" in (
            _messages(instance, second)
        )
        # Downstream assets do not run on a candidate that failed a blocking check.
        assert not any(
            event.asset_key == dg.AssetKey("lengths")
            for event in second.get_asset_materialization_events()
        )

        # Fixed data: the check passes and the candidate is pushed.
        write_jsonl(data, [{"text": " one "}, {"text": "three"}])
        third = _refresh(_assets(data, checks=[no_empty_text]), instance, hub, storage)
        assert third.success
        assert _hub_texts(hub) == ["one", "three"]
        assert TOKEN not in _messages(instance, second) + _messages(instance, third)


def test_a_blocking_check_declared_apart_withholds_the_push_and_says_how_to_audit_first(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data, storage = tmp_path / "docs.jsonl", tmp_path / "store"
    write_jsonl(data, [{"text": "one"}])
    assets = _assets(data)

    @dg.asset_check(asset="cleaned", blocking=True)
    def apart() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=True)

    with LocalHubServer(tmp_path / "hub") as hub:
        result = _refresh([*assets, apart], instance, hub, storage)

        assert result.success
        withheld = metadata_value(latest(instance, "cleaned"), "dagster_ds/hub_push")
        assert "blocking check 'apart' runs after this step" in withheld
        assert "dataset_asset(checks=" in withheld
        assert not HfApi(endpoint=hub.endpoint, token="r").repo_exists(REPO, repo_type="dataset")


def test_publish_to_hub_waits_for_the_blocking_checks_of_its_splits(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data, storage = tmp_path / "docs.jsonl", tmp_path / "store"
    write_jsonl(data, [{"text": "one"}, {"text": "two"}])
    docs = dataset_source("docs", "json", data_files=str(data))

    @dataset_asset
    def train(docs: Dataset) -> Dataset:
        return docs

    published = publish_to_hub("published", REPO, {"train": train})
    too_few = row_count_check(train, min_rows=3, blocking=True)
    with LocalHubServer(tmp_path / "hub") as hub:
        result = _refresh([docs, train, published, too_few], instance, hub, storage)

        assert not result.get_asset_check_evaluations()[0].passed
        assert not any(
            event.asset_key == dg.AssetKey("published")
            for event in result.get_asset_materialization_events()
        )
        assert not HfApi(endpoint=hub.endpoint, token="r").repo_exists(REPO, repo_type="dataset")


def test_a_check_must_return_a_verdict() -> None:
    from dagster_ds.errors import DatasetAssetDefinitionError

    @dataset_check
    def vague(dataset: Dataset) -> bool:
        return "yes"  # type: ignore[return-value]

    with pytest.raises(DatasetAssetDefinitionError, match="returned 'yes'; return True, False"):
        vague.evaluate(dg.AssetKey("a"), Dataset.from_dict({"x": [1]}))


def test_two_checks_with_one_name_are_refused() -> None:
    from dagster_ds.errors import DatasetAssetDefinitionError

    with pytest.raises(DatasetAssetDefinitionError, match="names \\['no_empty_text'\\]"):

        @dataset_asset(checks=[no_empty_text, no_empty_text])
        def twice(docs: Dataset) -> Dataset:
            return docs
