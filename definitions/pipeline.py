"""The example pipeline: Python's documentation, cleaned, tokenised, split and published.

    python_docs (source: JSON Lines in definitions/data, observed by content)
      -> paragraphs   unwrap lines, drop heading rules, code blocks and short paragraphs
      -> tokenized    a plain-Python word tokenizer: tokens, num_tokens
      -> train, test  whole topics to one split or the other (a stable hash)
      -> python_docs_hub  both splits published to one Hub dataset repository in ONE
                      commit (a reader never sees a new train next to an old test)

Every transform is a `dataset_asset`: it is skipped when its fingerprint is
already stored, and `fingerprint_changed()` requests it only when its code or
a parent's fingerprint changed. Two ways to refresh: the nightly schedule (one
run: observe the source, skip what did not change), or automation: the
``observe_python_docs`` sensor hashes the source every 15 minutes and records an
observation (no run) only when its content changed, and Dagster's automation
sensor then requests only what changed. Nothing changed: no run. The published
splits carry a freshness policy: the UI flags them when no refresh has
materialized them for a day.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dagster as dg

from dagster_ds import Dataset, Features, List, Value
from dagster_ds.orchestration import (
    dataset_asset,
    dataset_source,
    fingerprint_changed,
    publish_to_hub,
    row_count_check,
    schema_check,
)
from definitions.text import clean_example, is_prose, is_test_topic, tokenize_example

DATA_FILE = Path(__file__).resolve().parent / "data" / "python_docs_paragraphs.jsonl"
GROUP = "python_docs"
# The embedded local Hub by default; the real Hub with HF_TOKEN and this variable set.
REPO_ID = os.environ.get("DAGSTER_DS_EXAMPLE_REPO", "dagster-ds/python-docs-paragraphs")
# The nightly refresh runs every 24 hours: a split older than that missed one.
FRESHNESS = dg.FreshnessPolicy.time_window(
    fail_window=timedelta(hours=26), warn_window=timedelta(hours=24)
)

python_docs = dataset_source(
    "python_docs",
    "json",
    data_files=str(DATA_FILE),
    group_name=GROUP,
    description="CPython 3.11 documentation topics, one paragraph per row (PSF License).",
)


@dataset_asset(group_name=GROUP, kinds={"python"}, automation_condition=fingerprint_changed())
def paragraphs(python_docs: Dataset) -> Dataset:
    """Prose paragraphs, unwrapped to one line (code blocks and short paragraphs dropped)."""
    cleaned = python_docs.map(clean_example)
    return cleaned.filter(is_prose).remove_columns(["is_code"])


@dataset_asset(group_name=GROUP, kinds={"python"}, automation_condition=fingerprint_changed())
def tokenized(paragraphs: Dataset) -> Dataset:
    """Each paragraph's lowercase word tokens and their count."""
    return paragraphs.map(tokenize_example)


@dataset_asset(group_name=GROUP, kinds={"python"}, automation_condition=fingerprint_changed())
def train(tokenized: Dataset) -> Dataset:
    """The training split: about 90% of the topics."""
    return tokenized.filter(lambda example: not is_test_topic(example))


@dataset_asset(group_name=GROUP, kinds={"python"}, automation_condition=fingerprint_changed())
def test(tokenized: Dataset) -> Dataset:
    """The test split: the other topics."""
    return tokenized.filter(is_test_topic)


def _must_be_fresh(asset: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The asset with the pipeline's freshness policy (shown, with its state, on its page)."""
    (fresh,) = dg.map_asset_specs(
        lambda spec: spec.replace_attributes(freshness_policy=FRESHNESS), [asset]
    )
    assert isinstance(fresh, dg.AssetsDefinition)
    return fresh


train, test = _must_be_fresh(train), _must_be_fresh(test)

python_docs_hub = publish_to_hub(
    "python_docs_hub",
    REPO_ID,
    {"train": train, "test": test},
    group_name=GROUP,
    automation_condition=fingerprint_changed(),
    freshness_policy=FRESHNESS,
)


TOKENIZED_FEATURES = Features(
    {
        "id": Value("string"),
        "topic": Value("string"),
        "paragraph": Value("int64"),
        "text": Value("string"),
        "tokens": List(Value("string")),
        "num_tokens": Value("int64"),
    }
)

checks = [
    schema_check(tokenized, TOKENIZED_FEATURES, blocking=True),
    row_count_check(train, min_rows=500),
    row_count_check(test, min_rows=50),
]
assets = [python_docs, paragraphs, tokenized, train, test, python_docs_hub]
