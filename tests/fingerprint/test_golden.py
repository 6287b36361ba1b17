"""Golden hash literals: an accidental change of the hash format fails here.

If a change of these values is deliberate (a new hash format), every cache and
every recorded data version is invalidated: say so in the change log.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dagster_ds.fingerprint import Hasher, update_fingerprint
from tests.conftest import RunPython

# Function hashes include bytecode, so they are recorded per CPython minor version.
SEED_LAMBDA_HASH = {
    (3, 11): "06e54490c2821eeb150c3d096c26c916",
    (3, 12): "443c6071868f98d2eb9255c0eccd3075",
    (3, 13): "5960c8ccca9d8702a5b5dfa80cd0ea6e",
}
SEED_MAP_FINGERPRINT = {
    (3, 11): "7ff06d23f4e0fb3068e002b9ff8d91ad",
    (3, 12): "ec938eb78fd910b3302d4bc68f9903f3",
    (3, 13): "aa8fa7668741a1c1657b2ae207a5f765",
}
PYTHON = sys.version_info[:2]

VALUES = {
    "none": (None, "c0f5bd7bc3d3bed3f77c06a4d73d5316"),
    "int": (42, "da72ee04b92a7acc886d598188e75f77"),
    "str": ("dagster_ds", "9388fbcdd68da4ee894a1275afcaa5f5"),
    "bytes": (b"\x00\x01", "04886b7d6b3f19f6085280c926622111"),
    "float": (1.5, "d74af1748d250946136a3dd4cb1c9c73"),
    "list": ([1, "a", None], "984ae8adc0f62fa4cc652331fadf9b69"),
    "tuple": ((1, 2), "3f6b9cf21a93b539c8a953e76a29fe1c"),
    "dict": ({"b": 2, "a": [1]}, "bc3e3b1ebf3fec27c5dd3e382e8aa58b"),
    "set": ({3, 1, 2}, "9763bb99b093aa68f90d82eb5f7a3f13"),
    "table": (
        pa.table({"id": [1, 2, 3], "text": ["a", "bb", None]}),
        "b16447f984b05810bbe7b83dad972b6e",
    ),
    "ndarray": (np.arange(6, dtype=np.int32).reshape(2, 3), "46c631764fef0e221ccfa9dc4b5c5f0c"),
    "regex": (re.compile(r"\w+", re.IGNORECASE), "75099e026b210c8d92682036a21d83db"),
}

needs_recorded_python = pytest.mark.skipif(
    PYTHON not in SEED_LAMBDA_HASH,
    reason=f"function hashes include bytecode; none are recorded for CPython {PYTHON}",
)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value_hashes_are_pinned(name: str) -> None:
    value, expected = VALUES[name]
    assert Hasher.hash(value) == expected


@needs_recorded_python
def test_the_seed_lambda_hash_is_pinned() -> None:
    assert Hasher.hash(lambda example: {"length": len(example["text"])}) == SEED_LAMBDA_HASH[PYTHON]


@needs_recorded_python
def test_the_seed_lambda_hash_is_the_same_in_another_process_and_folder(
    run_python: RunPython, tmp_path: Path
) -> None:
    printed = run_python(
        """
        from dagster_ds.fingerprint import Hasher
        print(Hasher.hash(lambda example: {"length": len(example["text"])}))
        """,
        cwd=tmp_path,
        env={"PYTHONHASHSEED": "123"},
    )
    assert printed == SEED_LAMBDA_HASH[PYTHON]


@needs_recorded_python
def test_a_transform_fingerprint_is_pinned() -> None:
    fingerprint = update_fingerprint(
        "0" * 32,
        "map",
        {"function": lambda example: {"length": len(example["text"])}, "batched": False},
    )
    assert fingerprint == SEED_MAP_FINGERPRINT[PYTHON]
