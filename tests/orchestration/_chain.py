"""Chained dataset assets for the orchestration tests, logging each function call to a file.

The log file is named by ``$DAGSTER_DS_TEST_CALLS``, so calls are counted in
every process (the multiprocess executor, subprocesses).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import dagster as dg

from dagster_ds import Dataset, load_dataset
from dagster_ds.orchestration import dataset_asset, dataset_source

CALLS_ENV = "DAGSTER_DS_TEST_CALLS"


def record(name: str) -> None:
    with open(os.environ[CALLS_ENV], "a", encoding="utf-8") as file:
        file.write(name + "\n")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def calls(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def lower(example: dict[str, str]) -> dict[str, str]:
    return {"text": example["text"].strip().lower()}


class Chain(NamedTuple):
    docs: dg.SourceAsset
    cleaned: dg.AssetsDefinition
    tokens: dg.AssetsDefinition
    counts: dg.AssetsDefinition

    @property
    def all(self) -> list[dg.AssetsDefinition | dg.SourceAsset]:
        return [self.docs, self.cleaned, self.tokens, self.counts]


def build(
    data_files: str,
    *,
    separator: str = " ",
    condition: dg.AutomationCondition | None = None,
) -> Chain:
    """docs (source) -> cleaned -> tokens -> counts; ``separator`` only changes ``tokens``."""
    docs = dataset_source("docs", "json", data_files=data_files)

    @dataset_asset(automation_condition=condition)
    def cleaned(docs: Dataset) -> Dataset:
        record("cleaned")
        return docs.map(lower).filter(lambda example: len(example["text"]) > 1)

    @dataset_asset(automation_condition=condition)
    def tokens(cleaned: Dataset) -> Dataset:
        record("tokens")
        return cleaned.map(lambda example: {"tokens": example["text"].split(separator)})

    @dataset_asset(automation_condition=condition)
    def counts(tokens: Dataset) -> Dataset:
        record("counts")
        return tokens.map(lambda example: {"num_tokens": len(example["tokens"])})

    return Chain(docs, cleaned, tokens, counts)


# Environment variables naming the data and the storage of a test project.
DATA_ENV = "DAGSTER_DS_TEST_DATA"
STORAGE_ENV = "DAGSTER_DS_TEST_STORAGE"


def text_and_label_assets(
    files: list[str], raw_io_manager_key: str = "io_manager"
) -> list[dg.AssetsDefinition]:
    """``raw`` (the JSON Lines ``files``, a shard each) and ``lengths`` (``n_chars`` of ``text``).

    ``n_chars`` reads only ``text`` and records ``n_chars:<rows>`` per batch: a change of
    ``label`` alone reuses its outputs by their read columns. ``raw_io_manager_key``: where
    ``raw`` is stored (another store than ``lengths``'s: ``lengths`` adopts its shards).
    """

    @dataset_asset(fingerprint_inputs=files, io_manager_key=raw_io_manager_key)
    def raw() -> Dataset:
        return load_dataset("json", data_files=files, split="train", shard_bytes=0)

    return [raw, _lengths()]


def text_and_label_source(data_files: str) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    """``raw``, a `dataset_source` of the JSON Lines ``data_files``, and ``lengths`` as above."""
    return [dataset_source("raw", "json", data_files=data_files), _lengths()]


def _lengths() -> dg.AssetsDefinition:
    @dataset_asset
    def lengths(raw: Dataset) -> Dataset:
        def n_chars(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
            record(f"n_chars:{len(batch['text'])}")
            return {"n_chars": [len(text) for text in batch["text"]]}

        return raw.map(n_chars, batched=True)

    return lengths


def text_and_label_filter_assets(files: list[str]) -> list[dg.AssetsDefinition]:
    """``raw`` (as in `text_and_label_assets`) and ``kept``: its rows whose ``text`` ends not in 3.

    The filter ``not_three`` reads only ``text`` and records ``not_three:<rows>`` per batch.
    """

    @dataset_asset(fingerprint_inputs=files)
    def raw() -> Dataset:
        return load_dataset("json", data_files=files, split="train", shard_bytes=0)

    @dataset_asset
    def kept(raw: Dataset) -> Dataset:
        def not_three(batch: dict[str, list[Any]]) -> list[bool]:
            record(f"not_three:{len(batch['text'])}")
            return [not text.endswith("3") for text in batch["text"]]

        return raw.filter(not_three, batched=True)

    return [raw, kept]


def write_label_files(folder: Path, files: int = 3) -> list[str]:
    """``files`` JSON Lines files of 5 rows (``text``, ``label`` 0), a shard each: their paths."""
    for index in range(files):
        write_jsonl(
            folder / f"part-{index}.jsonl",
            [{"text": f"t{index}-{i}", "label": 0} for i in range(5)],
        )
    return sorted(str(path) for path in folder.glob("*.jsonl"))


def correct_labels(folder: Path, index: int = 1) -> None:
    """The labels of file ``index`` (of `write_label_files`) set to 1, its texts unchanged."""
    write_jsonl(
        folder / f"part-{index}.jsonl", [{"text": f"t{index}-{i}", "label": 1} for i in range(5)]
    )
