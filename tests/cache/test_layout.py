"""Names under a store's root: what a ``quarantine/`` item's name says."""

from __future__ import annotations

import datetime
import time

from dagster_ds.cache._layout import make_quarantine_name, quarantined_at

KEY = "ab" * 16


def test_a_quarantine_name_says_when_to_the_microsecond() -> None:
    # Readers compare it with the creation time of the entry a record names: an entry
    # quarantined in the second it was made must still count as quarantined after it.
    before = time.time()
    moment = quarantined_at(make_quarantine_name(KEY))
    after = time.time()
    assert moment is not None
    assert before - 1e-6 <= moment <= after + 1e-6


def test_a_name_of_an_earlier_release_counts_as_the_end_of_its_second() -> None:
    second = datetime.datetime(2026, 12, 3, 10, 10, 10, tzinfo=datetime.UTC).timestamp()
    moment = quarantined_at(f"{KEY}-20261203T101010Z-abcd1234")
    assert moment is not None
    assert second + 0.999 < moment < second + 1


def test_other_names_have_no_moment() -> None:
    assert quarantined_at(f"{KEY}-yesterday-abcd1234") is None
    assert quarantined_at("manifest.json") is None
