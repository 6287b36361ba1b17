"""Column lineage of IterableDataset transforms, as its lineage steps record it."""

from __future__ import annotations

from dagster_ds import IterableDataset
from dagster_ds.features import Features, Value
from dagster_ds.fingerprint import column_origins


def _label_id(label: int) -> dict[str, int]:
    return {"label_id": label + 1}


def test_stream_column_operations_record_where_each_column_came_from() -> None:
    source = IterableDataset.from_dict({"text": ["a", "bb"], "label": [0, 1]})
    features = Features(
        {"text": Value("string"), "label": Value("int64"), "label_id": Value("int64")}
    )
    stream = (
        source.map(_label_id, input_columns=["label"], features=features)
        .filter(lambda label: label > 0, input_columns=["label"])
        .rename_column("label_id", "class")
        .select_columns(["class", "text"])
        .shuffle(seed=0)
        .take(1)
    )
    origins = {
        origin.column: set(origin.sources)
        for origin in column_origins(
            stream.lineage, ["class", "text"], fingerprint=stream.fingerprint
        )
    }
    root = source.fingerprint
    # Lazy: which columns the map returned is unknown, so a kept one may have been rewritten.
    assert origins == {"class": {(root, "label")}, "text": {(root, "text"), (root, "label")}}
    assert list(stream) == [{"class": 2, "text": "bb"}]


def test_a_map_whose_outputs_are_unknown_records_nothing() -> None:
    stream = IterableDataset.from_dict({"a": [1]}).map(lambda x: {"b": x["a"]})
    assert stream.lineage[-1].columns is None
