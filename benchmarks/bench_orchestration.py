"""What a scheduled refresh costs when nothing changed: dagster_ds vs plain Dagster, two data sizes.

Run with ``make bench`` (or ``python benchmarks/bench_orchestration.py``). Three runs of
the same graph (a source and four assets, three asset checks), in one process, on one
persistent instance:

- ``dagster_ds, all skipped``: the example pipeline (definitions/) materialized again
  with nothing changed: the source observed, every transform skipped by fingerprint,
  both Hub pushes skipped (the embedded local Hub is started for the run);
- ``plain dagster, recompute``: the same transforms as plain ``@dg.asset`` functions,
  which recompute every run (caching off), store through the same IO manager and
  push through the same resource;
- ``bare materialize``: trivial assets and checks of the same shape (Dagster's fixed
  cost of a run).

Target: ``all skipped`` costs the bare run plus under 50 ms per asset, at both sizes
(the shipped corpus, and the same paragraphs ten times).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for name in ("HF_HUB_DISABLE_XET", "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_DISABLE_PROGRESS_BARS"):
    os.environ.setdefault(name, "1")
os.environ.setdefault("DAGSTER_DS_DISABLE_PROGRESS_BARS", "1")

import dagster as dg  # noqa: E402
from _timing import best_of  # noqa: E402

from dagster_ds import Dataset  # noqa: E402
from dagster_ds.cache import caching_disabled  # noqa: E402
from dagster_ds.orchestration import (  # noqa: E402
    DatasetIOManager,
    HubResource,
    HubTarget,
    dataset_source,
)
from definitions import pipeline  # noqa: E402
from definitions.text import clean_example, is_prose, is_test_topic, tokenize_example  # noqa: E402

REPEAT = 9
# Dagster's console logger prints every event; only warnings, for every kind of run alike.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
ASSETS = 5  # python_docs, paragraphs, tokenized, train, test


def _corpus(folder: Path, copies: int) -> Path:
    """The shipped corpus, ``copies`` times (distinct ids), as one JSON Lines file."""
    rows = [json.loads(line) for line in pipeline.DATA_FILE.read_text().splitlines()]
    path = folder / f"corpus-x{copies}.jsonl"
    with path.open("w") as file:
        for copy in range(copies):
            for row in rows:
                file.write(json.dumps({**row, "id": f"{copy}:{row['id']}"}) + "\n")
    return path


def _dataset_ds(data: Path) -> list[Any]:
    source = dataset_source("python_docs", "json", data_files=str(data), group_name=pipeline.GROUP)
    return [source, pipeline.paragraphs, pipeline.tokenized, pipeline.train, pipeline.test]


def _plain(data: Path) -> list[Any]:
    source = dataset_source("python_docs", "json", data_files=str(data))

    @dg.asset
    def paragraphs(python_docs: Dataset) -> Dataset:
        with caching_disabled():
            return python_docs.map(clean_example).filter(is_prose).remove_columns(["is_code"])

    @dg.asset
    def tokenized(paragraphs: Dataset) -> Dataset:
        with caching_disabled():
            return paragraphs.map(tokenize_example)

    @dg.asset
    def train(tokenized: Dataset, hub: HubResource) -> Dataset:
        with caching_disabled():
            split = tokenized.filter(lambda example: not is_test_topic(example))
        hub.push(split, HubTarget("bench/plain", split="train"))
        return split

    @dg.asset
    def test(tokenized: Dataset, hub: HubResource) -> Dataset:
        with caching_disabled():
            split = tokenized.filter(is_test_topic)
        hub.push(split, HubTarget("bench/plain", split="test"))
        return split

    return [source, paragraphs, tokenized, train, test]


def _bare() -> list[Any]:
    @dg.asset
    def python_docs() -> int:
        return 1

    @dg.asset
    def paragraphs(python_docs: int) -> int:
        return python_docs

    @dg.asset
    def tokenized(paragraphs: int) -> int:
        return paragraphs

    @dg.asset
    def train(tokenized: int) -> int:
        return tokenized

    @dg.asset
    def test(tokenized: int) -> int:
        return tokenized

    return [python_docs, paragraphs, tokenized, train, test]


def _bare_checks() -> list[dg.AssetChecksDefinition]:
    def check(asset: str, name: str) -> dg.AssetChecksDefinition:
        @dg.asset_check(asset=asset, name=name)
        def _check() -> dg.AssetCheckResult:
            return dg.AssetCheckResult(passed=True)

        return _check

    return [check("tokenized", "schema"), check("train", "row_count"), check("test", "row_count")]


def _runner(
    assets: Sequence[Any],
    checks: Sequence[Any],
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
) -> Callable[[], None]:
    def run() -> None:
        result = dg.materialize(
            [*assets, *checks],
            instance=instance,
            resources=resources,
            selection=assets,
            run_config=QUIET,
        )
        assert result.success

    return run


def _temporary_folder() -> Path:
    shm = Path("/dev/shm")
    return Path(
        tempfile.mkdtemp(prefix="bench-orch-", dir=shm if os.access(shm, os.W_OK) else None)
    )


def measure(copies: int) -> dict[str, float]:
    """Median seconds of each kind of run, for the corpus repeated ``copies`` times."""
    folder = _temporary_folder()
    os.environ["DAGSTER_DS_CACHE"] = str(folder / "cache")
    kinds = {
        "dagster_ds, all skipped": (
            _dataset_ds,
            pipeline.checks,
            {"io_manager": DatasetIOManager(base_dir=str(folder / "ds"))},
        ),
        "plain dagster, recompute": (
            _plain,
            [],
            {"io_manager": DatasetIOManager(base_dir=str(folder / "plain"))},
        ),
        "bare materialize": (lambda _: _bare(), _bare_checks(), {}),
    }
    try:
        data = _corpus(folder, copies)
        with contextlib.ExitStack() as stack:
            runs: dict[str, Callable[[], None]] = {}
            for index, (label, (assets, checks, resources)) in enumerate(kinds.items()):
                home = folder / f"home-{index}"  # an instance per kind: same asset keys
                home.mkdir()
                instance = stack.enter_context(dg.instance_for_test(temp_dir=str(home)))
                hub = {"hub": HubResource(local_data_dir=str(folder / f"hub-{index}"))}
                runs[label] = _runner(assets(data), checks, instance, {**resources, **hub})
                runs[label]()  # the first run materializes; the measured runs find nothing changed
            samples: dict[str, list[float]] = {label: [] for label in runs}
            for _ in range(REPEAT):  # interleaved, so that the machine's drift hits all alike
                for label, run in runs.items():
                    samples[label].append(best_of(run, 1))
        return {label: statistics.median(values) for label, values in samples.items()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    print(f"Refresh with nothing changed: {ASSETS} assets, 3 checks, median of {REPEAT} runs")
    print(f"{'corpus':<22} {'run':<26} {'time':>9} {'over bare':>10} {'per asset':>10}")
    paragraphs = len(pipeline.DATA_FILE.read_text().splitlines())
    for copies in (1, 10):
        rows = paragraphs * copies
        times = measure(copies)
        bare = times["bare materialize"]
        for label, seconds in times.items():
            extra = seconds - bare
            print(
                f"{f'{rows:,} paragraphs':<22} {label:<26} {seconds * 1000:>7.0f}ms"
                f" {extra * 1000:>8.0f}ms {extra / ASSETS * 1000:>8.1f}ms"
            )


if __name__ == "__main__":
    main()
