"""Fixtures for the features tests: `datasets` (the anchor) runs offline in a temp cache."""

from __future__ import annotations

import os
import tempfile

# Set before `datasets` is first imported: it reads its cache folder at import time.
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="dagster-ds-anchor-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
