"""Sharded streaming exports and pushes run on the current DaskExecutor, file for file as here."""

from __future__ import annotations

import os
import traceback
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.distributed import DaskExecutor
from dagster_ds.streaming import IterableDataset
from dagster_ds.testing import LocalHubServer
from tests.distributed import _functions
from tests.distributed._functions import logged, logged_in, pids

PATTERN = "part-{index:05d}-of-{num_shards:05d}.parquet"


def _stream(log: Path) -> IterableDataset:
    """40 ids in 4 source shards, doubled by a function that logs where it ran."""
    ids = IterableDataset.from_dict({"id": list(range(40))}, num_shards=4)
    return ids.map(_functions.double, batched=True, fn_kwargs={"log": str(log)})


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_sharded_export_writes_on_the_cluster_the_files_written_here(
    client: Any, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    local = _stream(log).to_parquet(str(tmp_path / "local" / PATTERN), num_shards=4)
    assert pids(log) == {os.getpid()}
    log.unlink()

    with DaskExecutor(client):
        remote = _stream(log).to_parquet(str(tmp_path / "remote" / PATTERN), num_shards=4)
    assert remote == local
    assert _files(tmp_path / "remote") == _files(tmp_path / "local")
    assert len(_files(tmp_path / "remote")) == 4
    assert sorted(logged(log)) == [0, 10, 20, 30]  # each file's rows computed once
    assert pids(log) <= set(client.run(os.getpid).values())  # on the cluster's workers


def test_a_push_with_num_proc_uploads_from_the_cluster_the_files_pushed_from_here(
    client: Any, local_hub: LocalHubServer, hub_api: Any, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    _stream(log).push_to_hub("user/here", num_shards=6, num_proc=2, endpoint=local_hub.endpoint)
    log.unlink()
    with DaskExecutor(client):
        result = _stream(log).push_to_hub(
            "user/there", num_shards=6, num_proc=2, endpoint=local_hub.endpoint
        )
    assert result.num_rows == {"train": 40}

    def blobs(repo_id: str) -> list[tuple[str, str]]:
        tree = hub_api.list_repo_tree(repo_id, path_in_repo="data", repo_type="dataset")
        return [(entry.path, entry.lfs.sha256) for entry in sorted(tree, key=lambda e: e.path)]

    assert len(blobs("user/there")) == 6
    assert blobs("user/there") == blobs("user/here")
    # Every shard on the cluster's workers (the driver reads one batch for the features).
    assert sorted(logged_in(log, set(client.run(os.getpid).values()))) == [0, 10, 20, 30]


TOKEN = "hf_dagsterDsClusterSecret5d2a9c"


def test_a_push_failing_on_the_cluster_keeps_the_token_out_of_every_log_and_error(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    stream = IterableDataset.from_dict({"id": list(range(40))}, num_shards=4).map(
        _functions.double_or_raise_unbatched, fn_kwargs={"bad": 35}
    )
    with (
        LocalHubServer(tmp_path / "hub", token=TOKEN) as hub,
        DaskExecutor(client),
        pytest.raises(Exception, match="cannot double id 35") as raised,
    ):
        stream.push_to_hub(
            "user/secret", num_shards=4, num_proc=2, token=TOKEN, endpoint=hub.endpoint
        )
    shown = ["".join(traceback.format_exception(raised.value)), repr(raised.value.args)]
    for logs in (client.get_worker_logs(), {"scheduler": client.get_scheduler_logs()}):
        shown += [line for lines in logs.values() for _, line in lines]
    # The worker's log of the failed task (its arguments shown as run_sealed(...)).
    assert any("Compute Failed" in line and "cannot double id 35" in line for line in shown)
    assert not [text for text in shown if TOKEN in text]
