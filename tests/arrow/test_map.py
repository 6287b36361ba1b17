"""Dataset.map: semantics of the anchor, speed paths, and clear errors."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dagster_ds import ColumnNotFoundError, Dataset, TransformOutputError
from dagster_ds.features import Features, Value


@pytest.fixture
def ds() -> Dataset:
    return Dataset.from_dict({"a": list(range(10)), "text": [f"t{i}" for i in range(10)]})


def test_per_example_map_adds_and_overwrites_columns(ds: Dataset) -> None:
    out = ds.map(lambda x: {"a": x["a"] * 10, "upper": x["text"].upper()})
    assert out.column_names == ["a", "text", "upper"]
    assert out[2] == {"a": 20, "text": "t2", "upper": "T2"}


def test_remove_columns_are_dropped_before_the_output_is_merged(ds: Dataset) -> None:
    out = ds.map(lambda x: {"text": x["text"] + "!"}, remove_columns=["text", "a"])
    assert out.column_names == ["text"]
    assert out[0] == {"text": "t0!"}


def test_batched_map_can_change_the_number_of_rows(ds: Dataset) -> None:
    def duplicate(batch: dict[str, list]) -> dict[str, list]:
        return {"a": batch["a"] * 2}

    out = ds.map(duplicate, batched=True, batch_size=4, remove_columns=ds.column_names)
    assert out.num_rows == 20
    assert out["a"][:6] == [0, 1, 2, 3, 0, 1]


def test_with_indices_input_columns_and_fn_kwargs(ds: Dataset) -> None:
    out = ds.map(
        lambda a, i, k: {"b": a + i * k}, with_indices=True, input_columns="a", fn_kwargs={"k": 100}
    )
    assert out["b"][:3] == [0, 101, 202]
    batched = ds.map(
        lambda a, idx: {"b": [v + i for v, i in zip(a, idx, strict=True)]},
        with_indices=True,
        input_columns=["a"],
        batched=True,
        batch_size=3,
    )
    assert batched["b"][:4] == [0, 2, 4, 6]


def test_drop_last_batch(ds: Dataset) -> None:
    out = ds.map(lambda b: b, batched=True, batch_size=4, drop_last_batch=True)
    assert out.num_rows == 8


def test_arrow_vectorised_map(ds: Dataset) -> None:
    def plus_one(table: pa.Table) -> pa.Table:
        return table.set_column(0, "a", pc.add(table.column("a"), 1))

    out = ds.with_format("arrow").map(plus_one, batched=True)
    assert out.with_format(None)["a"][:3] == [1, 2, 3]


def test_features_argument_sets_the_output_types(ds: Dataset) -> None:
    features = Features({"a": Value("int32"), "text": Value("string"), "n": Value("float32")})
    out = ds.map(lambda x: {"n": x["a"] / 2}, features=features)
    assert out.features == features
    assert out.data.schema.field("n").type == pa.float32()


def test_none_output_keeps_the_examples(ds: Dataset) -> None:
    out = ds.map(lambda x: None)
    assert out.to_list() == ds.to_list()


def test_map_after_select_sees_the_selected_rows(ds: Dataset) -> None:
    out = ds.select([9, 3]).map(lambda x: {"b": x["a"] + 1})
    assert out["b"][:] == [10, 4]


def test_num_proc_gives_the_same_rows_and_fingerprint(ds: Dataset) -> None:
    single = ds.map(lambda x: {"b": x["a"] * 3}, load_from_cache_file=False)
    parallel = ds.map(lambda x: {"b": x["a"] * 3}, num_proc=2, load_from_cache_file=False)
    assert parallel.fingerprint == single.fingerprint
    assert parallel.to_list() == single.to_list()


def test_execution_arguments_do_not_change_the_fingerprint(ds: Dataset) -> None:
    base = ds.map(lambda x: {"b": x["a"]})
    kwargs: dict[str, Any]
    for kwargs in (
        {"num_proc": 2},
        {"desc": "hello"},
        {"writer_batch_size": 3},
        {"keep_in_memory": True},
    ):
        assert ds.map(lambda x: {"b": x["a"]}, **kwargs).fingerprint == base.fingerprint


def test_missing_columns_are_named(ds: Dataset) -> None:
    with pytest.raises(ColumnNotFoundError, match=r"remove_columns.*\['nope'\]"):
        ds.map(lambda x: x, remove_columns=["nope"])
    with pytest.raises(ColumnNotFoundError, match=r"input_columns.*\['nope'\]"):
        ds.map(lambda x: x, input_columns=["nope"])


def test_non_dict_output_names_the_row(ds: Dataset) -> None:
    with pytest.raises(TransformOutputError, match=r"returned int \(5\) for example 0"):
        ds.map(lambda x: 5)


def test_unequal_batch_columns_are_reported(ds: Dataset) -> None:
    with pytest.raises(TransformOutputError, match=r"unequal lengths \{'x': 2, 'y': 1\}"):
        ds.map(
            lambda b: {"x": [1, 2], "y": [1]},
            batched=True,
            batch_size=2,
            remove_columns=ds.column_names,
        )


def test_changed_row_count_with_kept_columns_says_how_to_fix(ds: Dataset) -> None:
    with pytest.raises(TransformOutputError, match=r"input columns \['a', 'text'\] cannot be kept"):
        ds.map(lambda b: {"x": [1]}, batched=True, batch_size=2)


def test_values_that_do_not_fit_one_type_name_the_column(ds: Dataset) -> None:
    with pytest.raises(TransformOutputError, match="column 'x'"):
        ds.map(lambda x: {"x": 1 if x["a"] % 2 else "one"})


def test_failures_leave_nothing_in_the_cache(ds: Dataset) -> None:
    with pytest.raises(TransformOutputError):
        ds.map(lambda x: 5)
    assert ds.map(lambda x: {"ok": 1})["ok"][:2] == [1, 1]


def test_outputs_written_in_groups_keep_every_batch_as_mapped() -> None:
    # 25 batches of 1,000 rows: all-None outputs first (null type), then ints; the input
    # column comes back as itself in some batches and rebuilt in others.
    rows = 25_000
    source = Dataset.from_dict({"a": list(range(rows))})

    def step(batch: dict[str, Any], indices: list[int]) -> dict[str, Any]:
        first = indices[0] // 1000
        late = [None] * len(indices) if first < 3 else [i * 2 for i in indices]
        return {"late": late, "a": batch["a"] if first % 2 else [v + 1 for v in batch["a"]]}

    out = source.map(step, batched=True, with_indices=True)
    expected_a = [i if (i // 1000) % 2 else i + 1 for i in range(rows)]
    assert out["a"] == expected_a
    assert out["late"] == [None if i < 3000 else i * 2 for i in range(rows)]
    assert out.features["late"] == Value("int64")
