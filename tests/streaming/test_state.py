"""Exact resume: state_dict at any example of any pipeline gives back exactly the rest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import IterableDataset, concatenate_datasets, interleave_datasets, load_dataset
from dagster_ds.errors import InvalidStateError

from .conftest import make_table, numbers

# -- random pipelines ------------------------------------------------------------


def _double(example: dict[str, Any]) -> dict[str, Any]:
    return {"a": example["a"] * 2}


def _tag(example: dict[str, Any], index: int) -> dict[str, Any]:
    return {"tag": f"{example['b']}#{index}"}


def _halve_batch(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a": [v // 2 for v in batch["a"]]}


def _repeat_batch(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a": [v for v in batch["a"] for _ in range(2)]}


def _keep(example: dict[str, Any]) -> bool:
    return example["a"] % 3 != 1


def _keep_batch(batch: dict[str, list[Any]], indices: list[int]) -> list[bool]:
    return [(v + i) % 4 != 0 for v, i in zip(batch["a"], indices, strict=True)]


def _generated(shards: list[int], size: int) -> Iterator[dict[str, Any]]:
    for shard in shards:
        for i in range(size):
            yield {"a": shard * 100 + i, "b": f"g{shard}.{i}"}


Op = tuple[Any, ...]

OPS = st.one_of(
    st.tuples(st.just("map")),
    st.tuples(st.just("map_indices")),
    st.tuples(st.just("map_batched"), st.integers(1, 9)),
    st.tuples(st.just("map_more_rows"), st.integers(1, 6)),
    st.tuples(st.just("filter")),
    st.tuples(st.just("filter_batched"), st.integers(1, 9)),
    st.tuples(st.just("take"), st.integers(0, 40)),
    st.tuples(st.just("skip"), st.integers(0, 20)),
    st.tuples(st.just("shuffle"), st.integers(0, 3), st.integers(1, 12)),
    st.tuples(st.just("batch"), st.integers(1, 5)),
    st.tuples(st.just("rename")),
    st.tuples(st.just("shard"), st.integers(1, 3), st.integers(0, 2), st.booleans()),
)


def _apply(dataset: IterableDataset, op: Op) -> IterableDataset:
    kind = op[0]
    names = dataset.column_names or []
    if "a" not in names or "b" not in names:
        return dataset  # operators below need the base columns
    if kind == "map":
        return dataset.map(_double)
    if kind == "map_indices":
        return dataset.map(_tag, with_indices=True).remove_columns("tag")
    if kind == "map_batched":
        return dataset.map(_halve_batch, batched=True, batch_size=op[1], features=dataset.features)
    if kind == "map_more_rows":
        return dataset.map(
            _repeat_batch, batched=True, batch_size=op[1], remove_columns=["a", "b"]
        ).map(lambda x: {"b": str(x["a"])})
    if kind == "filter":
        return dataset.filter(_keep)
    if kind == "filter_batched":
        return dataset.filter(_keep_batch, batched=True, batch_size=op[1], with_indices=True)
    if kind == "take":
        return dataset.take(op[1])
    if kind == "skip":
        return dataset.skip(op[1])
    if kind == "shuffle":
        return dataset.shuffle(seed=op[1], buffer_size=op[2])
    if kind == "batch":
        return dataset.batch(op[1]).map(lambda x: {"a": sum(x["a"]), "b": ",".join(x["b"])})
    if kind == "rename":
        return dataset.rename_column("a", "x").rename_column("x", "a")
    num_shards, index, contiguous = op[1], op[2] % op[1], op[3]
    return dataset.shard(num_shards, index, contiguous)


BASES = st.one_of(
    st.tuples(st.just("dict"), st.integers(0, 60), st.integers(1, 4)),
    st.tuples(st.just("generator"), st.integers(1, 4), st.integers(0, 15)),
)


def _base(spec: tuple[Any, ...]) -> IterableDataset:
    if spec[0] == "dict":
        rows, shards = spec[1], min(spec[2], max(spec[1], 1))
        return numbers(rows, shards)
    kwargs = {"shards": list(range(spec[1])), "size": spec[2]}
    return IterableDataset.from_generator(_generated, gen_kwargs=kwargs)


@st.composite
def pipelines(draw: st.DrawFn) -> IterableDataset:
    dataset = _base(draw(BASES))
    for op in draw(st.lists(OPS, max_size=4)):
        dataset = _apply(dataset, op)
    combine = draw(st.sampled_from(["none", "none", "concat", "interleave"]))
    if combine != "none":
        other = _base(draw(BASES))
        for op in draw(st.lists(OPS, max_size=2)):
            other = _apply(other, op)
        if other.column_names != dataset.column_names:
            return dataset
        if combine == "concat":
            dataset = concatenate_datasets([dataset, other])
        else:
            strategy = draw(
                st.sampled_from(
                    ["first_exhausted", "all_exhausted", "all_exhausted_without_replacement"]
                )
            )
            probabilities = draw(st.sampled_from([None, [0.3, 0.7]]))
            dataset = interleave_datasets(
                [dataset, other], probabilities=probabilities, seed=1, stopping_strategy=strategy
            )
        for op in draw(st.lists(OPS, max_size=2)):
            dataset = _apply(dataset, op)
    return dataset


def _resume_from(dataset: IterableDataset, state: dict[str, Any]) -> list[Any]:
    dataset.load_state_dict(json.loads(json.dumps(state)))
    return list(dataset)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines(), st.data())
def test_resume_at_any_example_gives_exactly_the_rest(
    dataset: IterableDataset, data: st.DataObject
) -> None:
    full = list(dataset)
    stop = data.draw(st.integers(0, len(full)), label="checkpoint")
    iterator = iter(dataset)
    head = [next(iterator) for _ in range(stop)]
    state = dataset.state_dict()
    assert head == full[:stop]
    assert _resume_from(dataset, state) == full[stop:]
    # A second checkpoint, taken while resuming, works as well.
    more = data.draw(st.integers(0, len(full) - stop), label="second checkpoint")
    iterator = iter(dataset)
    _ = [next(iterator) for _ in range(more)]
    assert _resume_from(dataset, dataset.state_dict()) == full[stop + more :]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines(), st.integers(1, 7), st.data())
def test_resume_between_batches_of_iter(
    dataset: IterableDataset, batch_size: int, data: st.DataObject
) -> None:
    full = list(dataset.iter(batch_size=batch_size))
    stop = data.draw(st.integers(0, len(full)), label="checkpoint")
    iterator = dataset.iter(batch_size=batch_size)
    head = [next(iterator) for _ in range(stop)]
    state = json.loads(json.dumps(dataset.state_dict()))
    dataset.load_state_dict(state)
    assert head + list(dataset.iter(batch_size=batch_size)) == full


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 3000),
    st.integers(0, 3),
    st.sampled_from(["plain", "map", "interleave", "batched"]),
    st.data(),
)
def test_resume_with_full_shuffle_buffers(
    buffer_size: int, seed: int, shape: str, data: st.DataObject
) -> None:
    """Thousands of rows, so checkpoints fall while the buffer holds rows (and while draining)."""
    dataset = numbers(4000, num_shards=5).shuffle(seed=seed, buffer_size=buffer_size)
    if shape == "map":
        dataset = dataset.map(_tag, with_indices=True).filter(_keep)
    elif shape == "interleave":
        other = numbers(1500, num_shards=2).shuffle(seed=seed + 1, buffer_size=700)
        dataset = interleave_datasets([dataset, other], stopping_strategy="all_exhausted")
    elif shape == "batched":
        dataset = dataset.map(_halve_batch, batched=True, batch_size=333).shuffle(
            seed=seed, buffer_size=50
        )
    full = list(dataset)
    stop = data.draw(st.integers(0, len(full)), label="checkpoint")
    iterator = iter(dataset)
    head = [next(iterator) for _ in range(stop)]
    assert head + _resume_from(dataset, dataset.state_dict()) == full


# -- files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parquet_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = tmp_path_factory.mktemp("resume-parquet")
    paths = []
    for index in range(3):
        path = folder / f"part-{index}.parquet"
        pq.write_table(make_table(index * 50, 50), path, row_group_size=8)
        paths.append(str(path))
    return paths


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_resume_over_parquet_files_with_filters(
    parquet_files: list[str], data: st.DataObject
) -> None:
    dataset = load_dataset(
        "parquet",
        data_files=parquet_files,
        split="train",
        streaming=True,
        filters=[("label", "!=", 1)],
        columns=["id", "text", "label"],
    )
    if data.draw(st.booleans(), label="reshard"):
        dataset = dataset.reshard()
    dataset = dataset.shuffle(seed=data.draw(st.integers(0, 5)), buffer_size=9).take(70)
    full = list(dataset)
    stop = data.draw(st.integers(0, len(full)), label="checkpoint")
    iterator = iter(dataset)
    head = [next(iterator) for _ in range(stop)]
    assert head + _resume_from(dataset, dataset.state_dict()) == full


# -- the state itself ------------------------------------------------------------------


def test_state_is_plain_json_with_the_shuffle_buffer_inside() -> None:
    dataset = numbers(3000, num_shards=4).shuffle(seed=3, buffer_size=10)
    iterator = iter(dataset)
    for _ in range(1500):
        next(iterator)
    state = dataset.state_dict()
    assert json.loads(json.dumps(state)) == state
    assert state["version"] == 1
    assert state["epoch"] == 0
    text = json.dumps(state)
    assert '"buffer": "' in text  # base64 Arrow IPC of the buffered rows


def test_state_before_iterating_resumes_from_the_start() -> None:
    dataset = numbers(10)
    state = dataset.state_dict()
    list(dataset)
    dataset.load_state_dict(state)
    assert [row["a"] for row in dataset] == list(range(10))


def test_state_of_a_finished_iteration_resumes_to_nothing() -> None:
    dataset = numbers(10, num_shards=2).shuffle(seed=0, buffer_size=4)
    list(dataset)
    dataset.load_state_dict(dataset.state_dict())
    assert list(dataset) == []


def test_state_applies_to_its_epoch_only() -> None:
    dataset = numbers(20, num_shards=2).shuffle(seed=1, buffer_size=5)
    dataset.set_epoch(1)
    epoch_one = list(dataset)
    iterator = iter(dataset)
    head = [next(iterator) for _ in range(7)]
    state = dataset.state_dict()
    dataset.load_state_dict(state)
    assert head + list(dataset) == epoch_one
    dataset.set_epoch(2)
    assert sorted(row["a"] for row in dataset) == list(range(20))  # a fresh epoch


def test_state_from_another_pipeline_is_refused() -> None:
    a = numbers(10, num_shards=2).take(5)
    b = numbers(10, num_shards=2).shuffle(seed=0)
    with pytest.raises(InvalidStateError, match="saved from the pipeline"):
        b.load_state_dict(a.state_dict())


@pytest.mark.parametrize(
    "state",
    [
        "not a dict",
        {"version": 1},
        {"version": 99, "epoch": 0, "pipeline": "x", "position": {}},
        {"version": 1, "epoch": "0", "pipeline": "x", "position": {}},
    ],
)
def test_malformed_states_are_refused(state: Any) -> None:
    with pytest.raises(InvalidStateError, match="load_state_dict"):
        numbers(3).load_state_dict(state)


def test_tampered_node_state_names_the_problem() -> None:
    dataset = numbers(30, num_shards=3).take(20)
    iterator = iter(dataset)
    for _ in range(12):  # past the first shard's batch of 10 rows
        next(iterator)
    state = dataset.state_dict()
    state["position"]["state"]["taken"] = "many"
    dataset.load_state_dict(state)
    with pytest.raises(InvalidStateError, match="take: state entry 'taken'"):
        list(dataset)


def test_checkpoint_in_the_middle_of_a_source_batch() -> None:
    """Sources yield 1,000-row batches; a checkpoint at row 1,234 is inside one."""
    dataset = numbers(3000).map(lambda x: {"c": x["a"] + 1})
    iterator = iter(dataset)
    for _ in range(1234):
        next(iterator)
    state = dataset.state_dict()
    assert state["position"]["skip"] > 0
    dataset.load_state_dict(state)
    assert [row["a"] for row in dataset] == list(range(1234, 3000))


def test_states_pointing_outside_the_pipeline_are_refused() -> None:
    dataset = numbers(30, num_shards=3)
    iterator = iter(dataset)
    for _ in range(12):
        next(iterator)
    state = dataset.state_dict()
    state["position"]["state"]["shard"] = 7
    dataset.load_state_dict(state)
    with pytest.raises(InvalidStateError, match="shard 7, but this source has 3"):
        list(dataset)

    mixed = interleave_datasets([numbers(2000), numbers(2000)])
    iterator = iter(mixed)
    for _ in range(1500):
        next(iterator)
    state = mixed.state_dict()
    state["position"]["state"]["exhausted"].append(False)
    mixed.load_state_dict(state)
    with pytest.raises(InvalidStateError, match="3 entries for 2 datasets"):
        list(mixed)


@pytest.mark.parametrize("stop", [0, 999, 1000, 1001, 2100])
def test_a_random_interleave_resumes_across_blocks_of_draws(stop: int) -> None:
    """Sources are drawn 1000 at a time (numpy's, as the anchor): a resume lands mid-block."""
    parts = [
        IterableDataset.from_dict({"x": list(range(start, start + 1500))}) for start in (0, 10_000)
    ]
    mixed = interleave_datasets(parts, probabilities=[0.4, 0.6], seed=3)
    full = list(mixed)
    iterator = iter(mixed)
    head = [next(iterator) for _ in range(stop)]
    state = mixed.state_dict()
    assert head + _resume_from(mixed, state) == full
