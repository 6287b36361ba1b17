"""Parquet files carry features both ways between `datasets` and dagster_ds."""

from __future__ import annotations

import json
from pathlib import Path

import datasets as hf
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_ds.errors import FeatureError, UnsupportedFeatureWarning
from dagster_ds.features import (
    ClassLabel,
    Features,
    List,
    Value,
    cast_table,
    features_from_schema_metadata,
    features_to_schema_metadata,
)

ROWS = {
    "text": ["good", "bad", "fine"],
    "label": [1, 0, 2],
    "tags": [["a"], [], ["b", "a"]],
    "answers": [
        {"text": ["x"], "start": [1]},
        {"text": [], "start": []},
        {"text": ["y"], "start": [4]},
    ],
}


def _anchor_features() -> hf.Features:
    return hf.Features(
        {
            "text": hf.Value("string"),
            "label": hf.ClassLabel(names=["neg", "pos", "mixed"]),
            "tags": hf.List(hf.ClassLabel(names=["a", "b"])),
            "answers": hf.Sequence({"text": hf.Value("string"), "start": hf.Value("int32")}),
        }
    )


EXPECTED = Features(
    {
        "text": Value("string"),
        "label": ClassLabel(names=["neg", "pos", "mixed"]),
        "tags": List(ClassLabel(names=["a", "b"])),
        "answers": {"text": List(Value("string")), "start": List(Value("int32"))},
    }
)


def test_parquet_written_by_the_anchor_reads_back_intact(tmp_path: Path) -> None:
    path = tmp_path / "anchor.parquet"
    rows = {**ROWS, "tags": [["a"], [], ["b", "a"]]}
    hf.Dataset.from_dict(rows, features=_anchor_features()).to_parquet(str(path))
    schema = pq.read_schema(path)
    assert Features.from_arrow_schema(schema) == EXPECTED
    assert features_from_schema_metadata(schema.metadata) == EXPECTED
    table = pq.read_table(path)
    assert cast_table(table, EXPECTED).column("tags").to_pylist() == [[0], [], [1, 0]]


def test_parquet_we_write_is_read_by_the_anchor(tmp_path: Path) -> None:
    path = tmp_path / "ours.parquet"
    rows = {**ROWS, "tags": [["a"], [], ["b", "a"]]}
    pq.write_table(cast_table(pa.table(rows), EXPECTED), path)
    dataset = hf.Dataset.from_parquet(str(path))
    assert isinstance(dataset, hf.Dataset)
    assert dataset.features == _anchor_features()
    assert dataset[2] == {
        "text": "fine",
        "label": 2,
        "tags": [1, 0],
        "answers": {"text": ["y"], "start": [4]},
    }


def test_schema_metadata_is_the_anchors_format() -> None:
    metadata = features_to_schema_metadata(EXPECTED)
    assert list(metadata) == ["huggingface"]
    assert json.loads(metadata["huggingface"]) == {
        "info": {"features": _anchor_features().to_dict()}
    }
    assert metadata == {
        k.decode(): v.decode() for k, v in _anchor_features().arrow_schema.metadata.items()
    }


def test_metadata_without_features_gives_none() -> None:
    assert features_from_schema_metadata(None) is None
    assert features_from_schema_metadata({b"pandas": b"{}"}) is None
    assert (
        features_from_schema_metadata({"huggingface": json.dumps({"info": {"features": None}})})
        is None
    )
    with pytest.raises(FeatureError, match="not JSON"):
        features_from_schema_metadata({b"huggingface": b"{oops"})


def test_anchor_only_types_fall_back_to_inference_with_a_warning() -> None:
    stored = {"img": {"_type": "Video"}, "label": {"names": ["a"], "_type": "ClassLabel"}}
    schema = pa.schema(
        [
            ("img", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("label", pa.int64()),
        ],
        metadata={"huggingface": json.dumps({"info": {"features": stored}})},
    )
    with pytest.warns(UnsupportedFeatureWarning, match="'img' is stored as \\['Video'\\]"):
        features = Features.from_arrow_schema(schema)
    assert features == Features(
        {
            "img": {"bytes": Value("binary"), "path": Value("string")},
            "label": ClassLabel(names=["a"]),
        }
    )
