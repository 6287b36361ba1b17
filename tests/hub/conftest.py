"""Helpers for Hub tests: the real `datasets.load_dataset` as an oracle, in a subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dagster_ds.testing import LocalHubServer
from tests import _fast

Oracle = Callable[..., dict[str, Any]]

_LOAD = """
import json, sys
import datasets

# No datasets-server here: do not ask one for a Parquet export.
datasets.config.USE_PARQUET_EXPORT = False
out = {}
for request in json.loads(sys.argv[1]):
    repo_id, name = request["repo_id"], request.get("name")
    splits = datasets.load_dataset(repo_id, name, revision=request.get("revision"))
    out[f"{repo_id}:{name}"] = {
        split: {"rows": ds.to_list(), "features": ds.features.to_dict()}
        for split, ds in splits.items()
    }
print(json.dumps(out))
"""


@pytest.fixture
def oracle(local_hub: LocalHubServer, tmp_path: Path) -> Oracle:
    """``oracle(("user/repo", config), ...)``: what `datasets.load_dataset` reads, per split.

    Returns ``{"user/repo:config": {split: {"rows": [...], "features": {...}}}}``.
    """

    def load(*requests: tuple[str, str | None], revision: str | None = None) -> dict[str, Any]:
        payload = [{"repo_id": r, "name": n, "revision": revision} for r, n in requests]
        env = {
            **os.environ,
            **local_hub.client_env,
            "HF_HOME": str(tmp_path / "anchor-home"),
            "HF_DATASETS_CACHE": str(tmp_path / "anchor-cache"),
        }
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_TOKEN"):
            env.pop(name, None)
        done = _fast.run(
            [sys.executable, "-c", _LOAD, json.dumps(payload)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    return load
