"""The example code location loads and validates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from definitions import defs
from tests.conftest import REPO_ROOT


def test_workspace_validates(tmp_path: Path) -> None:
    dagster = Path(sys.executable).with_name("dagster")
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pipeline_graph() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == {"python_docs", "paragraphs", "tokenized", "train", "test"}
    assert {check.to_user_string() for check in graph.asset_check_keys} == {
        "tokenized:schema",
        "train:row_count",
        "test:row_count",
    }
    assert defs.resolve_schedule_def("nightly_refresh").cron_schedule == "0 3 * * *"
    for key in ("paragraphs", "tokenized", "train", "test"):
        condition = graph.get(dg.AssetKey(key)).automation_condition
        assert condition is not None
        assert condition.get_label() == "fingerprint_changed"
