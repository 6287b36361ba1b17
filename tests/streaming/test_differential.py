"""Differential tests: the same pipeline on the anchor's streaming and on ours, same files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dagster_ds import Features, IterableDataset, Value, load_dataset
from dagster_ds import concatenate_datasets as our_concatenate
from dagster_ds import interleave_datasets as our_interleave
from dagster_ds.features import ClassLabel

Pipeline = Callable[[Any], Any]


def _files(folder: Path) -> list[str]:
    return sorted(str(path) for path in folder.glob("*.parquet"))


def _both(anchor: ModuleType, folder: Path) -> tuple[Any, IterableDataset]:
    files = _files(folder)
    theirs = anchor.load_dataset("parquet", data_files=files, split="train", streaming=True)
    ours = load_dataset("parquet", data_files=files, split="train", streaming=True)
    return theirs, ours


def _even(example: dict[str, Any]) -> bool:
    return example["id"] % 2 == 0


def _with_length(example: dict[str, Any]) -> dict[str, Any]:
    return {"length": len(example["text"]), "text": example["text"].upper()}


def _explode(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"piece": [f"{t}/{k}" for t in batch["text"] for k in range(2)]}


PIPELINES: dict[str, Pipeline] = {
    "take": lambda ds: ds.take(25),
    "skip": lambda ds: ds.skip(37),
    "skip-take": lambda ds: ds.skip(5).take(50),
    "shard-contiguous": lambda ds: ds.shard(num_shards=2, index=1),
    "shard-strided": lambda ds: ds.shard(num_shards=2, index=0, contiguous=False),
    "shard-then-take": lambda ds: ds.shard(num_shards=3, index=2).take(7),
    "batch": lambda ds: ds.batch(batch_size=7),
    "batch-drop-last": lambda ds: ds.batch(batch_size=7, drop_last_batch=True),
    "map": lambda ds: ds.map(_with_length),
    "map-remove": lambda ds: ds.map(_with_length, remove_columns=["text", "score"]),
    "map-indices": lambda ds: ds.map(lambda x, i: {"i": i * 10}, with_indices=True),
    "map-input-columns": lambda ds: ds.map(lambda t: {"n": len(t)}, input_columns="text"),
    "map-kwargs": lambda ds: ds.map(lambda x, k: {"k": x["id"] * k}, fn_kwargs={"k": 3}),
    "map-batched": lambda ds: ds.map(
        lambda b: {"twice": [v * 2 for v in b["id"]]}, batched=True, batch_size=16
    ),
    "map-batched-more-rows": lambda ds: ds.map(
        _explode, batched=True, batch_size=5, remove_columns=["id", "text", "label", "score"]
    ),
    "map-batched-drop-last": lambda ds: ds.map(
        lambda b: {"n": [len(b["id"])] * len(b["id"])},
        batched=True,
        batch_size=50,
        drop_last_batch=True,
    ),
    "map-identity-remove": lambda ds: ds.map(lambda x: x, remove_columns=["score"]),
    "filter": lambda ds: ds.filter(_even),
    "filter-indices": lambda ds: ds.filter(lambda x, i: i % 5 == 0, with_indices=True),
    "filter-batched": lambda ds: ds.filter(
        lambda b: [v % 3 == 1 for v in b["id"]], batched=True, batch_size=9
    ),
    "filter-input-columns": lambda ds: ds.filter(lambda s: s > 10, input_columns=["score"]),
    "rename": lambda ds: ds.rename_column("text", "content"),
    "rename-columns": lambda ds: ds.rename_columns({"text": "t", "id": "key"}),
    "remove": lambda ds: ds.remove_columns(["text", "label"]),
    "select": lambda ds: ds.select_columns(["score", "id"]),
    "map-filter-take": lambda ds: ds.map(_with_length).filter(_even).skip(3).take(20),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_matches_the_anchor(anchor: ModuleType, parquet_dir: Path, name: str) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    pipeline = PIPELINES[name]
    assert list(pipeline(ours)) == list(pipeline(theirs))


def test_num_shards_match_the_anchor(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    assert ours.num_shards == theirs.num_shards == 3
    assert ours.reshard().num_shards == theirs.reshard().num_shards == 12
    assert ours.shard(2, 0).num_shards == theirs.shard(2, 0).num_shards == 2
    assert list(ours.reshard().shard(12, 5)) == list(theirs.reshard().shard(12, 5))


def test_column_indexing_matches_the_anchor(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    assert list(ours["text"]) == list(theirs["text"])
    assert list(ours.take(5)["score"]) == list(theirs.take(5)["score"])


def test_cast_matches_the_anchor(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    anchor_features = anchor.Features(
        {
            "id": anchor.Value("int32"),
            "text": anchor.Value("string"),
            "label": anchor.ClassLabel(names=["a", "b", "c"]),
            "score": anchor.Value("float32"),
        }
    )
    features = Features(
        {
            "id": Value("int32"),
            "text": Value("string"),
            "label": ClassLabel(names=["a", "b", "c"]),
            "score": Value("float32"),
        }
    )
    assert list(ours.cast(features)) == list(theirs.cast(anchor_features))
    assert list(ours.cast_column("score", Value("float32"))) == list(
        theirs.cast_column("score", anchor.Value("float32"))
    )
    assert ours.cast(features).features == features


def test_features_match_the_anchor(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    assert ours.features is not None
    assert ours.features.to_dict() == theirs.features.to_dict()
    assert ours.column_names == theirs.column_names
    # After map, both stop claiming to know the features unless told.
    assert ours.map(_with_length).features is None
    assert theirs.map(_with_length).features is None


@pytest.mark.parametrize("axis", [0, 1])
def test_concatenate_matches_the_anchor(anchor: ModuleType, parquet_dir: Path, axis: int) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    if axis == 0:
        mine = our_concatenate([ours.take(30), ours.skip(100), ours.shard(3, 1)])
        other = anchor.concatenate_datasets([theirs.take(30), theirs.skip(100), theirs.shard(3, 1)])
        assert mine.num_shards == other.num_shards
    else:
        mine = our_concatenate(
            [ours.select_columns(["id"]), ours.rename_column("text", "t").remove_columns("id")],
            axis=1,
        )
        other = anchor.concatenate_datasets(
            [
                theirs.select_columns(["id"]),
                theirs.rename_column("text", "t").remove_columns("id"),
            ],
            axis=1,
        )
        assert mine.num_shards == 1
    assert list(mine) == list(other)


@pytest.mark.parametrize(
    "strategy", ["first_exhausted", "all_exhausted", "all_exhausted_without_replacement"]
)
@pytest.mark.parametrize(
    ("probabilities", "seed"), [(None, None), ([0.2, 0.5, 0.3], 0), ([0.6, 0.1, 0.3], 42)]
)
def test_interleave_matches_the_anchor(
    anchor: ModuleType,
    parquet_dir: Path,
    strategy: str,
    probabilities: list[float] | None,
    seed: int | None,
) -> None:
    """With probabilities and a seed, the same rows: both draw with numpy's generator."""
    theirs, ours = _both(anchor, parquet_dir)
    mine = our_interleave(
        [ours.take(7), ours.skip(100), ours.shard(3, 1).take(12)],
        probabilities=probabilities,
        seed=seed,
        stopping_strategy=strategy,
    )
    other = anchor.interleave_datasets(
        [theirs.take(7), theirs.skip(100), theirs.shard(3, 1).take(12)],
        probabilities=probabilities,
        seed=seed,
        stopping_strategy=strategy,
    )
    assert list(mine) == list(other)
    assert mine.num_shards == other.num_shards


def test_interleave_num_shards_is_the_smallest(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    mine = our_interleave([ours, ours.shard(3, 0)])
    other = anchor.interleave_datasets([theirs, theirs.shard(3, 0)])
    assert mine.num_shards == other.num_shards == 1


def test_iter_batches_match_the_anchor(anchor: ModuleType, parquet_dir: Path) -> None:
    theirs, ours = _both(anchor, parquet_dir)
    assert list(ours.iter(batch_size=17)) == list(theirs.iter(batch_size=17))
    assert list(ours.iter(batch_size=17, drop_last_batch=True)) == list(
        theirs.iter(batch_size=17, drop_last_batch=True)
    )
    ours_arrow = [t.to_pydict() for t in ours.with_format("arrow").iter(batch_size=50)]
    theirs_arrow = [t.to_pydict() for t in theirs.with_format("arrow").iter(batch_size=50)]
    assert ours_arrow == theirs_arrow


def test_map_style_to_iterable_matches_the_anchor(anchor: ModuleType) -> None:
    from dagster_ds import Dataset

    data = {"a": list(range(23)), "b": [f"v{i}" for i in range(23)]}
    ours = Dataset.from_dict(data).to_iterable_dataset(num_shards=4)
    theirs = anchor.Dataset.from_dict(data).to_iterable_dataset(num_shards=4)
    assert ours.num_shards == theirs.num_shards
    for index in range(4):
        assert list(ours.shard(4, index)) == list(theirs.shard(4, index))
    assert list(ours.skip(3).take(9)) == list(theirs.skip(3).take(9))


def test_from_generator_shards_like_the_anchor(anchor: ModuleType) -> None:
    def rows(shards: list[int], size: int) -> Any:
        for shard in shards:
            for i in range(size):
                yield {"shard": shard, "i": i}

    kwargs = {"shards": [0, 1, 2, 3, 4], "size": 3}
    ours = IterableDataset.from_generator(rows, gen_kwargs=kwargs)
    theirs = anchor.IterableDataset.from_generator(rows, gen_kwargs=kwargs)
    assert ours.num_shards == theirs.num_shards == 5
    assert list(ours) == list(theirs)
    assert list(ours.shard(2, 1)) == list(theirs.shard(2, 1))
    assert list(ours.shard(2, 0, contiguous=False)) == list(theirs.shard(2, 0, contiguous=False))


# -- where we deliberately differ ------------------------------------------------


def test_deliberate_difference_resume_keeps_the_shuffle_buffer(
    anchor: ModuleType, parquet_dir: Path
) -> None:
    """The anchor refills its buffer from new rows on resume; we keep the buffered rows."""
    theirs, ours = _both(anchor, parquet_dir)
    for dataset, exact in ((ours, True), (theirs, False)):
        shuffled = dataset.shuffle(seed=7, buffer_size=20)
        full = [row["id"] for row in shuffled]
        iterator = iter(shuffled)
        head = [next(iterator)["id"] for _ in range(30)]
        state = shuffled.state_dict()
        shuffled.load_state_dict(state)
        rest = [row["id"] for row in shuffled]
        assert (head + rest == full) is exact
        if not exact:
            # The anchor loses the buffered rows: some examples never come back.
            assert len(set(head + rest)) < len(full)


def test_deliberate_difference_epoch_keeps_unshuffled_order(
    anchor: ModuleType, parquet_dir: Path
) -> None:
    """Without shuffle, our order ignores the epoch; the anchor 5.x reorders the shards."""
    theirs, ours = _both(anchor, parquet_dir)
    first_ours, first_theirs = list(ours), list(theirs)
    for epoch in range(1, 6):
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == first_ours
        if list(theirs) != first_theirs:
            break
    else:
        pytest.fail("the anchor was expected to reorder shards for some epoch")


def test_deliberate_difference_map_outputs_need_the_same_keys(
    anchor: ModuleType, parquet_dir: Path
) -> None:
    """The anchor yields ragged examples; we build one Arrow batch, so keys must agree."""
    from dagster_ds.errors import TransformOutputError

    theirs, ours = _both(anchor, parquet_dir)

    def ragged(example: dict[str, Any]) -> dict[str, Any]:
        return {"even": True} if example["id"] % 2 == 0 else {}

    assert len(list(theirs.map(ragged).take(4))) == 4
    with pytest.raises(TransformOutputError, match="same keys"):
        list(ours.map(ragged).take(4))


def test_deliberate_difference_shuffle_buffer_algorithm(anchor: ModuleType) -> None:
    """We replace one buffered row per new row (the documented algorithm); the anchor 5.x
    shuffles a full buffer and yields half of it at once."""
    data = {"a": list(range(1000))}
    ours = [r["a"] for r in IterableDataset.from_dict(data).shuffle(seed=0, buffer_size=100)]
    theirs_ds = anchor.Dataset.from_dict(data).to_iterable_dataset()
    theirs = [r["a"] for r in theirs_ds.shuffle(seed=0, buffer_size=100)]
    assert sorted(ours) == sorted(theirs) == list(range(1000))
    # Ours: the k-th example is one of the first 100 + k rows, and new rows come out early.
    assert all(value < 100 + k for k, value in enumerate(ours[:900]))
    assert max(ours[:50]) >= 100
    # The anchor: the first 50 examples are half of the first full buffer.
    assert max(theirs[:50]) < 100
