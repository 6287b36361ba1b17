"""Oracle: the real `datasets.load_dataset` reads a dataset pushed to the local Hub."""

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from tests import _fast

README = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
---
# Demo dataset
"""

LOAD = """
import json, sys
import datasets

# load_dataset also asks a "datasets-server." host of the endpoint for a Parquet
# export; there is none here, so do not wait on a DNS lookup for it.
datasets.config.USE_PARQUET_EXPORT = False
ds = datasets.load_dataset(sys.argv[1], split="train")
print(json.dumps({"rows": ds.to_list(), "features": list(ds.features)}))
"""


def test_load_dataset_reads_what_was_pushed(hub_api, local_hub, tmp_path):
    rows = [{"text": "a", "n": 1}, {"text": "bb", "n": 2}, {"text": "ccc", "n": 3}]
    folder = tmp_path / "dataset"
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "train-00000-of-00001.parquet")
    (folder / "README.md").write_text(README)
    hub_api.create_repo("user/oracle", repo_type="dataset")
    hub_api.upload_folder(folder_path=folder, repo_id="user/oracle", repo_type="dataset")

    env = {
        **os.environ,
        **local_hub.client_env,  # HF_ENDPOINT, HF_HUB_DISABLE_XET=1, HF_HUB_DISABLE_TELEMETRY=1
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache"),
    }
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_DATASETS_OFFLINE", None)
    result = _fast.run(
        [sys.executable, "-c", LOAD, "user/oracle"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"rows": rows, "features": ["text", "n"]}
