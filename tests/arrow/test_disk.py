"""save_to_disk / load_from_disk: exact fingerprints, the anchor's layout, atomic saves."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest

from dagster_ds import Dataset, NotASavedDatasetError
from dagster_ds.features import ClassLabel, Features, Value
from tests import _fast
from tests.conftest import REPO_ROOT

FEATURES = Features({"label": ClassLabel(names=["no", "yes"]), "text": Value("string")})


def _dataset(rows: int = 20) -> Dataset:
    return Dataset.from_dict(
        {"label": [i % 2 for i in range(rows)], "text": [f"row {i}" for i in range(rows)]},
        features=FEATURES,
    )


def test_round_trip_keeps_rows_features_format_and_fingerprint(tmp_path: Path) -> None:
    ds = _dataset().filter(lambda x: x["label"] == 1).with_format("numpy")
    ds.save_to_disk(str(tmp_path / "saved"), num_shards=3)
    loaded = Dataset.load_from_disk(str(tmp_path / "saved"))
    assert loaded.fingerprint == ds.fingerprint
    assert loaded.features == FEATURES
    assert loaded.format == ds.format
    assert loaded.with_format(None).to_list() == ds.with_format(None).to_list()
    assert len(list((tmp_path / "saved").glob("data-*-of-00003.arrow"))) == 3
    assert [step.transform for step in loaded.lineage] == ["filter", "set_format"]


def test_the_anchor_reads_what_we_save_and_we_read_what_it_saves(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    ours = _dataset()
    ours.save_to_disk(str(tmp_path / "ours"))
    theirs = datasets.load_from_disk(str(tmp_path / "ours"))
    assert isinstance(theirs, datasets.Dataset)
    assert theirs.to_list() == ours.to_list()
    assert theirs.features["label"].names == ["no", "yes"]
    theirs.save_to_disk(str(tmp_path / "theirs"))
    assert Dataset.load_from_disk(str(tmp_path / "theirs")).to_list() == ours.to_list()


def test_saving_over_an_existing_dataset_replaces_it(tmp_path: Path) -> None:
    target = str(tmp_path / "saved")
    _dataset(5).save_to_disk(target)
    _dataset(7).save_to_disk(target)
    assert Dataset.load_from_disk(target).num_rows == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved"]


def test_an_interrupted_save_leaves_nothing_loadable(tmp_path: Path) -> None:
    target = tmp_path / "saved"
    script = (
        "import os\n"
        "import dagster_ds.arrow._disk as disk\n"
        "from dagster_ds import Dataset\n"
        "disk.publish_folder = lambda *args, **kwargs: os.kill(os.getpid(), 9)\n"
        f"Dataset.from_dict({{'a': list(range(1000))}}).save_to_disk({str(target)!r})\n"
    )
    completed = _fast.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        check=False,
    )
    assert completed.returncode == -9
    assert not target.exists()
    with pytest.raises(NotASavedDatasetError, match=r"state\.json is missing"):
        Dataset.load_from_disk(str(target))


_SAVER = """
from dagster_ds import Dataset
small, large = (Dataset.from_dict({{"a": list(range(n))}}) for n in (30_000, 40_000))
print(small.fingerprint, large.fingerprint, flush=True)
while True:
    small.save_to_disk({target!r}, num_shards=3)
    large.save_to_disk({target!r}, num_shards=5)
"""


def _saves_killed_after(target: Path, seconds: float) -> tuple[str, str]:
    """Run saves of two datasets over ``target`` in turn, kill -9 after ``seconds``."""
    process = _fast.Popen(
        [sys.executable, "-c", _SAVER.format(target=str(target))],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    small, large = process.stdout.readline().split()
    time.sleep(seconds)
    process.kill()
    process.wait(timeout=60)
    process.stdout.close()
    return small, large


def test_kill_9_at_random_moments_of_repeated_saves_leaves_one_whole_dataset(
    tmp_path: Path,
) -> None:
    target = tmp_path / "saved"
    chance = random.Random(7)
    for _ in range(3):
        small, large = _saves_killed_after(target, seconds=chance.uniform(0.2, 1.0))
        loaded = Dataset.load_from_disk(str(target))
        expected = {small: 30_000, large: 40_000}
        assert loaded.fingerprint in expected
        assert loaded["a"][:] == list(range(expected[loaded.fingerprint]))
        assert loaded.num_rows == expected[loaded.fingerprint]
    assert sorted(p.name for p in tmp_path.iterdir() if ".replaced-" in p.name) == []


def test_memory_urls_work(tmp_path: Path) -> None:
    ds = _dataset()
    ds.save_to_disk("memory://saved-datasets/one")
    assert Dataset.load_from_disk("memory://saved-datasets/one").fingerprint == ds.fingerprint


def test_saving_over_an_object_store_folder_leaves_no_stale_shards() -> None:
    import fsspec

    url = "memory://saved-datasets/replaced"
    _dataset(50).save_to_disk(url, num_shards=5)
    smaller = _dataset(7)
    smaller.save_to_disk(url, num_shards=2)
    loaded = Dataset.load_from_disk(url)
    assert (loaded.fingerprint, loaded.to_list()) == (smaller.fingerprint, smaller.to_list())
    names = sorted(p.rpartition("/")[2] for p in fsspec.filesystem("memory").find(url))
    assert names == [
        "data-00000-of-00002.arrow",
        "data-00001-of-00002.arrow",
        "dataset_info.json",
        "state.json",
    ]


def test_the_column_order_survives_a_save_whatever_the_names(tmp_path: Path) -> None:
    dataset = Dataset.from_dict({"zeta": [1], "alpha": ["a"], "mid": [[1.0]]})
    dataset.save_to_disk(str(tmp_path / "saved"))
    loaded = Dataset.load_from_disk(str(tmp_path / "saved"))
    assert loaded.column_names == ["zeta", "alpha", "mid"]
    assert loaded.features == dataset.features
