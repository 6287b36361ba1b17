"""Operator semantics beyond the differential tests: shuffling, epochs, errors, formats."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from dagster_ds import Features, IterableDataset, List, Value
from dagster_ds.errors import (
    CastError,
    ColumnNotFoundError,
    DuplicateColumnError,
    InvalidArgumentError,
    TransformOutputError,
    UnknownFormatError,
)

from .conftest import numbers


def _a(dataset: IterableDataset) -> list[int]:
    return [row["a"] for row in dataset]


# -- shuffle and epochs ------------------------------------------------------------


def test_shuffle_is_a_seeded_permutation() -> None:
    ds = numbers(500, num_shards=5)
    first = _a(ds.shuffle(seed=1, buffer_size=50))
    assert sorted(first) == list(range(500))
    assert first != list(range(500))
    assert _a(ds.shuffle(seed=1, buffer_size=50)) == first
    assert _a(ds.shuffle(seed=2, buffer_size=50)) != first


def test_shuffle_reorders_shards_and_mixes_within_the_buffer() -> None:
    ds = numbers(400, num_shards=8)  # shards of 50 rows
    order = _a(ds.shuffle(seed=3, buffer_size=1))  # a buffer of one keeps rows in order
    shard_starts = [order[i] for i in range(0, 400, 50)]
    assert sorted(shard_starts) == list(range(0, 400, 50))
    assert shard_starts != sorted(shard_starts)
    for start in range(0, 400, 50):
        block = order[start : start + 50]
        assert block == list(range(block[0], block[0] + 50))


def test_shuffle_buffer_draws_from_the_first_buffer_size_rows_first() -> None:
    """The documented algorithm: the first example comes from the first buffer_size ones."""
    ds = numbers(1000)  # one shard: only the buffer shuffles
    for seed in range(10):
        first = _a(ds.shuffle(seed=seed, buffer_size=100))[0]
        assert first < 100


def test_shuffle_after_take_or_skip_keeps_the_shard_order() -> None:
    ds = numbers(400, num_shards=8)
    for fixed in (ds.take(400), ds.skip(0)):
        order = _a(fixed.shuffle(seed=3, buffer_size=1))
        assert order == list(range(400))


def test_shuffle_with_a_numpy_generator_does_not_advance_it() -> None:
    np = pytest.importorskip("numpy")
    generator = np.random.default_rng(0)
    before = generator.bit_generator.state
    a = _a(numbers(50).shuffle(generator=generator, buffer_size=10))
    assert generator.bit_generator.state == before
    assert a == _a(numbers(50).shuffle(generator=np.random.default_rng(0), buffer_size=10))


def test_set_epoch_gives_a_new_reproducible_order_each_epoch() -> None:
    ds = numbers(300, num_shards=6).shuffle(seed=42, buffer_size=20)
    orders = []
    for epoch in range(3):
        ds.set_epoch(epoch)
        orders.append(_a(ds))
        assert sorted(orders[-1]) == list(range(300))
    assert len({tuple(order) for order in orders}) == 3
    again = numbers(300, num_shards=6).shuffle(seed=42, buffer_size=20)
    again.set_epoch(2)
    assert _a(again) == orders[2]
    again.set_epoch(0)
    assert _a(again) == orders[0]
    assert again.epoch == 0


def test_shuffle_without_seed_is_random_but_fixed_per_dataset() -> None:
    shuffled = numbers(200).shuffle(buffer_size=200)
    assert _a(shuffled) == _a(shuffled)
    assert _a(numbers(200).shuffle(buffer_size=200)) != _a(shuffled)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda ds: ds.shuffle(seed=0, buffer_size=0), "buffer_size"),
        (lambda ds: ds.take(-1), "take: n"),
        (lambda ds: ds.skip(-2), "skip: n"),
        (lambda ds: ds.shard(2, 2), "index=2"),
        (lambda ds: ds.shard(0, 0), "num_shards=0"),
        (lambda ds: ds.batch(0), "batch_size"),
        (lambda ds: ds.iter(batch_size=0), "batch_size"),
        (lambda ds: ds.set_epoch(-1), "epoch"),
    ],
)
def test_bad_arguments_are_refused(call: Any, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        call(numbers(5))


# -- take, skip, shard -----------------------------------------------------------------


def test_take_stops_reading_its_input() -> None:
    read: list[int] = []

    def rows() -> Any:
        for i in range(10**9):
            read.append(i)
            yield {"i": i}

    assert [row["i"] for row in IterableDataset.from_generator(rows).take(3)] == [0, 1, 2]
    assert len(read) <= 1000  # one source batch at most


def test_shards_partition_the_rows() -> None:
    ds = numbers(70, num_shards=7)
    for contiguous in (True, False):
        parts = [_a(ds.shard(3, index, contiguous=contiguous)) for index in range(3)]
        assert sorted(row for part in parts for row in part) == list(range(70))
    assert [row for i in range(3) for row in _a(ds.shard(3, i))] == list(range(70))
    assert _a(ds.shard(8, 7)) == []  # more groups than shards: the last ones are empty


def test_take_and_skip_split_their_count_among_shards() -> None:
    ds = numbers(40, num_shards=4).take(10)
    counts = [len(_a(ds.shard(4, index))) for index in range(4)]
    assert counts == [3, 3, 2, 2]


# -- columns ---------------------------------------------------------------------------


def test_rename_remove_select_errors_name_the_columns() -> None:
    ds = numbers(3)
    with pytest.raises(ColumnNotFoundError, match=r"\['zz'\].*\['a', 'b'\]"):
        ds.rename_column("zz", "c")
    with pytest.raises(DuplicateColumnError, match=r"\['b'\]"):
        ds.rename_column("a", "b")
    with pytest.raises(ColumnNotFoundError, match="remove_columns"):
        ds.remove_columns(["a", "zz"])
    with pytest.raises(ColumnNotFoundError, match="select_columns"):
        ds.select_columns("zz")
    with pytest.raises(ColumnNotFoundError, match="map\\(remove_columns"):
        ds.map(lambda x: x, remove_columns="zz")


def test_column_errors_after_an_unknown_schema_come_at_iteration() -> None:
    ds = numbers(3).map(lambda x: {"c": 1})
    assert ds.features is None
    renamed = ds.rename_column("zz", "y")
    with pytest.raises(ColumnNotFoundError, match="zz"):
        list(renamed)


def test_cast_refuses_lossy_casts_and_cast_column_needs_features() -> None:
    ds = IterableDataset.from_dict({"a": [1.5, 2.0]})
    with pytest.raises(CastError):
        list(ds.cast(Features({"a": Value("int64")})))
    with pytest.raises(InvalidArgumentError, match="features are unknown"):
        ds.map(lambda x: {"b": 1}).cast_column("b", Value("int8"))


def test_column_indexing_and_nested_columns() -> None:
    ds = IterableDataset.from_dict(
        {"meta": [{"source": "web", "n": 1}, {"source": "book", "n": 2}]}
    )
    assert list(ds["meta"]["source"]) == ["web", "book"]
    assert list(ds.with_format("numpy")["meta"]) == [
        {"source": "web", "n": 1},
        {"source": "book", "n": 2},
    ]
    with pytest.raises(InvalidArgumentError, match="column name"):
        ds[0]  # type: ignore[index]


# -- map and filter edge cases ---------------------------------------------------------


def test_map_none_means_no_update_and_identity_honours_remove_columns() -> None:
    ds = numbers(3)
    assert list(ds.map(lambda x: None)) == list(ds)
    assert list(ds.map()) == list(ds)
    assert list(ds.map(lambda x: x, remove_columns="b")) == [{"a": 0}, {"a": 1}, {"a": 2}]

    def mutate(example: dict[str, Any]) -> dict[str, Any]:
        example["a"] += 10
        return example

    assert _a(ds.map(mutate)) == [10, 11, 12]


def test_map_remove_columns_are_seen_by_the_function_and_may_be_returned() -> None:
    ds = numbers(2).map(lambda x: {"b": x["b"] + "!"}, remove_columns=["a", "b"])
    assert list(ds) == [{"b": "0!"}, {"b": "1!"}]


def test_batched_map_with_fewer_rows_needs_the_inputs_removed() -> None:
    ds = numbers(10)
    with pytest.raises(TransformOutputError, match="remove_columns"):
        list(ds.map(lambda b: {"first": b["a"][:1]}, batched=True, batch_size=5))
    shrunk = ds.map(
        lambda b: {"first": b["a"][:1]}, batched=True, batch_size=4, remove_columns=["a", "b"]
    )
    assert list(shrunk) == [{"first": 0}, {"first": 4}, {"first": 8}]


def test_batched_map_with_batch_size_none_sees_everything_at_once() -> None:
    sizes: list[int] = []

    def record(batch: dict[str, list[Any]]) -> None:
        sizes.append(len(batch["a"]))

    list(numbers(2500, num_shards=3).map(record, batched=True, batch_size=None))
    assert sizes == [2500]


def test_map_output_errors_say_what_was_returned() -> None:
    ds = numbers(3)
    with pytest.raises(TransformOutputError, match="returned int"):
        list(ds.map(lambda x: 5))
    with pytest.raises(TransformOutputError, match="unequal lengths"):
        list(ds.map(lambda b: {"x": [1], "y": [1, 2]}, batched=True))
    with pytest.raises(TransformOutputError, match="returned str"):
        list(ds.map(lambda b: "no", batched=True))
    with pytest.raises(TransformOutputError, match="one boolean per example"):
        list(ds.filter(lambda b: [True], batched=True))


def test_map_with_features_types_the_output() -> None:
    features = Features({"a": Value("int8"), "b": Value("string"), "c": Value("float32")})
    ds = numbers(3).map(lambda x: {"c": x["a"] / 2}, features=features)
    assert ds.features == features
    table = next(ds.with_format("arrow").iter(batch_size=3))
    assert table.schema.field("c").type == pa.float32()


def test_arrow_format_functions_get_tables() -> None:
    import pyarrow.compute as pc

    ds = numbers(6).with_format("arrow")
    doubled = ds.map(lambda t: t.append_column("c", pc.multiply(t["a"], 2)), batched=True)
    kept = doubled.filter(lambda t: pc.greater(t["c"], pa.scalar(4)), batched=True, batch_size=4)
    assert [t.to_pydict() for t in kept.iter(batch_size=10)] == [
        {"a": [3, 4, 5], "b": ["3", "4", "5"], "c": [6, 8, 10]}
    ]


def test_batch_groups_examples_and_types_them_as_lists() -> None:
    ds = numbers(5).batch(2)
    assert ds.features == Features({"a": List(Value("int64")), "b": List(Value("string"))})
    assert list(ds) == [
        {"a": [0, 1], "b": ["0", "1"]},
        {"a": [2, 3], "b": ["2", "3"]},
        {"a": [4], "b": ["4"]},
    ]
    assert len(list(numbers(5).batch(2, drop_last_batch=True))) == 2


# -- formats ---------------------------------------------------------------------------


def test_formats_of_examples_and_batches() -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    ds = numbers(4)
    row = next(iter(ds.with_format("numpy")))
    assert isinstance(row["a"], np.integer)
    batch = next(ds.with_format("numpy").iter(batch_size=3))
    assert batch["a"].tolist() == [0, 1, 2]
    assert isinstance(next(iter(ds.with_format("arrow"))), pa.Table)
    frame = next(ds.with_format("pandas").iter(batch_size=4))
    assert isinstance(frame, pd.DataFrame)
    assert frame["a"].tolist() == [0, 1, 2, 3]
    assert next(iter(ds.with_format("pandas"))).shape == (1, 2)
    assert list(ds.with_format("arrow").with_format(None)) == list(ds)
    with pytest.raises(UnknownFormatError, match="tensorflow"):
        ds.with_format("tensorflow")


def test_to_list_dict_pandas_and_repr() -> None:
    ds = numbers(3)
    assert ds.to_list() == list(ds)
    assert ds.to_dict() == {"a": [0, 1, 2], "b": ["0", "1", "2"]}
    assert repr(ds) == "IterableDataset({\n    features: ['a', 'b'],\n    num_shards: 1\n})"
    assert "Unknown" in repr(ds.map(lambda x: x))
    assert numbers(0).to_dict() == {"a": [], "b": []}


# -- fingerprints ----------------------------------------------------------------------


def test_fingerprints_follow_the_pipeline() -> None:
    base = numbers(10)
    assert base.fingerprint == numbers(10).fingerprint
    assert base.fingerprint != numbers(11).fingerprint
    steps = [
        base.take(3),
        base.take(4),
        base.skip(3),
        base.shuffle(seed=0),
        base.shuffle(seed=1),
        base.map(lambda x: {"c": 1}),
        base.map(lambda x: {"c": 2}),
        base.filter(lambda x: True),
        base.rename_column("a", "z"),
        base.with_format("arrow"),
    ]
    fingerprints = [step.fingerprint for step in steps]
    assert len(set(fingerprints)) == len(fingerprints)
    assert base.take(3).fingerprint == fingerprints[0]
    assert base._fingerprint == base.fingerprint


def test_streaming_fingerprint_equals_the_loaded_datasets(tmp_path: Any) -> None:
    from dagster_ds import load_dataset

    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    streamed = load_dataset("json", data_files=str(path), split="train", streaming=True)
    loaded = load_dataset("json", data_files=str(path), split="train")
    assert streamed.fingerprint == loaded.fingerprint
    path.write_text('{"a": 1}\n{"a": 3}\n')
    changed = load_dataset("json", data_files=str(path), split="train", streaming=True)
    assert changed.fingerprint != streamed.fingerprint


def test_map_mixing_none_and_dicts_says_so() -> None:
    with pytest.raises(TransformOutputError, match="None for example 0 but a dict"):
        list(numbers(3).map(lambda x: {"c": 1} if x["a"] else None))


def test_cast_names_missing_and_extra_columns_at_once() -> None:
    from dagster_ds.errors import ColumnMismatchError

    with pytest.raises(ColumnMismatchError, match=r"missing \['c'\].*extra \['b'\]"):
        numbers(3).cast(Features({"a": Value("int32"), "c": Value("string")}))
