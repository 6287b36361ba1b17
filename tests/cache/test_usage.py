"""What `CacheStore.ls` reports, and what it costs on S3."""

from __future__ import annotations

import datetime
from pathlib import Path

from dagster_ds.cache import CacheStore
from tests.conftest import s3_requests

from .conftest import fingerprint


def _add(store: CacheStore, numbers: range) -> None:
    for number in numbers:
        store.get_or_create(fingerprint(number), lambda w: w.write_bytes("a.bin", b"1")).close()


def test_on_s3_ls_costs_the_listing_and_one_read_per_entry(s3_endpoint: str) -> None:
    store = CacheStore("s3://datasets/ls", storage_options={"endpoint_url": s3_endpoint})
    costs: list[int] = []
    for numbers in (range(1, 4), range(4, 10)):
        _add(store, numbers)  # (their keys share one prefix folder)
        with s3_requests() as requests:
            infos = store.ls()
        assert len(infos) == numbers.stop - 1
        costs.append(len(requests.made()))
    # Six more entries, six more requests: each one's manifest, nothing else per entry.
    assert costs[1] - costs[0] == 6, costs


def test_an_entry_of_an_earlier_release_counts_as_used_when_created(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "cache")
    _add(store, range(1, 2))
    # An earlier release wrote a last-used time next to the manifest: no longer read.
    (tmp_path / "cache" / "objects" / "00" / fingerprint(1) / "last-used").write_text(
        str(4_000_000_000 * 10**9)
    )
    (info,) = store.ls()
    assert info.last_used == info.created
    assert info.last_used < datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC)
