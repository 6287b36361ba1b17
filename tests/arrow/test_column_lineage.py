"""Column lineage of Dataset transforms: each step's column sources, composed back to the source."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset, concatenate_datasets, interleave_datasets
from dagster_ds.features import Value
from dagster_ds.fingerprint import column_origins

ROWS = 6


def _sum(*values: int, name: str) -> dict[str, int]:
    return {name: sum(values)}


def _odd(*values: int) -> bool:
    return sum(values) % 2 == 1


def _origins(dataset: Dataset) -> dict[str, set[tuple[str, str]]]:
    return {
        origin.column: set(origin.sources)
        for origin in column_origins(dataset.lineage, dataset.column_names)
    }


# One operation: (kind, the columns it uses, a fresh name); applied by `_apply`.
_OPERATIONS = st.tuples(
    st.sampled_from(
        [
            "rename",
            "remove",
            "select_columns",
            "add_column",
            "map_new",
            "map_overwrite",
            "filter",
            "select",
            "shuffle",
            "sort",
            "cast_column",
        ]
    ),
    st.lists(st.integers(0, 5), min_size=1, max_size=3),
)


def _apply(
    dataset: Dataset, expected: dict[str, set[str]], operation: tuple[str, list[int]], fresh: str
) -> tuple[Dataset, dict[str, set[str]]]:
    """``dataset`` after ``operation``, and the brute-force lineage: column -> source columns."""
    kind, picks = operation
    names = dataset.column_names
    chosen = list(dict.fromkeys(names[pick % len(names)] for pick in picks))
    first = chosen[0]
    read: set[str] = set().union(*(expected[name] for name in chosen))
    if kind == "rename":
        mapping = {first: fresh}
        return dataset.rename_columns(mapping), {mapping.get(k, k): v for k, v in expected.items()}
    if kind == "remove" and len(names) > 1:
        return dataset.remove_columns(first), {k: v for k, v in expected.items() if k != first}
    if kind == "select_columns":
        return dataset.select_columns(chosen), {name: expected[name] for name in chosen}
    if kind == "add_column":
        return dataset.add_column(fresh, list(range(len(dataset)))), {**expected, fresh: set()}
    if kind in ("map_new", "map_overwrite") and len(dataset):  # no rows: no call, no output
        target = fresh if kind == "map_new" else names[-1]
        mapped = dataset.map(
            _sum, input_columns=chosen, fn_kwargs={"name": target}, load_from_cache_file=False
        )
        return mapped, {**expected, target: read}
    if kind == "filter":
        kept = dataset.filter(_odd, input_columns=chosen)
        if not len(dataset):  # no rows: no call, nothing read
            return kept, expected
        return kept, {k: v | read for k, v in expected.items()}
    if kind == "select":
        return dataset.select([i for i in range(len(dataset)) if i % 2 == 0]), expected
    if kind == "shuffle":
        return dataset.shuffle(seed=len(picks)), expected
    if kind == "sort":
        return dataset.sort(first), expected
    if kind == "cast_column" and dataset.features[first] == Value("int64"):
        return dataset.cast_column(first, Value("float64")), expected
    return dataset, expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=st.lists(_OPERATIONS, min_size=1, max_size=6))
def test_composed_lineage_equals_tracking_each_column_by_hand(
    operations: list[tuple[str, list[int]]],
) -> None:
    source = Dataset.from_dict({name: list(range(ROWS)) for name in ("a", "b", "c")})
    dataset, expected = source, {name: {name} for name in source.column_names}
    for number, operation in enumerate(operations):
        dataset, expected = _apply(dataset, expected, operation, f"new{number}")
        assert dataset.column_names == list(expected)
    root = source.fingerprint
    assert _origins(dataset) == {
        column: {(root, name) for name in names} for column, names in expected.items()
    }


def test_a_per_example_map_depends_on_the_columns_its_examples_read() -> None:
    source = Dataset.from_dict({"text": ["a", "bb"], "label": [0, 1]})
    mapped = source.map(lambda x: {"n": len(x["text"])})
    root = source.fingerprint
    assert _origins(mapped)["n"] == {(root, "text")}


def test_a_map_whose_reads_are_not_seen_depends_on_every_column_it_could_read() -> None:
    source = Dataset.from_dict({"text": ["a", "bb"], "label": [0, 1]})
    mapped = source.with_format("numpy").map(lambda x: {"n": len(str(x["text"]))})
    root = source.fingerprint
    assert _origins(mapped) == {
        "text": {(root, "text")},
        "label": {(root, "label")},
        "n": {(root, "text"), (root, "label")},
    }


def test_a_map_read_back_from_the_cache_never_claims_fewer_sources() -> None:
    source = Dataset.from_dict({"text": ["a", "bb"], "label": [0, 1]})
    first = _origins(source.map(_sum, input_columns=["label"], fn_kwargs={"name": "id"}))
    again = _origins(source.map(_sum, input_columns=["label"], fn_kwargs={"name": "id"}))
    assert all(first[column] <= again[column] for column in first)
    assert again["id"] == {(source.fingerprint, "label")}


def test_concatenated_columns_come_from_every_part_that_has_them() -> None:
    left = Dataset.from_dict({"a": [1], "b": [2]})
    right = Dataset.from_dict({"a": [3]})
    rows = concatenate_datasets([left, right])
    assert _origins(rows) == {
        "a": {(left.fingerprint, "a"), (right.fingerprint, "a")},
        "b": {(left.fingerprint, "b")},
    }
    side = concatenate_datasets([left, Dataset.from_dict({"c": [4]})], axis=1)
    assert _origins(side)["c"] == {(Dataset.from_dict({"c": [4]}).fingerprint, "c")}
    mixed = interleave_datasets([left.rename_column("b", "c"), right])
    assert _origins(mixed) == {
        "a": {(left.fingerprint, "a"), (right.fingerprint, "a")},
        "c": {(left.fingerprint, "b")},
    }


def test_flatten_and_train_test_split_keep_each_column_s_sources() -> None:
    source = Dataset.from_dict({"s": [{"x": i, "y": -i} for i in range(4)], "n": list(range(4))})
    flat = source.flatten()
    assert _origins(flat)["s.x"] == {(source.fingerprint, "s")}
    assert _origins(flat)["n"] == {(source.fingerprint, "n")}
    splits: dict[str, Any] = source.train_test_split(test_size=2, seed=0)
    assert _origins(splits["test"])["n"] == {(source.fingerprint, "n")}


def test_a_transform_of_an_empty_dataset_keeps_its_lineage_and_format() -> None:
    empty = Dataset.from_dict({"a": [1, 2]}).filter(lambda x: False).with_format("arrow")
    renamed = empty.rename_column("a", "b")
    assert [step.transform for step in renamed.lineage] == [
        "filter",
        "set_format",
        "rename_columns",
    ]
    assert renamed.format["type"] == "arrow"
