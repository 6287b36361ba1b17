"""The example code location loads and materializes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from definitions import defs, tokenized_fingerprint
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


def test_the_asset_records_its_fingerprint_as_data_version() -> None:
    with dg.instance_for_test() as instance:
        result = dg.materialize([tokenized_fingerprint], instance=instance)
        assert result.success
        event = instance.get_latest_materialization_event(tokenized_fingerprint.key)
        assert event is not None
        assert event.asset_materialization is not None
        materialization = event.asset_materialization
        fingerprint = materialization.metadata["dagster_ds/fingerprint"].value
        assert materialization.tags is not None
        assert materialization.tags["dagster/data_version"] == fingerprint
    assert defs.resolve_asset_graph().get_all_asset_keys() == {tokenized_fingerprint.key}
