"""push_to_hub: dagster_ds vs datasets, 1M rows as 4 Parquet shards to a local Hub, in one run.

The local Hub (``dagster-ds hub serve``) runs in its own process. Each round pushes
fresh data (the ids are shifted, so no file is already on the Hub) to a new
repository with each library, alternating which goes first; the median of the
rounds is reported. A last row times pushing the same data again: ours finds the
fingerprint in the card and makes no commit; the anchor rewrites the shards and
commits (its uploads are skipped, as the blobs are already stored).
A second table counts the Parquet files and bytes each refresh uploads (blobs new to
the repository) for a dataset of 100 JSON Lines files: first push, unchanged re-push,
then one file appended and pushed again, ours and the anchor's.
Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_push.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = Path(tempfile.mkdtemp(prefix="bench-push-"))
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
sys.path.insert(0, str(HERE))

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


def uploaded(api: object, repo_id: str, before: dict[str, int]) -> tuple[int, int, dict[str, int]]:
    """Parquet files and bytes new to ``repo_id`` since ``before`` (sha256 to size), and now."""
    tree = api.list_repo_tree(repo_id, recursive=True, repo_type="dataset")  # type: ignore[attr-defined]
    now = {e.lfs.sha256: e.size for e in tree if e.path.endswith(".parquet") and e.lfs}
    new = {sha: size for sha, size in now.items() if sha not in before}
    return len(new), sum(new.values()), now


def refresh_costs(endpoint: str) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Files and bytes uploaded per refresh: (case, anchor's, ours)."""
    import datasets
    from huggingface_hub import HfApi

    from dagster_ds import load_dataset

    api = HfApi(endpoint=endpoint, token=TOKEN)
    source = WORK / "refresh-source"
    source.mkdir()
    for number in range(REFRESH_FILES):
        write_source(source, number)

    def files() -> list[str]:
        return sorted(str(path) for path in source.glob("*.jsonl"))

    def push_ours() -> None:
        ds = load_dataset("json", data_files=files(), split="train")
        ds.push_to_hub("user/refresh-ours", token=TOKEN, endpoint=endpoint)

    def push_anchor() -> None:
        ds = datasets.load_dataset("json", data_files=files(), split="train")
        ds.push_to_hub("user/refresh-anchor", token=TOKEN)

    seen = {"ours": {}, "anchor": {}}
    rows: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
    for case in ("first push", "unchanged re-push", f"append 1 of {REFRESH_FILES} files"):
        if case.startswith("append"):
            write_source(source, REFRESH_FILES)
        costs: dict[str, tuple[int, int]] = {}
        for name, push in (("ours", push_ours), ("anchor", push_anchor)):
            push()
            count, size, seen[name] = uploaded(api, f"user/refresh-{name}", seen[name])
            costs[name] = (count, size)
        rows.append((case, costs["anchor"], costs["ours"]))
    return rows


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
    print(
        f"\nUploaded per refresh ({REFRESH_FILES} JSON Lines files of {REFRESH_ROWS:,} rows; "
        "Parquet blobs new to the repository)"
    )
    print(f"{'refresh':<26} {'datasets files':>15} {'bytes':>12} {'ours files':>11} {'bytes':>12}")
    for case, (anchor_files, anchor_bytes), (our_files, our_bytes) in refreshes:
        print(f"{case:<26} {anchor_files:>15} {anchor_bytes:>12,} {our_files:>11} {our_bytes:>12,}")


if __name__ == "__main__":
    main()
