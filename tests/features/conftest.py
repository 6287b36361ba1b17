"""Set-up for the features tests: `datasets` (the anchor) runs offline in a temp cache."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Set before `datasets` is first imported: it reads its cache folder at import time.
_ANCHOR_CACHE = tempfile.mkdtemp(prefix="dagster-ds-anchor-")
atexit.register(shutil.rmtree, _ANCHOR_CACHE, ignore_errors=True)
os.environ.setdefault("HF_DATASETS_CACHE", _ANCHOR_CACHE)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
