"""Fixtures of the orchestration tests: a persistent Dagster instance, data, a call log."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from tests.conftest import QUICK_INSTANCE
from tests.orchestration._chain import CALLS_ENV, calls, write_jsonl

ROWS = [{"text": "Hello World"}, {"text": "  The quick brown fox "}, {"text": "x"}]


@pytest.fixture
def instance(dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    """A Dagster instance persisted in a temporary DAGSTER_HOME (set in the environment).

    Its event log is one SQLite database and it keeps no step output (`QUICK_INSTANCE`).
    The environment is set with the test's `monkeypatch`, which undoes its changes in
    reverse order: with Dagster's own (``set_dagster_home``) undone first, a test's
    ``monkeypatch.setenv("DAGSTER_HOME", ...)`` put the deleted home back for the tests
    after it in the process.
    """
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "yes")
    with dg.instance_for_test(
        temp_dir=str(dagster_home), overrides=QUICK_INSTANCE, set_dagster_home=False
    ) as instance:
        yield instance


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small JSON Lines file: three rows, one too short to keep."""
    return write_jsonl(tmp_path / "data" / "docs.jsonl", ROWS)


@pytest.fixture
def body_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The names of the dataset asset functions called so far, in every process."""
    path = tmp_path / "calls.log"
    monkeypatch.setenv(CALLS_ENV, str(path))
    return lambda: calls(path)


def latest(instance: dg.DagsterInstance, key: str) -> dg.AssetMaterialization:
    event = instance.get_latest_materialization_event(dg.AssetKey(key))
    assert event is not None
    assert event.asset_materialization is not None
    return event.asset_materialization


def data_version(instance: dg.DagsterInstance, key: str) -> str:
    """The data version recorded by the latest materialization of ``key``."""
    return tag(instance, key, "dagster/data_version")


def tag(instance: dg.DagsterInstance, key: str, name: str) -> str:
    """A tag of the latest materialization of ``key``."""
    tags = latest(instance, key).tags or {}
    return tags[name]


def metadata_value(materialization: dg.AssetMaterialization, key: str) -> Any:
    return materialization.metadata[key].value


def observed_version(instance: dg.DagsterInstance, key: str) -> str | None:
    """The data version of the latest observation of a source."""
    records = instance.fetch_observations(dg.AssetKey(key), limit=1).records
    if not records or records[0].asset_observation is None:
        return None
    return records[0].asset_observation.data_version
