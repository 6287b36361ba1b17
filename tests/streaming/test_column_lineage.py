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


def _sources(stream: IterableDataset) -> dict[str, tuple[str, ...]] | None:
    columns = stream.lineage[-1].columns
    return dict(columns) if columns is not None else None


def test_a_complete_pass_records_the_columns_a_stream_map_and_filter_read() -> None:
    source = IterableDataset.from_dict({"text": ["a", "bb"], "label": [0, 1], "flag": [1, 0]})
    mapped = source.map(lambda x: {"n": len(x["text"])})
    kept = source.filter(lambda x: x["flag"] > 0)
    batched = source.map(lambda b: {"n": [len(t) for t in b["text"]]}, batched=True)
    assert _sources(mapped) is None  # its output columns are not known before a pass
    assert _sources(kept) == {c: ("flag", "label", "text") for c in ("text", "label", "flag")}
    for stream in (mapped, kept, batched):
        assert list(stream.iter(batch_size=10))  # a complete pass
    assert _sources(mapped) == {c: ("flag", "label", "text") for c in ("text", "label", "flag")} | {
        "n": ("flag", "label", "text")
    }  # a per-example map's rows are plain dicts: its reads are not seen
    assert _sources(batched) == {
        "text": ("text",),
        "label": ("label", "text"),  # what the function returned is not recorded: maybe rewritten
        "flag": ("flag", "text"),
        "n": ("text",),
    }
    assert _sources(kept) == {
        "text": ("flag", "text"),
        "label": ("flag", "label"),
        "flag": ("flag",),
    }


def test_a_pass_cut_short_records_no_reads() -> None:
    source = IterableDataset.from_dict({"text": ["a", "bb"], "flag": [1, 0]})
    kept = source.filter(lambda x: x["flag"] > 0)
    assert list(kept.take(1))
    assert _sources(kept) == {"text": ("flag", "text"), "flag": ("flag", "text")}
