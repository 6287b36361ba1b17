"""Groups of small files: cut by the files' content, so one edit changes few groups."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.arrow._groups import file_groups, shard_bytes_of
from dagster_ds.errors import InvalidArgumentError

TARGET = 1_000

# A file: (fingerprint, size). Mostly small files, some big ones (>= TARGET).
files_strategy = st.tuples(
    st.integers(0, 2**128 - 1).map(lambda n: f"{n:032x}"),
    st.one_of(st.integers(0, TARGET // 3), st.integers(0, TARGET // 3), st.integers(TARGET, 3000)),
)


def _groups(files: list[tuple[str, int]]) -> list[tuple[tuple[str, int], ...]]:
    """Each group as its files (a group's fingerprint is made of theirs, in order)."""
    ranges = file_groups([fp for fp, _ in files], [size for _, size in files], TARGET)
    assert [index for group in ranges for index in group] == list(range(len(files)))
    return [tuple(files[index] for index in group) for group in ranges]


@st.composite
def edits(draw: st.DrawFn) -> tuple[list[tuple[str, int]], list[tuple[str, int]], bool]:
    """A list of files, the list after one edit, and whether the edit touched a big file."""
    files = draw(st.lists(files_strategy, min_size=1, max_size=80))
    kind = draw(st.sampled_from(["insert", "remove", "change"]))
    position = draw(st.integers(0, len(files) - (0 if kind == "insert" else 1)))
    edited = list(files)
    touched = []
    if kind == "insert":
        new = draw(files_strategy)
        edited.insert(position, new)
        touched = [new]
    elif kind == "remove":
        touched = [edited.pop(position)]
    else:
        new = draw(files_strategy.filter(lambda file: file[0] != files[position][0]))
        touched = [files[position], new]
        edited[position] = new
    return files, edited, any(size >= TARGET for _, size in touched)


@settings(max_examples=2_000, deadline=None)
@given(edits())
def test_one_edit_changes_at_most_3_groups_and_2_without_a_big_file(
    case: tuple[list[tuple[str, int]], list[tuple[str, int]], bool],
) -> None:
    before, after, big = case
    new_groups = set(_groups(after)) - set(_groups(before))
    assert len(new_groups) <= (3 if big else 2)


@settings(max_examples=500, deadline=None)
@given(st.lists(files_strategy, min_size=1, max_size=80), files_strategy)
def test_appending_a_file_changes_only_the_last_group(
    files: list[tuple[str, int]], appended: tuple[str, int]
) -> None:
    before, after = _groups(files), _groups([*files, appended])
    assert after[:-1] == before[: len(after) - 1]
    assert set(after) - set(before) <= {after[-1]}


@settings(max_examples=300, deadline=None)
@given(st.lists(files_strategy, min_size=1, max_size=80))
def test_a_big_file_is_a_group_of_its_own(files: list[tuple[str, int]]) -> None:
    for group in _groups(files):
        if any(size >= TARGET for _, size in group):
            assert len(group) == 1


def test_small_files_are_grouped_to_about_the_target_size() -> None:
    sizes = [TARGET // 50] * 20_000  # 400 targets' worth of small files
    fingerprints = [f"{(n * 0x9E3779B97F4A7C15 << 64) % 2**128:032x}" for n in range(20_000)]
    groups = file_groups(fingerprints, sizes, TARGET)
    assert 300 <= len(groups) <= 500  # about one group per TARGET bytes


def test_zero_reads_each_file_into_a_shard_of_its_own() -> None:
    assert file_groups(["0" * 32, "f" * 32], [10, 10], 0) == [range(0, 1), range(1, 2)]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [(None, 0), (0, 0), (1234, 1234), ("4MiB", 4 << 20), ("500kB", 500_000)],
)
def test_shard_bytes_takes_bytes_or_sizes(given_value: int | str | None, expected: int) -> None:
    assert shard_bytes_of(given_value) == expected


@pytest.mark.parametrize("bad", [-1, "lots", True, 1.5])
def test_shard_bytes_that_is_no_size_is_refused_with_the_value(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"shard_bytes=.* is not a size"):
        shard_bytes_of(bad)  # pyright: ignore[reportArgumentType]
