"""Column lineage of IterableDataset transforms, as its lineage steps record it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dagster_ds import Dataset, IterableDataset
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
    assert _sources(mapped) == _sources(batched)  # its examples are lazy rows: reads are seen
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


EVERY = ("flag", "label", "text")
TABLE = {"text": ["a", "bb", "ccc"], "label": [0, 1, 2], "flag": [1, 0, 1]}


def _n_chars(example: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(example["text"])}


def _names_only(example: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(example) + ("label" in example) + len(list(example.keys()))}


@pytest.mark.parametrize(
    ("use", "reads"),
    [
        pytest.param(lambda x: x["text"], ("text",), id="getitem"),
        pytest.param(lambda x: x.get("label"), ("label",), id="get"),
        pytest.param(lambda x: x["text"] if x["flag"] else 0, ("flag", "text"), id="depends"),
        pytest.param(lambda x: ("text" in x, list(x.keys()), len(x)), (), id="names"),
        pytest.param(lambda x: list(x.items()), EVERY, id="items"),
        pytest.param(lambda x: list(x.values()), EVERY, id="values"),
        pytest.param(dict, EVERY, id="dict"),
        pytest.param(lambda x: {**x}, EVERY, id="unpack"),
        pytest.param(lambda x: x == {}, EVERY, id="equals"),
        pytest.param(repr, EVERY, id="repr"),
    ],
)
@pytest.mark.parametrize("how", ["batches", "examples", "chained"])
def test_a_per_example_stream_map_and_filter_record_the_values_their_examples_read(
    use: Callable[[dict[str, Any]], Any], reads: tuple[str, ...], how: str
) -> None:
    source = IterableDataset.from_dict(TABLE)
    if how == "chained":  # a per-example parent hands its Python rows on
        source = source.filter(lambda x: True)
    mapped = source.map(lambda x: {"n": str(use(x))})
    kept = source.filter(lambda x: use(x) is not None)
    for stream in (mapped, kept):
        if how == "batches":
            assert list(stream.iter(batch_size=2))  # a complete pass, Arrow batches
        else:
            assert list(stream)  # a complete pass, example by example (rows handed on)
    columns = ("text", "label", "flag")
    origin = {c: tuple(sorted({c, *reads})) for c in columns}
    assert _sources(mapped) == origin | {"n": reads}
    # a filter adds its reads to every column's sources
    assert _sources(kept) == {c: tuple(sorted({c, *reads})) for c in columns}


def test_input_columns_are_exactly_a_per_example_stream_map_s_reads() -> None:
    source = IterableDataset.from_dict(TABLE)
    mapped = source.map(lambda label, text: {"n": label}, input_columns=["label", "text"])
    chained = source.filter(lambda x: True).map(lambda flag: {"n": 1}, input_columns=["flag"])
    assert list(mapped)
    assert list(chained)
    assert (_sources(mapped) or {})["n"] == ("label", "text")
    assert (_sources(chained) or {})["n"] == ("flag",)


def _relabel(example: dict[str, Any]) -> dict[str, Any]:
    example["label"] = example["label"] * 10  # the example changed in place, returned
    return example


def _with_inputs(example: dict[str, Any]) -> dict[str, Any]:
    return {**example, "n": len(example["text"])}


@pytest.mark.parametrize("function", [_n_chars, _names_only, _relabel, _with_inputs])
def test_per_example_stream_rows_are_those_of_the_dataset_map(
    function: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    expected = Dataset.from_dict(TABLE).map(function).filter(lambda x: x["flag"] > 0)
    stream = IterableDataset.from_dict(TABLE).map(function).filter(lambda x: x["flag"] > 0)
    chained = IterableDataset.from_dict(TABLE).filter(lambda x: True).map(function)
    chained = chained.filter(lambda x: x["flag"] > 0)
    assert list(stream) == list(chained) == expected.to_list()
    assert list(stream.iter(batch_size=2)) == list(expected.iter(batch_size=2))


def _examples(rows: int) -> Iterator[dict[str, Any]]:
    for index in range(rows):
        yield {"text": "x" * 50, "label": index, "flag": index % 2}


def _peak(rows: int) -> int:
    stream = IterableDataset.from_generator(_examples, gen_kwargs={"rows": rows})
    stream = stream.map(_n_chars).filter(lambda x: x["flag"] > 0).map(_n_chars)
    tracemalloc.start()
    try:
        for _ in stream:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_recording_a_stream_s_reads_holds_no_more_than_a_batch() -> None:
    small, large = _peak(2_000), _peak(20_000)
    assert large < small * 1.5  # ten times the rows: the same batches held at a time
