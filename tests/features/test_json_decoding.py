"""`Json` values come back as Python objects on read, as the anchor's ``Json.decode_example``.

Every read path is compared with `datasets` 5.2: rows, slices, columns, iteration, the
pandas format, map inputs and outputs, and streaming; ``Json(decode=False)`` keeps text.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from dagster_ds import Dataset, Features, IterableDataset, Json, List, Value, load_dataset

VALUES: dict[str, list[Any]] = {
    "j": [{"a": 1, "b": [True, None]}, [1, "x"], None, 3, "text"],
    "l": [[{"k": 1}, [2]], [], None, [None], ["s"]],
    "n": [1, 2, 3, 4, 5],
}


def build(module: Any, decode: bool = True) -> Any:
    features = module.Features(
        {
            "j": module.Json(decode=decode),
            "l": module.List(module.Json()),
            "n": module.Value("int64"),
        }
    )
    return module.Dataset.from_dict(VALUES, features=features)


def reads(ds: Any) -> list[Any]:
    return [
        ds[0],
        ds[1:3],
        ds["j"][:],
        ds["l"][:],
        list(ds),
        list(ds.iter(batch_size=2)),
        ds.with_format("pandas")[:2]["j"].tolist(),
        list(ds.to_iterable_dataset()),
        list(ds.to_iterable_dataset().iter(batch_size=3)),
    ]


def test_every_read_decodes_as_the_anchor(anchor: ModuleType) -> None:
    import dagster_ds

    ours, theirs = reads(build(dagster_ds)), reads(build(anchor))
    assert ours == theirs
    assert ours[0] == {"j": VALUES["j"][0], "l": VALUES["l"][0], "n": 1}


def test_decode_false_keeps_the_json_text_as_the_anchor(anchor: ModuleType) -> None:
    import dagster_ds

    ours, theirs = build(dagster_ds, decode=False), build(anchor, decode=False)
    assert (
        ours["j"][:]
        == theirs["j"][:]
        == ['{"a":1,"b":[true,null]}', '[1,"x"]', None, "3", '"text"']
    )
    assert ours.features.to_dict() == theirs.features.to_dict()


def test_map_gets_objects_and_keeps_the_json_feature(anchor: ModuleType) -> None:
    import dagster_ds

    def tag(example: dict[str, Any]) -> dict[str, Any]:
        for item in example["l"] or []:
            if isinstance(item, dict):
                item["seen"] = True
        return example

    ours, theirs = build(dagster_ds).map(tag), build(anchor).map(tag)
    assert ours.features.to_dict() == theirs.features.to_dict()
    assert ours[:] == theirs[:]
    assert ours[0]["l"] == [{"k": 1, "seen": True}, [2]]
    batched = build(dagster_ds).map(lambda b: {"j": b["j"][::-1]}, batched=True, batch_size=5)
    assert batched.features["j"] == Json()
    assert batched["j"][:] == VALUES["j"][::-1]


def test_streaming_decodes_sources_and_map_outputs(anchor: ModuleType) -> None:
    features = Features({"j": Json(), "l": List(Json()), "n": Value("int64")})
    stream = IterableDataset.from_dict(VALUES, features=features)
    theirs = anchor.IterableDataset.from_dict(
        VALUES,
        features=anchor.Features(
            {"j": anchor.Json(), "l": anchor.List(anchor.Json()), "n": anchor.Value("int64")}
        ),
    )
    assert list(stream) == list(theirs)
    mapped = stream.map(lambda row: {"j": row["j"], "n": row["n"] * 2})
    assert [row["j"] for row in mapped] == VALUES["j"]
    assert [row["n"] for row in mapped] == [2, 4, 6, 8, 10]
    assert next(iter(stream.with_format("pandas").iter(5)))["j"].tolist() == VALUES["j"]


def test_json_lines_loaded_with_json_features_decode(tmp_path: Any) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"j": {"a": 1}}\n{"j": {"a": 2}}\n', encoding="utf-8")
    ds = load_dataset("json", data_files=str(path), split="train", features=Features({"j": Json()}))
    assert ds["j"][:] == [{"a": 1}, {"a": 2}]
    stream = load_dataset(
        "json",
        data_files=str(path),
        split="train",
        streaming=True,
        features=Features({"j": Json()}),
    )
    assert [row["j"] for row in stream] == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("kind", ["python", "numpy"])
def test_other_columns_are_untouched(kind: str) -> None:
    ds = Dataset.from_dict({"n": [1, 2], "s": ["a", "b"]}).with_format(
        None if kind == "python" else kind
    )
    assert list(ds[:]["s"]) == ["a", "b"]


def test_arrow_json_columns_decode_without_features_metadata() -> None:
    from dagster_ds.formatting import Formatter

    texts = pa.array(['{"a":1}', "[2]"], pa.string())
    table = pa.table({"j": pa.ExtensionArray.from_storage(pa.json_(), texts), "n": [1, 2]})
    described = table.replace_schema_metadata(
        {b"huggingface": b'{"info": {"features": {"n": {"dtype": "int64", "_type": "Value"}}}}'}
    )
    for data in (table, described, described.to_batches()[0]):
        assert Formatter.create(None).rows(data) == [{"j": {"a": 1}, "n": 1}, {"j": [2], "n": 2}]
    assert Formatter.create("arrow").batch(table).column("j").type == pa.json_()
