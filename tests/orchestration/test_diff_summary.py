"""Every materialization of a dataset asset records what changed since the previous version."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.definitions.test_webui import CHROMIUM_FLAGS, chromium  # noqa: F401 (a fixture)
from tests.orchestration.conftest import latest, metadata_value, write_jsonl
from tests.webserver import Webserver

NUMERIC = {
    "dagster_ds/rows_added": dg.IntMetadataValue,
    "dagster_ds/rows_removed": dg.IntMetadataValue,
    "dagster_ds/columns_changed": dg.IntMetadataValue,
    "dagster_ds/shards_reused": dg.IntMetadataValue,
    "dagster_ds/shards_new": dg.IntMetadataValue,
    "dagster_ds/seconds_saved": dg.FloatMetadataValue,
}


def _shard(folder: Path, index: int, rows: list[dict[str, Any]]) -> None:
    write_jsonl(folder / f"part-{index:02d}.jsonl", rows)


def _summary(instance: dg.DagsterInstance, key: str) -> dict[str, Any]:
    materialization = latest(instance, key)
    for name, kind in NUMERIC.items():  # numbers, so that Dagster plots them
        assert isinstance(materialization.metadata[name], kind), name
    return {
        name.removeprefix("dagster_ds/"): metadata_value(materialization, name) for name in NUMERIC
    }


def test_each_refresh_records_rows_added_removed_columns_changed_and_reuse(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "data"
    for index in range(4):
        _shard(data, index, [{"n": 10 * index + j, "word": "w"} for j in range(5)])
    numbers = dataset_source(
        "numbers", "json", data_files=str(data / "*.jsonl"), reader_options={"shard_bytes": None}
    )

    @dataset_asset
    def doubled(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"double": row["n"] * 2})

    def refresh() -> dict[str, Any]:
        result = dg.materialize(
            [numbers, doubled],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store"))},
            selection=[doubled],
        )
        assert result.success
        return _summary(instance, "doubled")

    first = refresh()
    assert first["rows_added"] == 20
    assert (first["rows_removed"], first["columns_changed"]) == (0, 0)
    assert (first["shards_reused"], first["shards_new"]) == (0, 4)
    assert first["seconds_saved"] == 0.0

    # One row of one file changes: one shard is computed, three are reused.
    _shard(data, 2, [{"n": 20 + j, "word": "changed" if j == 1 else "w"} for j in range(5)])
    edited = refresh()
    assert (edited["rows_added"], edited["rows_removed"], edited["columns_changed"]) == (1, 1, 1)
    assert (edited["shards_reused"], edited["shards_new"]) == (3, 1)
    assert edited["seconds_saved"] > 0
    assert "word (1)" in str(metadata_value(latest(instance, "doubled"), "dagster_ds/diff"))

    # A file appended: its rows are added, nothing removed or changed.
    _shard(data, 4, [{"n": 40 + j, "word": "w"} for j in range(3)])
    appended = refresh()
    assert (appended["rows_added"], appended["rows_removed"]) == (3, 0)
    assert appended["columns_changed"] == 0
    assert (appended["shards_reused"], appended["shards_new"]) == (4, 1)

    # Nothing changed: the step skips, and says that nothing changed in numbers too.
    skipped = refresh()
    assert (skipped["rows_added"], skipped["rows_removed"], skipped["columns_changed"]) == (0, 0, 0)
    assert (skipped["shards_reused"], skipped["shards_new"]) == (5, 0)
    assert skipped["seconds_saved"] >= appended["seconds_saved"] > 0


def test_a_schema_change_counts_the_columns_added_and_removed(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    data = write_jsonl(tmp_path / "n.jsonl", [{"n": 1}, {"n": 2}])
    numbers = dataset_source("numbers", "json", data_files=str(data))
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store"))}

    @dataset_asset(name="shaped")
    def before(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"half": row["n"] / 2})

    @dataset_asset(name="shaped")
    def after(numbers: Dataset) -> Dataset:
        return numbers.map(lambda row: {"label": str(row["n"])}, remove_columns=[])

    for definition in (before, after):
        result = dg.materialize(
            [numbers, definition], instance=instance, resources=resources, selection=[definition]
        )
        assert result.success
    summary = _summary(instance, "shaped")
    assert (summary["rows_added"], summary["rows_removed"]) == (0, 0)
    assert summary["columns_changed"] == 2  # half removed, label added
    text = str(metadata_value(latest(instance, "shaped"), "dagster_ds/diff"))
    assert "+label" in text
    assert "-half" in text


_DEFINITIONS = """
import os

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

numbers = dataset_source(
    "numbers",
    "json",
    data_files=os.environ["DIFF_DATA"] + "/*.jsonl",
    reader_options={"shard_bytes": None},
)


@dataset_asset
def doubled(numbers: Dataset) -> Dataset:
    return numbers.map(lambda row: {"double": row["n"] * 2})


defs = dg.Definitions(
    assets=[numbers, doubled],
    resources={"io_manager": DatasetIOManager(base_dir=os.environ["DIFF_STORE"])},
)
"""


@pytest.mark.browser
@pytest.mark.slow
def test_the_asset_page_plots_the_diff_summary_over_time(
    chromium: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    dagster_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    (project / "diff_defs.py").write_text(_DEFINITIONS)
    (project / "workspace.yaml").write_text(
        "load_from:\n  - python_file:\n      relative_path: diff_defs.py\n"
        "      working_directory: .\n"
    )
    env = {"DIFF_DATA": str(data), "DIFF_STORE": str(tmp_path / "store")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    spec = importlib.util.spec_from_file_location("diff_defs", project / "diff_defs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    job = module.defs.resolve_implicit_global_asset_job_def()
    with dg.DagsterInstance.get() as instance:
        for files in range(1, 4):  # one more file each refresh: a point per refresh
            _shard(data, files, [{"n": 10 * files + j, "word": "w"} for j in range(files)])
            result = job.execute_in_process(
                instance=instance, asset_selection=[dg.AssetKey("doubled")]
            )
            assert result.success
    with Webserver(project, dagster_home, env=env) as server:
        server.query("mutation { setNuxSeen }")  # no "Join the Dagster community" modal
        page = _plots(chromium, tmp_path, f"{server.url}/assets/doubled")
    plots = json.loads(page)
    shown = plots["text"].split("Plots", 1)[1]  # the labels of the plots
    for label in NUMERIC:
        assert label in shown, label
    assert plots["charts"] >= len(NUMERIC)


# Selects the plots of the asset page's metadata panel (a toggle, not a URL); once they
# are drawn, gives the page's text and how many charts it draws.
_SHOW_PLOTS = """
(() => {
  const button = [...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Plots');
  if (!button) return null;
  if (button.getAttribute('aria-selected') !== 'true') { button.click(); return null; }
  const charts = document.querySelectorAll('canvas').length;
  return charts ? JSON.stringify({charts: charts, text: document.body.innerText}) : null;
})()
"""


def _plots(chromium_binary: str, tmp_path: Path, url: str) -> str:
    """The text of ``url`` once its metadata plots are drawn, driving Chromium over DevTools."""
    profile = tmp_path / "chromium-plots"
    process = subprocess.Popen(
        [
            chromium_binary,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            url,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its renderer processes are in its process group
    )
    try:
        return _evaluate_until(profile, _SHOW_PLOTS, attempts=1200)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _evaluate_until(profile: Path, script: str, attempts: int) -> str:
    """Evaluate ``script`` in the page every 0.1 s until it returns a string."""
    from websockets.sync.client import connect

    port_file = profile / "DevToolsActivePort"
    for _ in range(attempts):
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.1)
    port = port_file.read_text().split()[0]
    targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json").read())
    page = next(target for target in targets if target["type"] == "page")
    with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
        for attempt in range(attempts):
            socket.send(
                json.dumps(
                    {
                        "id": attempt,
                        "method": "Runtime.evaluate",
                        "params": {"expression": script, "returnByValue": True},
                    }
                )
            )
            while True:
                reply = json.loads(socket.recv())
                if reply.get("id") == attempt:
                    break
            value = reply.get("result", {}).get("result", {}).get("value")
            if isinstance(value, str):
                return value
            time.sleep(0.1)
    raise AssertionError(f"the page never showed its plots ({attempts} attempts)")
