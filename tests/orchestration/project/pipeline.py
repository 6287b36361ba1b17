"""A user's code location: docs -> cleaned -> shouted -> counted, and cleaned -> lengths.

Only `shouted` calls `helpers.shout`. Paths come from the environment; every
function call is logged to ``$DAGSTER_DS_TEST_CALLS``.
"""

from __future__ import annotations

import os

import dagster as dg
import helpers

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source


def record(name: str) -> None:
    with open(os.environ["DAGSTER_DS_TEST_CALLS"], "a", encoding="utf-8") as file:
        file.write(name + "\n")


docs = dataset_source("docs", "json", data_files=os.environ["DAGSTER_DS_TEST_DATA"])


@dataset_asset
def cleaned(docs: Dataset) -> Dataset:
    record("cleaned")
    return docs.map(lambda example: {"text": helpers.strip(example["text"])})


@dataset_asset
def shouted(cleaned: Dataset) -> Dataset:
    record("shouted")
    return cleaned.map(lambda example: {"text": helpers.shout(example["text"])})


@dataset_asset
def counted(shouted: Dataset) -> Dataset:
    record("counted")
    return shouted.map(lambda example: {"characters": len(example["text"])})


@dataset_asset
def lengths(cleaned: Dataset) -> Dataset:
    record("lengths")
    return cleaned.map(lambda example: {"characters": len(example["text"])})


assets = [docs, cleaned, shouted, counted, lengths]
resources = {"io_manager": DatasetIOManager(base_dir=os.environ["DAGSTER_DS_TEST_STORAGE"])}
defs = dg.Definitions(assets=assets, resources=resources)


def run() -> None:
    """Materialize everything (observing the source) on the DAGSTER_HOME instance."""
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(assets, instance=instance, resources=resources, selection=assets)
    print("success" if result.success else "failure")
