"""The web pages a Hub link opens (repo, commit, tree, file), checked in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

from dagster_ds.hub.server import LocalHubServer

pytestmark = pytest.mark.browser

CARD = """---
license: mit
---
# Demo dataset

Rows of **text**. <script>alert('x')</script>

| split | rows |
|-------|------|
| train | 3    |
"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("headless Chromium is not installed: apt-get install -y chromium")


def _dom(url: str, profile: Path) -> str:
    done = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_repo_commit_tree_and_file_pages_render(
    local_hub: LocalHubServer, hub_api: HfApi, tmp_path: Path
):
    repo = "user/web"
    hub_api.create_repo(repo, repo_type="dataset")
    hub_api.create_commit(
        repo,
        [
            CommitOperationAdd("README.md", CARD.encode()),
            CommitOperationAdd("data/train.parquet", b"PAR1 not really"),
            CommitOperationAdd("notes/a <b>.txt", b"hello <world>"),
        ],
        commit_message="first",
        repo_type="dataset",
    )
    second = hub_api.create_commit(
        repo,
        [
            CommitOperationAdd("data/test.parquet", b"PAR1 x"),
            CommitOperationDelete("notes/a <b>.txt"),
        ],
        commit_message="second <i>push</i>",
        repo_type="dataset",
    )
    base = f"{local_hub.endpoint}/datasets/{repo}"
    profile = tmp_path / "chromium"
    page = _dom(base, profile)
    assert "<h1>Demo dataset</h1>" in page
    assert "<strong>text</strong>" in page
    assert "<script>alert" not in page  # raw HTML in a card is shown, not run
    assert "<td>train</td>" in page
    assert "data/" in page
    commit = _dom(f"{base}/commit/{second.oid}", profile)
    assert "second &lt;i&gt;push&lt;/i&gt;" in commit
    assert "data/test.parquet" in commit
    assert "deleted" in commit
    assert "notes/a &lt;b&gt;.txt" in commit
    assert "2 changed files" in commit
    tree = _dom(f"{base}/tree/main/data", profile)
    assert "test.parquet" in tree
    assert "train.parquet" in tree
    blob = _dom(f"{base}/blob/main/README.md", profile)
    assert "# Demo dataset" in blob
    missing = _dom(f"{base}/commit/{'0' * 40}", profile)
    assert "404" in missing
