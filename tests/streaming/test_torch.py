"""torch DataLoader workers: shards split across workers, every example once per epoch."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from dagster_ds import IterableDataset

from .conftest import numbers

# Workers are forked: keep their count within the machine's cores.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


@pytest.fixture(scope="module")
def torch() -> Any:
    """torch, imported when a test of this file runs first (not when the suite is collected)."""
    return pytest.importorskip("torch")


def _ids(loader: Any) -> list[int]:
    return [int(example["a"]) for example in loader]


def test_a_dataset_is_a_torch_iterable_dataset(torch: Any) -> None:
    assert isinstance(numbers(3), torch.utils.data.IterableDataset)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_every_example_once_per_epoch(torch: Any, num_workers: int) -> None:
    ds = numbers(90, num_shards=6).shuffle(seed=3, buffer_size=8)
    seen_orders = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = _ids(torch.utils.data.DataLoader(ds, num_workers=num_workers, batch_size=None))
        assert Counter(ids) == Counter(range(90))
        seen_orders.append(ids)
    assert seen_orders[0] != seen_orders[1]


def test_workers_read_disjoint_shards(torch: Any) -> None:
    ds = numbers(40, num_shards=4).map(lambda x: {"worker": torch.utils.data.get_worker_info().id})
    rows = list(torch.utils.data.DataLoader(ds, num_workers=2, batch_size=None))
    by_worker: dict[int, set[int]] = {}
    for row in rows:
        by_worker.setdefault(int(row["worker"]), set()).add(int(row["a"]) // 10)
    assert by_worker == {0: {0, 2}, 1: {1, 3}}  # shards dealt round-robin, as the anchor


def test_more_workers_than_shards_leave_some_idle(torch: Any) -> None:
    ids = _ids(
        torch.utils.data.DataLoader(numbers(10, num_shards=1), num_workers=2, batch_size=None)
    )
    assert sorted(ids) == list(range(10))


def test_torch_format_batches_through_the_default_collate(torch: Any) -> None:
    ds = numbers(10, num_shards=2).with_format("torch").select_columns(["a"])
    batches = list(torch.utils.data.DataLoader(ds, num_workers=2, batch_size=4))
    total = torch.cat([batch["a"] for batch in batches])
    assert sorted(total.tolist()) == list(range(10))
    example = next(iter(ds))
    assert isinstance(example["a"], torch.Tensor)
    batch = next(ds.iter(batch_size=3))
    assert batch["a"].tolist() == [0, 1, 2]


def test_generator_sources_split_across_workers(torch: Any) -> None:
    def rows(shards: list[int]) -> Any:
        for shard in shards:
            yield from ({"a": shard * 10 + i} for i in range(10))

    ds = IterableDataset.from_generator(rows, gen_kwargs={"shards": list(range(5))})
    assert sorted(_ids(torch.utils.data.DataLoader(ds, num_workers=2, batch_size=None))) == list(
        range(50)
    )


def test_persistent_workers_see_each_new_epoch(torch: Any) -> None:
    ds = numbers(60, num_shards=4).shuffle(seed=1, buffer_size=5)
    loader = torch.utils.data.DataLoader(
        ds, num_workers=2, batch_size=None, persistent_workers=True
    )
    orders = []
    for epoch in range(3):
        ds.set_epoch(epoch)
        ids = _ids(loader)
        assert sorted(ids) == list(range(60))
        orders.append(ids)
    assert len({tuple(order) for order in orders}) == 3
    fresh = numbers(60, num_shards=4).shuffle(seed=1, buffer_size=5)
    fresh.set_epoch(2)
    assert sorted(
        _ids(torch.utils.data.DataLoader(fresh, num_workers=2, batch_size=None))
    ) == sorted(orders[2])
    assert _ids(torch.utils.data.DataLoader(fresh, num_workers=2, batch_size=None)) == orders[2]


def _half(example: dict[str, Any]) -> dict[str, Any]:
    return {
        "h": example["a"] / 2 if example["a"] % 2 else example["a"] // 2,
        "t": f"é{example['a']}",
    }


def _keep_most(example: dict[str, Any]) -> bool:
    return example["a"] % 3 != 0


def test_fused_map_and_filter_in_workers_give_the_examples_of_one_process(torch: Any) -> None:
    ds = numbers(3000, num_shards=4).map(_half).filter(_keep_most)
    expected = {row["a"]: row for row in ds}
    loaded = list(torch.utils.data.DataLoader(ds, num_workers=2, batch_size=None))
    got = {int(row["a"]): {**row, "a": int(row["a"])} for row in loaded}
    assert len(loaded) == len(expected) == 2000
    assert got == expected
