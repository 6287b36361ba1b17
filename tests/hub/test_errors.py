"""Bad input (repository ids, tokens, revisions) gives clear errors and leaves no trace;
the token never shows up in logs, exceptions, results, cards, Hub files or cache files."""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from dagster_ds import Dataset, DatasetDict, IterableDataset, load_dataset
from dagster_ds.errors import (
    DataFilesNotFoundError,
    HubAuthError,
    HubRequestError,
    InvalidArgumentError,
    InvalidRepoIdError,
    RepoNotFoundError,
    RevisionNotFoundError,
)
from dagster_ds.testing import LocalHubServer

TOKEN = "hf_dagsterDsSecret7c1f0e9a4b"
WRONG = "hf_dagsterDsWrong3e8d2c1b0a"


@pytest.fixture
def secured_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalHubServer]:
    """A local Hub that accepts only `TOKEN`; no token in the environment."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with LocalHubServer(tmp_path / "secured-hub", token=TOKEN) as hub:
        yield hub


def repos(hub: LocalHubServer) -> list[str]:
    return [info.id for info in HfApi(endpoint=hub.endpoint, token=TOKEN).list_datasets()]


@pytest.mark.parametrize(
    "repo_id", ["", "a/b/c", "user/bad--name", "user/..", "user/name.git", "user/sp ace", "-x/y"]
)
def test_an_invalid_repo_id_is_refused_before_any_request(
    local_hub: LocalHubServer, hub_api: Any, repo_id: str
) -> None:
    ds = Dataset.from_dict({"a": [1]})
    with pytest.raises(InvalidRepoIdError, match="Invalid repository id"):
        ds.push_to_hub(repo_id, endpoint=local_hub.endpoint)
    assert list(hub_api.list_datasets()) == []


def test_a_missing_or_wrong_token_is_refused_and_nothing_is_created(
    secured_hub: LocalHubServer,
) -> None:
    ds = Dataset.from_dict({"a": [1, 2]})
    for token, refusal in ((None, "needs a token to write"), (WRONG, "refused the token")):
        with pytest.raises(HubAuthError, match=refusal) as raised:
            ds.push_to_hub("user/locked", token=token, endpoint=secured_hub.endpoint)
        assert isinstance(raised.value, PermissionError)
        assert "token with write access" in str(raised.value)
    assert repos(secured_hub) == []


def test_a_read_refused_for_its_token_asks_for_read_access(secured_hub: LocalHubServer) -> None:
    Dataset.from_dict({"a": [1, 2]}).push_to_hub(
        "user/locked", token=TOKEN, endpoint=secured_hub.endpoint, private=True
    )
    for token, refusal in ((None, "needs a token to read"), (WRONG, "refused the token")):
        with pytest.raises(HubAuthError, match=refusal) as raised:
            load_dataset("user/locked", split="train", token=token, endpoint=secured_hub.endpoint)
        assert "token with read access" in str(raised.value)
        assert "write" not in str(raised.value)
    loaded = load_dataset("user/locked", split="train", token=TOKEN, endpoint=secured_hub.endpoint)
    assert loaded["a"][:] == [1, 2]


def test_a_revision_that_does_not_exist_is_refused_and_nothing_is_created(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    endpoint = local_hub.endpoint
    ds = Dataset.from_dict({"a": [1, 2]})
    with pytest.raises(RevisionNotFoundError, match="'dev'"):
        ds.push_to_hub("user/new", revision="dev", endpoint=endpoint)
    assert list(hub_api.list_datasets()) == []

    ds.push_to_hub("user/rev", endpoint=endpoint)
    commits = hub_api.list_repo_commits("user/rev", repo_type="dataset")
    with pytest.raises(RevisionNotFoundError, match="create_branch"):
        Dataset.from_dict({"a": [3]}).push_to_hub("user/rev", revision="dev", endpoint=endpoint)
    with pytest.raises(RevisionNotFoundError):
        DatasetDict({"train": ds}).push_to_hub("user/rev", revision="nope", endpoint=endpoint)
    assert hub_api.list_repo_commits("user/rev", repo_type="dataset") == commits
    assert [b.name for b in hub_api.list_repo_refs("user/rev", repo_type="dataset").branches] == [
        "main"
    ]
    with pytest.raises(RevisionNotFoundError):
        load_dataset("user/rev", split="train", revision="dev", endpoint=endpoint)


def test_loading_a_missing_repository_or_config_says_so(
    local_hub: LocalHubServer,
) -> None:
    endpoint = local_hub.endpoint
    with pytest.raises(RepoNotFoundError, match=r"user/absent.*no local file or folder"):
        load_dataset("user/absent", split="train", endpoint=endpoint)
    with pytest.raises(DataFilesNotFoundError):  # a missing local file, not a repository
        load_dataset("data/train.jsonl", split="train", endpoint=endpoint)
    Dataset.from_dict({"a": [1]}).push_to_hub("user/configs", "en", endpoint=endpoint)
    with pytest.raises(InvalidArgumentError, match=r"no config named 'de'.*\['en'\]"):
        load_dataset("user/configs", "de", endpoint=endpoint)
    with pytest.raises(InvalidArgumentError, match="unknown split 'test'"):
        load_dataset("user/configs", "en", split="test", endpoint=endpoint)


def test_an_unreachable_hub_says_so() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(HubRequestError, match="cannot reach the Hub"):
        Dataset.from_dict({"a": [1]}).push_to_hub("user/x", endpoint=endpoint)
    with pytest.raises(HubRequestError, match="cannot reach the Hub"):
        load_dataset("user/x", split="train", endpoint=endpoint)


def test_bad_push_arguments_are_refused(local_hub: LocalHubServer, hub_api: Any) -> None:
    ds = Dataset.from_dict({"a": [1]})
    endpoint = local_hub.endpoint
    with pytest.raises(InvalidArgumentError, match="config_name='data'"):
        ds.push_to_hub("user/x", config_name="data", endpoint=endpoint)
    with pytest.raises(InvalidArgumentError, match="not both"):
        ds.push_to_hub("user/x", num_shards=2, max_shard_size="1MB", endpoint=endpoint)
    with pytest.raises(InvalidArgumentError, match="split name"):
        ds.push_to_hub("user/x", split="train/0", endpoint=endpoint)
    with pytest.raises(InvalidArgumentError, match="positive"):
        ds.push_to_hub("user/x", num_shards=0, endpoint=endpoint)
    assert list(hub_api.list_datasets()) == []


def test_the_token_never_leaks(
    secured_hub: LocalHubServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("huggingface_hub", "dagster_ds", "httpx2", "httpcore2", "fsspec", "filelock"):
        caplog.set_level(logging.DEBUG, logger=name)
    endpoint = secured_hub.endpoint
    ds = Dataset.from_dict({"text": ["a", "b", "c"]}).map(lambda x: {"n": len(x["text"])})

    shown: list[str] = []
    pushed = ds.push_to_hub("user/secret", token=TOKEN, private=True, endpoint=endpoint)
    again = ds.push_to_hub("user/secret", token=TOKEN, endpoint=endpoint)
    loaded = load_dataset("user/secret", split="train", token=TOKEN, endpoint=endpoint)
    assert loaded.to_list() == ds.to_list()
    assert again.skipped
    streamed = IterableDataset.from_dict({"x": list(range(6))}, num_shards=2)
    stream_push = streamed.push_to_hub("user/stream", token=TOKEN, endpoint=endpoint)
    shown += [repr(stream_push), repr(stream_push.__dict__)]
    stream_back = load_dataset(
        "user/secret", split="train", streaming=True, token=TOKEN, endpoint=endpoint
    )
    assert list(stream_back) == ds.to_list()
    shown += [repr(stream_back), repr(stream_back.state_dict()), repr(stream_back.lineage)]
    shown += [repr(pushed), str(pushed), repr(again), repr(loaded), repr(loaded.lineage)]
    shown += [str(loaded.cache_files), str(pushed.__dict__)]
    failures: list[BaseException] = []
    for call in (
        lambda: ds.push_to_hub("user/secret", token=WRONG, endpoint=endpoint),
        lambda: load_dataset("user/secret", split="train", token=WRONG, endpoint=endpoint),
        lambda: ds.push_to_hub("user/secret", token=TOKEN, revision="no", endpoint=endpoint),
        lambda: load_dataset("user/secret", split="x", token=TOKEN, endpoint=endpoint),
    ):
        with pytest.raises(Exception) as raised:  # noqa: PT011 (each is checked below)
            call()
        failures.append(raised.value)
    shown += ["".join(traceback.format_exception(error)) for error in failures]
    shown += [repr(error.args) for error in failures]
    captured = capfd.readouterr()
    shown += [caplog.text, captured.out, captured.err]
    assert "push_to_hub" in caplog.text  # the logs were captured

    folders = [tmp_path, Path(os.environ["DAGSTER_DS_CACHE"])]
    files = [path for folder in folders for path in folder.rglob("*") if path.is_file()]
    assert any(path.name == "manifest.json" for path in files)  # our cache
    assert sum("blobs" in path.parts for path in files) >= 3  # the card and the Parquet files
    for secret in (TOKEN, WRONG):
        for text in shown:
            assert secret not in text
        for path in files:
            assert secret.encode() not in path.read_bytes(), path
