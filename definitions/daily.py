"""A daily-partitioned corner of the example: documentation topics published one file a day.

    python_docs_daily   source: definitions/data/daily/<day>.jsonl, one partition per day,
                        each observed by its file's content
      -> daily_paragraphs   the same cleaning as `paragraphs`, per day

Each day is its own version in the store with its own fingerprint and data
version. Not part of the nightly refresh: the ``daily_refresh`` schedule
considers every day and runs only the days whose file or code changed
(``make demo`` materializes them all; a backfill from the UI works too).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import dataset_asset, dataset_source
from definitions.text import clean_example, is_prose

DAILY_FILES = Path(__file__).resolve().parent / "data" / "daily"
DAILY_GROUP = "python_docs_daily"
days = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")

python_docs_daily = dataset_source(
    "python_docs_daily",
    "json",
    data_files=str(DAILY_FILES / "{partition_key}.jsonl"),
    partitions_def=days,
    group_name=DAILY_GROUP,
    description="A few CPython 3.11 documentation topics a day, one file per day (PSF License).",
)


@dataset_asset(group_name=DAILY_GROUP, kinds={"python"}, partitions_def=days)
def daily_paragraphs(python_docs_daily: Dataset) -> Dataset:
    """One day's prose paragraphs, unwrapped to one line."""
    return python_docs_daily.map(clean_example).filter(is_prose).remove_columns(["is_code"])


daily_assets = [python_docs_daily, daily_paragraphs]
