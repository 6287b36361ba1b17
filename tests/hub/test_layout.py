"""File names of a pushed split: content keys, and ranks that sort in row order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.hub._layout import RANK_GAP, place

KEYS = [f"{i:016x}" for i in range(40)]


def names(keys: list[str], existing: tuple[str, ...] = ()) -> tuple[tuple[str, ...], set[int]]:
    placement = place(existing, "data", "train", keys, ranked=True)
    return placement.paths, set(placement.kept)


@settings(max_examples=200, deadline=None)
@given(
    old=st.lists(st.sampled_from(KEYS), max_size=12),
    new=st.lists(st.sampled_from(KEYS), max_size=12),
)
def test_names_sort_in_row_order_and_keep_what_they_can(old: list[str], new: list[str]) -> None:
    before, _ = names(old)
    after, kept = names(new, before)

    assert list(after) == sorted(after)  # the anchor reads `train-*` sorted by name
    assert len(set(after)) == len(after)
    assert all(after[i] in before for i in kept)
    assert all(path.endswith(f"-{key}.parquet") for path, key in zip(after, new, strict=True))


def test_an_append_an_insert_and_a_removal_rename_nothing() -> None:
    before, _ = names(KEYS[:5])
    # Removed 1, inserted before the first, between 2 and 3, and appended after the last.
    after, kept = names([KEYS[10], KEYS[0], KEYS[2], KEYS[11], KEYS[3], KEYS[4], KEYS[12]], before)
    assert {after[i] for i in kept} == set(before) - {before[1]}
    assert kept == {1, 2, 4, 5}


def test_a_gap_too_small_for_its_new_files_renames_the_split() -> None:
    paths = names(KEYS[:2])[0]
    for number, key in enumerate(KEYS[2:19]):  # each insert halves the first two's gap
        order = [p.rsplit("-", 1)[1].removesuffix(".parquet") for p in paths]
        paths, kept = names([order[0], key, *order[1:]], paths)
        assert kept == (set(range(len(paths))) - {1} if number < 16 else {0})
    ranks = [int(path.split("-")[1], 16) for path in paths]
    assert ranks == sorted(ranks)
    assert ranks[:3] == [RANK_GAP, 2 * RANK_GAP, 3 * RANK_GAP]  # numbered afresh once
