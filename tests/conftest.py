import os
from pathlib import Path

import pytest

# huggingface_hub reads these at import time. Telemetry off: its user-agent code
# otherwise fetches a registry from its default endpoint (huggingface.co). Xet off:
# the local Hub speaks LFS only.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")

pytest_plugins = ["dagster_ds.testing.pytest_plugin"]


@pytest.fixture
def hub_api(local_hub):
    """An HfApi client of the `local_hub`, with a token (any token is accepted)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=local_hub.endpoint, token="test-token")


@pytest.fixture
def hf_cache(tmp_path: Path) -> Path:
    """A private huggingface_hub download cache for one test."""
    return tmp_path / "hf-cache"
