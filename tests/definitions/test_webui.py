"""The web UI over the materialized example: GraphQL, then one asset page in headless Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.definitions.conftest import Example
from tests.webserver import Webserver

ASSETS = """
query {
  assetNodes {
    assetKey { path }
    dataVersion
    staleStatus
    internalFreshnessPolicy {
      ... on TimeWindowFreshnessPolicy { failWindowSeconds warnWindowSeconds }
    }
    assetMaterializations(limit: 1) {
      metadataEntries { label ... on TextMetadataEntry { text } }
    }
  }
}
"""

PARTITIONS = """
query {
  assetNodeOrError(assetKey: {path: ["daily_paragraphs"]}) {
    ... on AssetNode { partitionKeys dataVersionByPartition }
  }
}
"""

AUTOMATIONS = """
query {
  repositoriesOrError {
    ... on RepositoryConnection {
      nodes {
        schedules { name scheduleState { status } }
        sensors { name sensorState { status } }
      }
    }
  }
}
"""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium binary; missing, the test fails under CI=true and skips elsewhere."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    reason = (
        "headless Chromium is not installed (`make test` installs it when run as root with "
        "apt-get; otherwise: sudo apt-get install -y chromium)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise AssertionError(f"{reason}; CI=true makes the web UI test mandatory")
    pytest.skip(reason)


@pytest.mark.browser
@pytest.mark.slow
def test_the_ui_shows_fingerprints_data_versions_freshness_and_why_it_ran(
    chromium: str, example: Example, tmp_path: Path
) -> None:
    _backfill_the_daily_partitions(example)
    env = {"DAGSTER_DS_CACHE": str(example.cache)}
    with Webserver(REPO_ROOT, example.home, env=env) as server:
        nodes = {
            "/".join(node["assetKey"]["path"]): node for node in server.query(ASSETS)["assetNodes"]
        }
        assert set(nodes) == {
            "python_docs",
            "paragraphs",
            "tokenized",
            "train",
            "test",
            "python_docs_hub",
            *DAILY,
        }
        for key in ("train", "test", "python_docs_hub"):  # the published splits
            assert nodes[key]["internalFreshnessPolicy"] == {
                "failWindowSeconds": 26 * 3600,
                "warnWindowSeconds": 24 * 3600,
            }
        assert nodes["tokenized"]["internalFreshnessPolicy"] is None
        for key, node in nodes.items():
            if key in DAILY:  # partitioned: below
                continue
            assert node["staleStatus"] == "FRESH", key
            if key == "python_docs":  # the source: observed, never materialized
                assert node["assetMaterializations"] == []
                continue
            if key == "python_docs_hub":  # a Hub commit, not a stored dataset
                continue
            (materialization,) = node["assetMaterializations"]
            texts = {
                entry["label"]: entry.get("text") for entry in materialization["metadataEntries"]
            }
            assert texts["dagster_ds/data_version"] == node["dataVersion"], key
            assert texts["dagster_ds/recipe"] != node["dataVersion"], key  # the recipe
            assert texts["dagster_ds/cache"] == "hit"
            assert texts["dagster_ds/changed"].startswith("nothing changed"), key
            assert "dagster/row_count" in texts
            assert "dagster/column_schema" in texts
            assert texts["dagster_ds/data_version"] == node["dataVersion"], key
            assert texts["dagster_ds/code_version"], key
        fingerprint = nodes["train"]["dataVersion"]

        automations = {
            item["name"]: (item.get("scheduleState") or item.get("sensorState"))["status"]
            for node in server.query(AUTOMATIONS)["repositoriesOrError"]["nodes"]
            for item in [*node["schedules"], *node["sensors"]]
        }
        server.query("mutation { setNuxSeen }")  # no "Join the Dagster community" modal
        page = subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={tmp_path / 'chromium'}",
                "--virtual-time-budget=20000",
                "--dump-dom",
                f"{server.url}/assets/train",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        # A partitioned asset: each partition has its own data version, and its page
        # lists the partitions and shows the selected one's.
        daily = server.query(PARTITIONS)["assetNodeOrError"]
        by_partition = dict(
            zip(daily["partitionKeys"], daily["dataVersionByPartition"], strict=True)
        )
        assert list(by_partition) == ["2024-01-01", "2024-01-02", "2024-01-03"]
        assert len(set(by_partition.values())) == 3
        partition_page = _dump_dom(
            chromium,
            tmp_path,
            f"{server.url}/assets/daily_paragraphs?view=partitions&partition=2024-01-02",
        )
    assert page.returncode == 0, page.stderr[-2000:]
    assert fingerprint in page.stdout
    assert "dagster_ds/recipe" in page.stdout
    # Why it ran (or, here, why it did not): the `changed` explanation on the asset page.
    assert "dagster_ds/changed" in page.stdout
    assert "nothing changed (recipe unchanged, already stored)" in page.stdout
    for label in ("dagster_ds/code_version", "dagster_ds/data_version", "Freshness"):
        assert label in page.stdout, label
    assert "Join the Dagster community" not in page.stdout
    # The schema table: the stored types as users read them, the feature as description.
    assert "list&lt;string&gt;" in page.stdout
    assert "List(Value('string'))" in page.stdout
    # The scheduled refresh and the automation start switched on.
    assert automations == {
        "daily_refresh": "RUNNING",
        "nightly_refresh": "RUNNING",
        "observe_python_docs": "RUNNING",
        "python_docs_automation": "RUNNING",
    }
    assert all(key in partition_page for key in by_partition)
    assert by_partition["2024-01-02"] in partition_page  # dagster_ds/data_version


DAILY = {"python_docs_daily", "daily_paragraphs"}


def _backfill_the_daily_partitions(example: Example) -> None:
    """Materialize every day of the example's daily-partitioned asset, one run per day."""
    from definitions import defs
    from definitions.daily import daily_paragraphs, days

    job = defs.resolve_implicit_global_asset_job_def()
    for day in days.get_partition_keys():
        result = job.execute_in_process(
            instance=example.instance, partition_key=day, asset_selection=[daily_paragraphs.key]
        )
        assert result.success


def _dump_dom(chromium: str, tmp_path: Path, url: str) -> str:
    """The DOM of ``url`` once headless Chromium rendered it."""
    page = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'chromium'}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert page.returncode == 0, page.stderr[-2000:]
    return page.stdout
