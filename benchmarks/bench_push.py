"""push_to_hub: dagster_ds vs datasets, 1M rows as 4 Parquet shards to a local Hub, in one run.

The local Hub (``dagster-ds hub serve``) runs in its own process. Each round pushes
fresh data (the ids are shifted, so no file is already on the Hub) to a new
repository with each library, alternating which goes first; the median of the
rounds is reported. A last row times pushing the same data again: ours finds the
fingerprint in the card and makes no commit; the anchor rewrites the shards and
commits (its uploads are skipped, as the blobs are already stored).
A second table counts what each refresh uploads for 100 JSON Lines files read as a
Dataset, a filtered Dataset, a Dataset through an indices mapping (``select`` of a
list) and an IterableDataset: first push, unchanged re-push, then one file appended
and pushed again, ours and the anchor's. It counts the data files the commit adds or
rewrites, and the Parquet blobs new to the repository with their bytes (a blob the
Hub has is not sent again, whatever its path).
Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_push.py`` (``... refresh``:
the second table only).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _scratch import scratch_folder  # noqa: E402

WORK = scratch_folder("bench-push-")
# Set before huggingface_hub and datasets are imported (both read them at import).
os.environ.update(
    {
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        "DAGSTER_DS_DISABLE_PROGRESS_BARS": "1",
        "HF_HOME": str(WORK / "hf-home"),
        "HF_DATASETS_CACHE": str(WORK / "hf-cache"),
        "DAGSTER_DS_CACHE": str(WORK / "dagster_ds-cache"),
    }
)
os.environ.pop("HF_TOKEN", None)

ROWS = 1_000_000
SHARDS = 4
ROUNDS = 3
TOKEN = "bench-token"


def start_hub() -> tuple[subprocess.Popen[str], str]:
    """The local Hub in a child process, and its endpoint."""
    command = ["hub", "serve", "--data-dir", str(WORK / "hub")]
    server = subprocess.Popen(
        [sys.executable, "-c", "from dagster_ds.cli import main; main()", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("HF_ENDPOINT="):
            return server, line.strip().split("=", 1)[1]
    raise RuntimeError("the local Hub did not start")


def columns(round_number: int) -> dict[str, list[object]]:
    base = round_number * ROWS
    return {
        "id": list(range(base, base + ROWS)),
        "text": [f"row {i} of the benchmark" for i in range(base, base + ROWS)],
        "label": [i % 3 for i in range(ROWS)],
        "score": [i / 7 for i in range(ROWS)],
    }


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


REFRESH_FILES = 100
REFRESH_ROWS = 2_000


def write_source(folder: Path, number: int) -> None:
    lines = (
        f'{{"id": {number * REFRESH_ROWS + i}, "text": "file {number} row {i} of the bench"}}\n'
        for i in range(REFRESH_ROWS)
    )
    (folder / f"part-{number:04d}.jsonl").write_text("".join(lines))


def uploaded(
    api: object, repo_id: str, before: dict[str, str]
) -> tuple[int, int, int, dict[str, str]]:
    """What the last push to ``repo_id`` changed since ``before`` (Parquet path to sha256).

    Returns the paths added or rewritten (the commit's data files), the blobs new
    to the repository and their bytes (what went over the wire), and the files now.
    """
    tree = api.list_repo_tree(repo_id, recursive=True, repo_type="dataset")  # type: ignore[attr-defined]
    entries = [e for e in tree if e.path.endswith(".parquet") and e.lfs]
    now = {e.path: e.lfs.sha256 for e in entries}
    sizes = {e.lfs.sha256: e.size for e in entries}
    paths = sum(1 for path, sha in now.items() if before.get(path) != sha)
    new = {sha for sha in now.values() if sha not in set(before.values())}
    return paths, len(new), sum(sizes[sha] for sha in new), now


#: The kinds of dataset refreshed: (name, ours, anchor), each a function of the files.
KINDS: list[tuple[str, Callable[[list[str]], Any], Callable[[list[str]], Any]]] = []


def _kinds() -> None:
    import datasets

    from dagster_ds import load_dataset

    def keep(row: dict[str, Any]) -> bool:
        return row["id"] % 3 != 1

    def every_other(ds: Any) -> Any:
        return ds.select(range(0, len(ds), 2))  # a list of positions, not a range: a mapping

    KINDS.extend(
        [
            (
                "Dataset",
                lambda files: load_dataset("json", data_files=files, split="train"),
                lambda files: datasets.load_dataset("json", data_files=files, split="train"),
            ),
            (
                "Dataset.filter",
                lambda files: load_dataset("json", data_files=files, split="train").filter(keep),
                lambda files: datasets.load_dataset("json", data_files=files, split="train").filter(
                    keep
                ),
            ),
            (
                "Dataset.select(list)",
                lambda files: every_other(load_dataset("json", data_files=files, split="train")),
                lambda files: every_other(
                    datasets.load_dataset("json", data_files=files, split="train")
                ),
            ),
            (
                "IterableDataset",
                lambda files: load_dataset("json", data_files=files, split="train", streaming=True),
                lambda files: datasets.load_dataset(
                    "json", data_files=files, split="train", streaming=True
                ),
            ),
        ]
    )


Cost = tuple[int, int, int]


def refresh_costs(endpoint: str) -> list[tuple[str, str, Cost, Cost]]:
    """Per kind and refresh: (kind, case, anchor's cost, ours) as `uploaded` counts."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=TOKEN)
    _kinds()
    source = WORK / "refresh-source"
    source.mkdir()
    for number in range(REFRESH_FILES):
        write_source(source, number)

    def files() -> list[str]:
        return sorted(str(path) for path in source.glob("*.jsonl"))

    def push(name: str, kind: int, make: Callable[[list[str]], Any]) -> None:
        ds = make(files())
        repo_id = f"user/refresh-{kind}-{name}"
        if name == "ours":
            ds.push_to_hub(repo_id, token=TOKEN, endpoint=endpoint)
        else:
            ds.push_to_hub(repo_id, token=TOKEN)

    seen: dict[tuple[int, str], dict[str, str]] = {}
    rows: list[tuple[str, str, Cost, Cost]] = []
    cases = ("first push", "unchanged re-push", f"append 1 of {REFRESH_FILES} files")
    for case in cases:
        if case.startswith("append"):
            write_source(source, REFRESH_FILES)
        for kind, (label, ours, anchor) in enumerate(KINDS):
            costs: dict[str, Cost] = {}
            for name, make in (("ours", ours), ("anchor", anchor)):
                push(name, kind, make)
                repo_id = f"user/refresh-{kind}-{name}"
                *cost, seen[kind, name] = uploaded(api, repo_id, seen.get((kind, name), {}))
                costs[name] = (cost[0], cost[1], cost[2])
            rows.append((label, case, costs["anchor"], costs["ours"]))
    return rows


def print_refreshes(refreshes: list[tuple[str, str, Cost, Cost]]) -> None:
    print(
        f"\nUploaded per refresh ({REFRESH_FILES} JSON Lines files of {REFRESH_ROWS:,} rows): "
        "data files the commit adds or rewrites,\nthen the Parquet blobs new to the repository "
        "and their bytes (what goes over the wire)"
    )
    print(f"{'dataset':<21} {'refresh':<24} {'datasets':>22} {'dagster_ds':>22}")
    for label, case, anchor, ours in refreshes:
        theirs = f"{anchor[0]} / {anchor[1]} / {anchor[2]:,}"
        mine = f"{ours[0]} / {ours[1]} / {ours[2]:,}"
        print(f"{label:<21} {case:<24} {theirs:>22} {mine:>22}")


def main() -> None:
    server, endpoint = start_hub()
    os.environ["HF_ENDPOINT"] = endpoint
    try:
        import datasets

        from dagster_ds import ClassLabel, Dataset, Features, Value

        features = {
            "id": ("int64",),
            "text": ("string",),
            "score": ("float64",),
        }
        ours_features = Features(
            {name: Value(dtype) for name, (dtype,) in features.items()}
            | {"label": ClassLabel(names=["a", "b", "c"])}
        )
        anchor_features = datasets.Features(
            {name: datasets.Value(dtype) for name, (dtype,) in features.items()}
            | {"label": datasets.ClassLabel(names=["a", "b", "c"])}
        )
        ours_times: list[float] = []
        anchor_times: list[float] = []
        ours_ds = anchor_ds = None
        for number in range(ROUNDS):
            data = columns(number)
            ours_ds = Dataset.from_dict(data, features=ours_features)
            anchor_ds = datasets.Dataset.from_dict(data, features=anchor_features)
            del data

            def push_ours(ds: Dataset = ours_ds, n: int = number) -> None:
                result = ds.push_to_hub(
                    f"user/ours-{n}", num_shards=SHARDS, token=TOKEN, endpoint=endpoint
                )
                assert not result.skipped

            def push_anchor(ds: datasets.Dataset = anchor_ds, n: int = number) -> None:
                ds.push_to_hub(f"user/anchor-{n}", num_shards=SHARDS, token=TOKEN)

            order = [(push_ours, ours_times), (push_anchor, anchor_times)]
            for push, times in order if number % 2 == 0 else order[::-1]:
                times.append(timed(push))

        assert ours_ds is not None
        assert anchor_ds is not None
        last = ROUNDS - 1
        again_ours = timed(
            lambda: ours_ds.push_to_hub(
                f"user/ours-{last}", num_shards=SHARDS, token=TOKEN, endpoint=endpoint
            )
        )
        again_anchor = timed(
            lambda: anchor_ds.push_to_hub(f"user/anchor-{last}", num_shards=SHARDS, token=TOKEN)
        )
        refreshes = refresh_costs(endpoint)
    finally:
        server.terminate()
        server.wait(timeout=30)

    ours, anchor = statistics.median(ours_times), statistics.median(anchor_times)
    print(f"\npush_to_hub, {ROWS:,} rows (int64, string, ClassLabel, float64), {SHARDS} shards,")
    print(f"local Hub in another process; median of {ROUNDS} rounds (fresh data each round)")
    print(f"{'case':<34} {'datasets':>10} {'dagster_ds':>11} {'anchor/ours':>12}")
    print(f"{'first push':<34} {anchor:>9.2f}s {ours:>10.2f}s {anchor / ours:>11.2f}x")
    print(
        f"{'same data again (ours: no commit)':<34} {again_anchor:>9.2f}s {again_ours:>10.2f}s "
        f"{again_anchor / again_ours:>11.2f}x"
    )
    print(f"rounds: datasets {[round(t, 2) for t in anchor_times]}, ours "
          f"{[round(t, 2) for t in ours_times]}")  # fmt: skip
    print_refreshes(refreshes)


def refresh_only() -> None:
    """Only the refresh table (``bench_push.py refresh``)."""
    server, endpoint = start_hub()
    os.environ["HF_ENDPOINT"] = endpoint
    try:
        refreshes = refresh_costs(endpoint)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print_refreshes(refreshes)


if __name__ == "__main__":
    if sys.argv[1:] == ["refresh"]:
        refresh_only()
    else:
        main()
