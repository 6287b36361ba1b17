"""Diffs of stored versions: counts equal a brute-force multiset comparison; equal shards unread."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset, load_dataset
from dagster_ds.arrow import (
    ShardChanges,
    changed_shards,
    diff_versions,
    store_version,
    version_record,
)
from dagster_ds.cache import CacheStore, cache_root
from dagster_ds.errors import ColumnNotFoundError, DatasetReleasedError, InvalidArgumentError

Row = tuple[Any, ...]
COLUMNS = ("id", "word", "score")


SCHEMA = pa.schema([("id", pa.int64()), ("word", pa.string()), ("score", pa.float64())])


def _dataset(shards: list[list[Row]], folder: Path) -> Dataset:
    """One shard per list of rows: each a Parquet file, loaded as one shard."""
    folder.mkdir(parents=True)
    files = []
    for index, rows in enumerate(shards or [[]]):
        files.append(str(folder / f"part-{index:03d}.parquet"))
        columns = {name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)}
        pq.write_table(pa.table(columns, schema=SCHEMA), files[-1])
    return load_dataset("parquet", data_files=files, split="train", shard_bytes=None)


def _stored(store: CacheStore, name: str, shards: list[list[Row]]) -> str:
    key = name * 32
    store_version(store, key, _dataset(shards, Path(store.root) / "sources" / name))
    return key


def _expected(old: list[Row], new: list[Row], key: int | None) -> dict[str, Any]:
    """The diff, by brute force over Python tuples."""
    removed, added = Counter(old) - Counter(new), Counter(new) - Counter(old)
    if key is None:
        columns = {}
        for i, name in enumerate(COLUMNS):
            gone: Counter[Any] = Counter()
            came: Counter[Any] = Counter()
            for row, n in removed.items():
                gone[row[i]] += n
            for row, n in added.items():
                came[row[i]] += n
            count = min(sum((gone - came).values()), sum((came - gone).values()))
            if count:
                columns[name] = count
        return {
            "added": sum(added.values()),
            "removed": sum(removed.values()),
            "changed": 0,
            "columns": columns,
        }
    old_by_key = {row[key]: row for row in removed}
    new_by_key = {row[key]: row for row in added}
    both = old_by_key.keys() & new_by_key.keys()
    columns = {
        name: sum(old_by_key[k][i] != new_by_key[k][i] for k in both)
        for i, name in enumerate(COLUMNS)
    }
    return {
        "added": len(new_by_key) - len(both),
        "removed": len(old_by_key) - len(both),
        "changed": len(both),
        "columns": {name: count for name, count in columns.items() if count},
    }


_words = st.sampled_from(["a", "bb", "", "ccc", "dé"])
_scores = st.sampled_from([0.0, 1.5, -2.0, 3.25])


@st.composite
def _versions(draw: st.DrawFn, unique: bool) -> tuple[list[list[Row]], list[list[Row]]]:
    """An old version's shards, and a new version: some shards kept, some edited or added."""
    ids = iter(range(10_000)) if unique else None
    shards: list[list[Row]] = []
    for _ in range(draw(st.integers(1, 5))):
        rows = draw(
            st.lists(
                st.tuples(st.integers(0, 3) if ids is None else st.just(0), _words, _scores),
                min_size=0,
                max_size=8,
            )
        )
        if ids is not None:
            rows = [(next(ids), word, score) for _, word, score in rows]
        shards.append(rows)
    new: list[list[Row]] = []
    for rows in shards:
        action = draw(st.sampled_from(["keep", "keep", "edit", "drop"]))
        if action == "drop":
            continue
        if action == "edit":
            rows = list(rows)
            for index in draw(st.lists(st.integers(0, 7), max_size=4)):
                if index < len(rows):
                    row = rows[index]
                    column = draw(st.integers(0 if ids is None else 1, 2))
                    value = draw([st.integers(0, 3), _words, _scores][column])
                    rows[index] = tuple(value if i == column else v for i, v in enumerate(row))
            if draw(st.booleans()) and rows:
                del rows[draw(st.integers(0, len(rows) - 1))]
            if draw(st.booleans()):
                fresh = draw(st.tuples(st.integers(0, 3), _words, _scores))
                rows.append((next(ids), *fresh[1:]) if ids is not None else fresh)
        new.append(rows)
    if draw(st.booleans()):
        new.insert(0, list(shards[0]))  # a shard twice
    return shards, new


def _check(found: Any, expected: dict[str, Any]) -> None:
    assert (found.rows_added, found.rows_removed, found.rows_changed) == (
        expected["added"],
        expected["removed"],
        expected["changed"],
    )
    assert found.columns_changed == expected["columns"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(versions=_versions(unique=False))
def test_counts_equal_a_brute_force_multiset_comparison(
    tmp_path: Path, versions: tuple[list[list[Row]], list[list[Row]]]
) -> None:
    old, new = versions
    store = CacheStore(str(tmp_path / uuid.uuid4().hex))  # one per example
    found = diff_versions(store, _stored(store, "a", old), _stored(store, "b", new))
    expected = _expected([r for s in old for r in s], [r for s in new for r in s], None)
    _check(found, expected)
    assert len(found.samples["added"]) == min(3, expected["added"])
    assert len(found.samples["removed"]) == min(3, expected["removed"])
    assert not found.schema.changed


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(versions=_versions(unique=True))
def test_with_a_key_changed_rows_are_matched_by_it_and_their_columns_counted(
    tmp_path: Path, versions: tuple[list[list[Row]], list[list[Row]]]
) -> None:
    old, new = versions
    store = CacheStore(str(tmp_path / uuid.uuid4().hex))  # one per example
    found = diff_versions(store, _stored(store, "a", old), _stored(store, "b", new), key="id")
    flat_old, flat_new = [r for s in old for r in s], [r for s in new for r in s]
    if len({r[0] for r in flat_new}) != len(flat_new):  # the repeated shard repeats ids
        return
    _check(found, _expected(flat_old, flat_new, 0))
    for change in found.samples["changed"]:
        assert change["old"]["id"] == change["new"]["id"] == change["key"]


def _damage_data_files(store: CacheStore, key: str) -> None:
    """Truncate the data files of the version's shard entries: reading them would fail."""
    for path in Path(store.entry_url(key)).glob("*.arrow"):
        path.write_bytes(b"")


def test_shards_equal_in_both_versions_are_not_read(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    shards = [[(i * 10 + j, "w", 1.0) for j in range(10)] for i in range(20)]
    edited = [list(rows) for rows in shards]
    edited[7][3] = (73, "changed", 1.0)
    old, new = _stored(store, "a", shards), _stored(store, "b", edited)
    new_shard = store.manifest(new)
    assert new_shard is not None
    kept = {
        reference["table"]
        for index, reference in enumerate(new_shard.metadata["shards"])  # type: ignore[union-attr, arg-type]
        if index != 7
    }
    for table in kept:  # proof that they are not read: reading them now would fail
        _damage_data_files(store, table)
    found = diff_versions(store, old, new)
    assert (found.rows_added, found.rows_removed, found.columns_changed) == (1, 1, {"word": 1})
    assert found.shards_unchanged == 19
    assert found.shards_read == (1, 1)
    assert found.rows_hashed == 20
    assert found.samples["added"] == [{"id": 73, "word": "changed", "score": 1.0}]


def test_changed_shards_names_the_changed_columns_from_the_records_alone(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    shards = [[(i * 10 + j, "w", 1.0) for j in range(10)] for i in range(4)]
    edited = [list(rows) for rows in shards]
    edited[2][3] = (23, "changed", 1.0)
    with cache_root(store.root):  # loaded into the store: its entries record column fingerprints
        old, new = _stored(store, "a", shards), _stored(store, "b", edited)
    records = [version_record(store, key) or {} for key in (old, new)]
    for record in records:  # proof that no row is read: reading one now would fail
        for reference in record["shards"]:
            _damage_data_files(store, reference["table"])
    found = changed_shards(store, records[0], records[1])
    assert found == ShardChanges(shards=4, changed=1, columns={"word": 1}, unrecorded=0)


def test_versions_with_different_schemas_compare_the_columns_they_share(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    old_rows = {"id": [1, 2, 3], "word": ["a", "b", "c"], "score": [1, 2, 3]}
    old = "a" * 32
    store_version(store, old, Dataset.from_dict(old_rows))
    new = "b" * 32
    new_rows = {
        "id": [1, 2, 4],
        "word": ["a", "B", "d"],
        "score": [1.0, 2.0, 3.0],
        "extra": [0] * 3,
    }
    store_version(store, new, Dataset.from_dict({k: v for k, v in new_rows.items()}))
    found = diff_versions(store, old, new, key="id")
    assert found.schema.added == {"extra": "int64"}
    assert found.schema.retyped == {"score": ("int64", "double")}
    assert found.schema.removed == {}
    assert found.compared == ("id", "word")
    assert (found.rows_added, found.rows_removed, found.rows_changed) == (1, 1, 1)
    assert found.columns_changed == {"word": 1}
    assert found.samples["changed"] == [
        {"key": 2, "old": {"id": 2, "word": "b"}, "new": {"id": 2, "word": "B"}}
    ]
    assert not found.identical
    with pytest.raises(ColumnNotFoundError, match="'score'"):
        diff_versions(store, old, new, key="score")


def test_a_key_that_is_not_unique_among_changed_rows_is_a_clear_error(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    old = _stored(store, "a", [[(1, "a", 1.0), (1, "b", 1.0)]])
    new = _stored(store, "b", [[(1, "c", 1.0), (1, "d", 1.0)]])
    with pytest.raises(InvalidArgumentError, match="'id' is not unique"):
        diff_versions(store, old, new, key="id")


def test_a_version_that_is_not_stored_is_named(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    old = _stored(store, "a", [[(1, "a", 1.0)]])
    with pytest.raises(DatasetReleasedError, match="'" + "c" * 32 + "'"):
        diff_versions(store, old, "c" * 32)


def test_a_shuffled_version_is_compared_as_a_whole(tmp_path: Path) -> None:
    store = CacheStore(str(tmp_path))
    rows = [[(i, "w", 0.0) for i in range(5)], [(i, "v", 0.0) for i in range(5, 9)]]
    dataset = _dataset(rows, tmp_path / "source")
    old = "a" * 32
    store_version(store, old, dataset)
    new = "b" * 32
    store_version(store, new, dataset.shuffle(seed=1).select(range(8)))
    found = diff_versions(store, old, new)
    assert (found.rows_added, found.rows_removed) == (0, 1)
    assert diff_versions(store, old, old).identical
