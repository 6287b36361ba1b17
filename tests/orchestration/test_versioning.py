"""Code versions follow the user's code on disk; Dagster's stale status shows why."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds.orchestration import asset_fingerprint, transform_hash
from tests.conftest import RunPython
from tests.orchestration._chain import CALLS_ENV, DATA_ENV, STORAGE_ENV
from tests.webserver import Webserver

PROJECT = Path(__file__).parent / "project"

STALE = """
query {
  assetNodes {
    assetKey { path }
    staleStatus
    staleCauses { key { path } category reason dependency { path } }
  }
}
"""


def test_transform_hash_covers_config_classes() -> None:
    class Small(dg.Config):
        size: int = 1

    class Large(dg.Config):
        size: int = 2

    def identity(docs: object) -> object:
        return docs

    assert transform_hash(identity) == transform_hash(identity)
    assert transform_hash(identity, Small) != transform_hash(identity, Large)
    assert transform_hash(identity, Small) != transform_hash(identity)


def test_asset_fingerprint_depends_on_everything_that_makes_the_result() -> None:
    code, parent = "1" * 32, "2" * 32
    base = asset_fingerprint(code, {"docs": parent})
    assert base == asset_fingerprint(code, {"docs": parent}, {})
    assert base != asset_fingerprint("3" * 32, {"docs": parent})
    assert base != asset_fingerprint(code, {"docs": "3" * 32})
    assert base != asset_fingerprint(code, {"texts": parent})
    assert base != asset_fingerprint(code, {"docs": parent}, {"size": 2})
    assert asset_fingerprint(None, {}) != asset_fingerprint(None, {})  # unhashable: random


def _statuses(server: Webserver) -> dict[str, tuple[str, list[str]]]:
    nodes = server.query(STALE)["assetNodes"]
    return {
        "/".join(node["assetKey"]["path"]): (
            node["staleStatus"],
            sorted(cause["reason"] for cause in node["staleCauses"]),
        )
        for node in nodes
    }


@pytest.mark.slow
def test_editing_a_helper_reruns_its_asset_and_downstream_only(
    tmp_path: Path,
    dagster_home: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
    run_python: RunPython,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    env = {
        "DAGSTER_HOME": str(dagster_home),
        DATA_ENV: str(corpus),
        STORAGE_ENV: str(tmp_path / "storage"),
        CALLS_ENV: str(tmp_path / "calls.log"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def materialize_in_a_new_process() -> None:
        assert (
            run_python("import pipeline; pipeline.run()", cwd=project, path=[project]) == "success"
        )

    materialize_in_a_new_process()
    assert sorted(body_calls()) == ["cleaned", "counted", "lengths", "shouted"]

    helpers = project / "helpers.py"
    helpers.write_text(helpers.read_text().replace("text.upper()", 'text.upper() + "!"'))

    with Webserver(project, dagster_home) as server:
        before = _statuses(server)
        assert before.pop("shouted") == ("STALE", ["has a new code version"])
        # Dagster's staleness is per edge: `counted` turns stale only once `shouted` has a
        # new data version; the run below re-runs it because its parent's fingerprint changed.
        assert before == dict.fromkeys(["cleaned", "counted", "docs", "lengths"], ("FRESH", []))

        materialize_in_a_new_process()
        assert sorted(body_calls()[4:]) == ["counted", "shouted"]

        after = _statuses(server)
        assert after == dict.fromkeys(
            ["cleaned", "counted", "docs", "lengths", "shouted"], ("FRESH", [])
        )
    shouted = instance.get_latest_materialization_event(dg.AssetKey("shouted"))
    assert shouted is not None
    assert shouted.asset_materialization is not None
    assert shouted.asset_materialization.metadata["dagster_ds/cache"].value == "miss"
