"""Features hash deterministically with the fingerprint engine, across processes too."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

from dagster_ds.features import ClassLabel, Features, Json, LargeList, List, Sequence, Value
from dagster_ds.fingerprint import Hasher

SCRIPT = """
from dagster_ds.features import ClassLabel, Features, Json, LargeList, List, Sequence, Value
from dagster_ds.fingerprint import Hasher

features = Features(
    {
        "text": Value("string"),
        "label": ClassLabel(names=["neg", "pos"]),
        "answers": Sequence({"text": Value("string"), "start": Value("int32")}),
        "meta": {"b": Value("bool"), "a": LargeList(Value("timestamp[ms, tz=UTC]"))},
        "vec": List(Value("float32"), length=3),
        "blob": Json(),
    }
)
print(Hasher.hash(features))
print(Hasher.hash(features["meta"]))
print(Hasher.hash(ClassLabel(names=["neg", "pos"])))
"""


def _features() -> Features:
    return Features(
        {
            "text": Value("string"),
            "label": ClassLabel(names=["neg", "pos"]),
            "answers": Sequence({"text": Value("string"), "start": Value("int32")}),
            "meta": {"b": Value("bool"), "a": LargeList(Value("timestamp[ms, tz=UTC]"))},
            "vec": List(Value("float32"), length=3),
            "blob": Json(),
        }
    )


def _run(folder: Path, seed: str) -> list[str]:
    script = folder / "hash_features.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_hash_is_equal_across_processes_and_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    hashes = _run(first, "1")
    assert len(hashes) == 3
    assert _run(second, "2") == hashes
    assert hashes[0] == Hasher.hash(_features())
    assert hashes[2] == Hasher.hash(ClassLabel(num_classes=2, names=["neg", "pos"]))


def test_equal_features_hash_equal_however_built() -> None:
    features = _features()
    rebuilt = Features.from_dict(features.to_dict())
    assert Hasher.hash(rebuilt) == Hasher.hash(features)
    assert Hasher.hash(features.copy()) == Hasher.hash(features)
    assert Hasher.hash(Features.from_arrow_schema(features.arrow_schema)) == Hasher.hash(features)
    assert Hasher.hash(ClassLabel(num_classes=2)) == Hasher.hash(ClassLabel(names=["0", "1"]))


def test_different_features_hash_differently() -> None:
    base = Hasher.hash(Features({"a": Value("int8")}))
    assert Hasher.hash(Features({"a": Value("int16")})) != base
    assert Hasher.hash(Features({"b": Value("int8")})) != base
    assert Hasher.hash(Features({"a": List(Value("int8"))})) != base
    assert Hasher.hash(ClassLabel(names=["a", "b"])) != Hasher.hash(ClassLabel(names=["b", "a"]))


def test_hash_covers_column_and_field_order() -> None:
    # Equal as dicts (as in the anchor), but they cast to different Arrow schemas.
    one = Features({"a": Value("int8"), "s": {"x": Value("bool"), "y": Value("bool")}})
    two = Features({"s": {"y": Value("bool"), "x": Value("bool")}, "a": Value("int8")})
    assert one == two
    assert one.type != two.type
    assert Hasher.hash(one) != Hasher.hash(two)


def test_pickle_and_deepcopy_round_trip() -> None:
    features = _features()
    assert pickle.loads(pickle.dumps(features)) == features
    assert list(pickle.loads(pickle.dumps(features))) == list(features)
    assert copy.deepcopy(features) == features
    label = pickle.loads(pickle.dumps(ClassLabel(names=["x", "y"])))
    assert label.str2int("y") == 1
