"""Dataset.map: semantics of the anchor, speed paths, and clear errors."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds import ColumnNotFoundError, Dataset, TransformOutputError
from dagster_ds.features import Features, Value
from tests.formatting._json_maps import read_json, skip_json


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


# -- the lazy batch of the default format -------------------------------------------

HOSTILE_SOURCE: dict[str, list[Any]] = {
    "a": [1, 2, 3],
    "b": ["x", "y", None],
    "c": [[1], [2, 3], []],
}


def _mutate_and_return(batch: Any) -> Any:
    batch["a"][0] = 100
    batch["c"][1].append(9)  # a change inside a value
    batch["b"].append("extra")
    batch["b"].pop()
    return batch


def _delete_then_return(batch: Any) -> Any:
    del batch["a"]
    batch["n"] = [0, 0, 0]
    return batch


def _delete_then_new_dict(batch: Any) -> Any:
    del batch["c"]
    return {"n": [1, 1, 1]}


def _pop_and_return(batch: Any) -> Any:
    batch.pop("b")
    return batch


def _clear_and_return(batch: Any) -> Any:
    batch.clear()
    batch["z"] = [1, 2, 3]
    return batch


def _new_dict_of_batch_lists(batch: Any) -> Any:
    return {"a2": batch["a"], "b": batch["b"]}


def _views(batch: Any) -> Any:
    return {
        "keys": [",".join(batch.keys())] * 3,
        "len": [len(batch)] * 3,
        "in": ["a" in batch and "zz" not in batch] * 3,
        "order": ["".join(batch)] * 3,
        "kinds": [",".join(type(v).__name__ for v in batch.values())] * 3,
        "items": [len(list(batch.items()))] * 3,
    }


def _as_dict(batch: Any) -> Any:
    copied = dict(batch)
    copied["n"] = [2, 2, 2]
    return copied


def _unpacked(batch: Any) -> Any:
    return {**batch, "n": [3, 3, 3]}


def _repr_of(batch: Any) -> Any:
    return {"r": [repr(batch)] * 3}


def _reads_nothing(batch: Any) -> Any:
    return {"n": [4, 4, 4]}


def _returns_untouched(batch: Any) -> Any:
    return batch


def _set_existing_and_return(batch: Any) -> Any:
    batch["a"] = [7, 8, 9]
    batch.update({"b": ["p", "q", "r"]})
    return batch


HOSTILE = [
    _mutate_and_return,
    _delete_then_return,
    _delete_then_new_dict,
    _pop_and_return,
    _clear_and_return,
    _new_dict_of_batch_lists,
    _views,
    _as_dict,
    _unpacked,
    _repr_of,
    _reads_nothing,
    _returns_untouched,
    _set_existing_and_return,
]


def _source() -> dict[str, list[Any]]:
    return {
        name: [list(v) if isinstance(v, list) else v for v in values]
        for name, values in HOSTILE_SOURCE.items()
    }


@pytest.mark.parametrize("remove_columns", [None, ["b"]])
@pytest.mark.parametrize("function", HOSTILE, ids=lambda function: function.__name__)
def test_batched_map_in_the_default_format_gives_the_anchors_rows(
    anchor: ModuleType, function: Any, remove_columns: list[str] | None
) -> None:
    out = Dataset.from_dict(_source()).map(function, batched=True, remove_columns=remove_columns)
    theirs = anchor.Dataset.from_dict(_source()).map(
        function, batched=True, remove_columns=remove_columns
    )
    assert out.to_dict() == theirs.to_dict()
    assert sorted(out.column_names) == sorted(theirs.column_names)


@pytest.mark.parametrize("function", HOSTILE, ids=lambda function: function.__name__)
def test_hostile_batch_functions_give_the_same_rows_in_two_processes(function: Any) -> None:
    source = Dataset.from_dict({name: values * 4 for name, values in _source().items()})

    def in_threes(batch: Any) -> Any:  # the functions make 3-row columns
        return function(batch)

    one = source.map(in_threes, batched=True, batch_size=3)
    two = source.map(in_threes, batched=True, batch_size=3, num_proc=2, load_from_cache_file=False)
    assert two.to_dict() == one.to_dict()
    assert two.column_names == one.column_names


def test_in_place_changes_are_dropped_when_a_new_dict_is_returned(anchor: ModuleType) -> None:
    # A deliberate difference (README): the anchor rebuilds every column the function
    # read, to keep such changes; we keep the input's column as it was.
    def mutate_then_new(batch: Any) -> Any:
        batch["a"][0] = 100
        return {"n": [1, 1, 1]}

    out = Dataset.from_dict(_source()).map(mutate_then_new, batched=True)
    assert out["a"] == [1, 2, 3]
    theirs = anchor.Dataset.from_dict(_source()).map(mutate_then_new, batched=True)
    assert theirs["a"] == [100, 2, 3]


def test_a_returned_batch_stores_only_the_columns_it_read_or_set(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from dagster_ds import load_dataset

    path = tmp_path / "rows.parquet"
    table = pa.table(
        {
            "a": pa.array([1, 2, 3], pa.int32()),
            "b": ["x", "y", "z"],
            "c": [1.5, 2.5, 3.5],
        }
    )
    pq.write_table(table, path)
    ds = load_dataset("parquet", data_files=str(path), split="train")

    def add(batch: Any) -> Any:
        batch["n"] = [len(text) for text in batch["b"]]
        return batch

    out = ds.map(add, batched=True)
    entry = out._shards[0].table_entry  # pyright: ignore[reportPrivateUsage]
    assert entry is not None
    # "b" was read (it may have been changed in place): stored again; the others not.
    assert entry.metadata_item("base_columns") == ["a", "c"]
    assert out.to_dict() == {**table.to_pydict(), "n": [1, 1, 1]}
    assert out.features["a"] == Value("int32")  # untouched: the input's own array
    for name in ("a", "c"):
        assert _values_address(out, name) == _values_address(ds, name)


def _values_address(dataset: Dataset, name: str) -> int:
    """Where the values of a column's first chunk are in memory."""
    chunk: pa.Array = dataset.data.column(name).chunks[0]
    values = chunk.buffers()[1]
    assert values is not None
    return values.address


def test_with_indices_is_lazy_and_input_columns_get_lists(anchor: ModuleType) -> None:
    seen: list[str] = []

    def with_index(batch: Any, indices: list[int]) -> Any:
        seen.append(type(batch).__name__)
        del batch["c"]
        batch["i"] = indices
        return batch

    out = Dataset.from_dict(_source()).map(with_index, batched=True, with_indices=True)
    theirs = anchor.Dataset.from_dict(_source()).map(with_index, batched=True, with_indices=True)
    assert (
        out.to_dict() == theirs.to_dict() == {"a": [1, 2, 3], "b": ["x", "y", None], "i": [0, 1, 2]}
    )
    assert seen[0] == "LazyBatch"

    def columns(a: list[int], b: list[str]) -> Any:
        a[0] = 50  # a list of its own: not the dataset's column
        return {"n": [type(a).__name__] * len(a)}

    out = Dataset.from_dict(_source()).map(columns, batched=True, input_columns=["a", "b"])
    assert out["a"] == [1, 2, 3]
    assert out["n"] == ["list"] * 3


def test_json_columns_decode_when_read_and_keep_their_feature() -> None:
    from dagster_ds.features import Json

    ds = Dataset.from_dict(
        {"j": [{"x": 1}, [2], "s"], "k": [1, 2, 3]},
        features=Features({"j": Json(), "k": Value("int64")}),
    )

    read = ds.map(read_json, batched=True)
    assert read["kind"] == ["dict", "list", "str"]
    assert read.features["j"] == Json()
    assert read["j"] == [{"x": 1}, [2], "s"]
    skipped = ds.map(skip_json, batched=True)
    assert skipped.features["j"] == Json()
    assert skipped["j"] == [{"x": 1}, [2], "s"]
    assert skipped["k"] == [2, 4, 6]


def test_batched_filter_reads_only_what_the_predicate_reads(anchor: ModuleType) -> None:
    def even_and_vandal(batch: Any) -> list[bool]:
        keep = [value % 2 == 0 for value in batch["a"]]
        batch["a"][0] = 99  # changes to the batch never reach the rows
        del batch["b"]
        return keep

    source = {"a": [0, 1, 2, 3], "b": ["w", "x", "y", "z"]}
    out = Dataset.from_dict(source).filter(even_and_vandal, batched=True)
    theirs = anchor.Dataset.from_dict(source).filter(even_and_vandal, batched=True)
    assert out.to_dict() == theirs.to_dict() == {"a": [0, 2], "b": ["w", "y"]}


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["read", "mutate", "set", "delete"]),
        st.sampled_from(["a", "b", "c", "new"]),
    ),
    max_size=6,
)


def _edited(edits: list[tuple[str, str]], returns: str) -> Any:
    def function(batch: Any) -> Any:
        for kind, name in edits:
            if kind == "read" and name in batch:
                assert len(batch[name]) == 3
            elif kind == "mutate" and name in batch:
                batch[name][0] = batch[name][2]
            elif kind == "set":
                batch[name] = [f"{name}{i}" for i in range(3)]
            elif kind == "delete" and name in batch:
                del batch[name]
        if returns == "batch":
            return batch
        if returns == "none":
            return None
        return {"new": [1, 2, 3], **({"a2": batch["a"]} if "a" in batch else {})}

    return function


def _eager(source: dict[str, list[Any]], function: Any, remove: list[str]) -> dict[str, list[Any]]:
    """What the function gives on the eager dict, by the rules the anchor documents."""
    batch = {name: list(values) for name, values in source.items()}
    result = function(batch)
    kept = {name: values for name, values in source.items() if name not in remove}
    if result is None:
        return kept
    base = {name: values for name, values in kept.items() if name in batch}
    if result is batch:
        return {**base, **{name: v for name, v in batch.items() if name not in remove}}
    return {**base, **result}


@settings(max_examples=60, deadline=None)
@given(
    edits=_EDITS,
    returns=st.sampled_from(["batch", "new", "none"]),
    remove=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=2),
)
def test_random_edits_to_the_batch_give_the_rows_of_the_eager_dict(
    edits: list[tuple[str, str]], returns: str, remove: list[str]
) -> None:
    source = {"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, 1.5, 2.5]}
    function = _edited(edits, returns)
    out = Dataset.from_dict(source).map(function, batched=True, remove_columns=remove)
    expected = _eager(source, function, remove)
    assert out.column_names == list(expected)
    assert out.to_dict() == expected


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["new", "set", "read", "replace"]), min_size=1, max_size=4),
    shuffled=st.booleans(),
)
def test_batches_of_different_kinds_are_written_each_as_mapped(
    kinds: list[str], shuffled: bool
) -> None:
    # 25 batches of 100 rows, written in groups: each batch does one kind of thing (by its
    # first index), so the columns kept from the input change from batch to batch.
    source = Dataset.from_dict({"a": list(range(2500)), "b": [f"t{i}" for i in range(2500)]})
    if shuffled:
        source = source.shuffle(seed=1)

    def step(batch: Any, indices: list[int]) -> Any:
        kind = kinds[indices[0] // 100 % len(kinds)]
        if kind == "new":
            return {"n": [i * 2 for i in indices]}
        if kind == "read":
            batch["b"][0] = batch["b"][0]  # read, maybe changed: rebuilt
        if kind == "replace":
            batch["a"] = list(batch["a"])
        batch["n"] = [i * 2 for i in indices]
        return batch

    out = source.map(step, batched=True, batch_size=100, with_indices=True)
    assert out.column_names == ["a", "b", "n"]
    assert out["n"] == [i * 2 for i in range(2500)]
    assert out["a"] == source["a"]
    assert out["b"] == source["b"]


def test_a_column_read_only_in_later_batches_is_still_mapped_right(tmp_path: Any) -> None:
    # The first batches leave "b" untouched (the entry would reference it), later ones
    # read it: the shard is then stored whole, with the later batches' values.
    import pyarrow.parquet as pq

    from dagster_ds import load_dataset

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"a": list(range(30_000)), "b": ["x"] * 30_000}), path)
    ds = load_dataset("parquet", data_files=str(path), split="train")

    def late_reader(batch: Any, indices: list[int]) -> Any:
        if indices[0] >= 20_000:
            batch["b"] = [value + "!" for value in batch["b"]]
        batch["n"] = indices
        return batch

    out = ds.map(late_reader, batched=True, with_indices=True)
    assert out["b"] == ["x"] * 20_000 + ["x!"] * 10_000
    assert out["n"] == list(range(30_000))
    assert out["a"] == list(range(30_000))


def test_a_column_changed_only_in_the_first_batches_maps_each_batch_once(tmp_path: Any) -> None:
    # The first batches change "b" (stored), later ones leave it untouched (the input's
    # own array): those rows store "b" too, and no batch is mapped twice.
    import pyarrow.parquet as pq

    from dagster_ds import load_dataset

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"a": list(range(30_000)), "b": ["x"] * 30_000}), path)
    ds = load_dataset("parquet", data_files=str(path), split="train")
    calls: list[int] = []

    def early_writer(batch: Any, indices: list[int]) -> Any:
        calls.append(indices[0])
        if indices[0] < 10_000:
            batch["b"] = [value + "!" for value in batch["b"]]
        batch["n"] = indices
        return batch

    out = ds.map(early_writer, batched=True, with_indices=True)
    assert sorted(calls) == list(range(0, 30_000, 1000))  # each batch once
    assert out["b"] == ["x!"] * 10_000 + ["x"] * 20_000
    assert out["n"] == list(range(30_000))
    assert out["a"] == list(range(30_000))
