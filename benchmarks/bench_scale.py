"""What a refresh costs at scale: dagster_ds vs datasets (and raw pyarrow), in new processes.

Every measured run is a new Python process (``_scale_child.py``), as a scheduled
run is, measured from here: CPU (user + sys, from ``os.wait4``: the child and
anything it waited for) and wall clock; and by the child itself: its peak RSS
(``VmHWM`` in ``/proc/self/status``; ``ru_maxrss`` would count this process's
resident set at the fork too, moto's S3 objects included) and bytes read from
``/proc/self/io`` (``rchar``: every read call, page cache included; ``read_bytes``:
what came from the disk). "work" figures leave out the imports (taken after them,
in the child; numpy, pandas, fsspec and pyarrow's readers are imported first by
every side, as the anchor imports them with itself). "own imports" figures leave out
the CPU of those common imports a side's library does not make itself (the child
imports the library first): what a process running only that pipeline costs. The
scenarios, each pickable with ``--only``:

- ``local``: ``load_dataset("json", data_files=<folder>/*.jsonl)`` -> batched ``map``
  (a Python function adding a column) -> batched ``filter``, tiny JSON Lines files of
  200 rows, N = 100, 1,000, 5,000 files (``BENCH_SCALE_MAX_FILES`` caps N), the store
  on local disk: first run, unchanged rerun, append 1 file. Opens and stats: each
  run is repeated, in a twin store, under ``strace -f --seccomp-bpf`` (its own
  overhead stays out of the other figures), counting ``open``/``openat`` and
  ``stat``/``lstat``/``fstat``/``newfstatat``/``statx`` calls between two markers
  the child makes after its imports and at its end.
- ``s3``: the same on moto's S3 server (in this process, so that it counts the
  requests, by type, from werkzeug's log), source files and store on ``s3://``,
  N = 100, 300 (and 1,000 with ``BENCH_SCALE_S3_1000=1``: slow): the plain pipeline
  (the anchor's cache is a local folder: it cannot cache on S3), and the Dagster path:
  a ``dataset_source`` and two ``dataset_asset`` (map, then filter) with
  ``DatasetIOManager(base_dir="s3://...")`` materialized with ``dg.materialize`` on a
  kept instance (``DAGSTER_HOME`` here).
  "per asset" counts the source and the two assets (3).
- ``big``: a local Parquet source of ``BENCH_SCALE_BIG_GB`` (default 4) GB in 40
  files, loaded by ``load_dataset("parquet", ...)`` into a cold store, then again in
  a new process with the source unchanged: the bytes each process read.
- ``memory``: the peak RSS of the first materialization of a ``BENCH_SCALE_S3_GB``
  (default 1) GB asset (a Parquet source, one asset with a map) with its store on
  S3, and with its store on local disk for reference.

Sources are measured once older than the racy-timestamp window (the benchmark waits
3 s after writing them): a file hashed within 2 s of its mtime is hashed again by
the next process, by design. ``--quick``: N = 100 and 300 (local), 100 (S3), 0.2 GB
and 0.1 GB. ``--json PATH`` writes the raw figures. Ends with the results as Markdown
tables. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _scale_child import END_MARKER, START_MARKER  # noqa: E402

CHILD = HERE / "_scale_child.py"
STRACE = shutil.which("strace") or "/usr/bin/strace"
ROWS_PER_FILE = 200
LOCAL_FILES = (100, 1_000, 5_000)
S3_FILES = (100, 300)
QUICK_LOCAL_FILES = (100, 300)
QUICK_S3_FILES = (100,)
BIG_FILES = 40
BUCKET = "bench-scale"
RACY_SECONDS = 3.0
SCENARIOS = ("local", "s3", "big", "memory")
PHASES = ("first run", "unchanged rerun", "append 1")
OPENS = {"open", "openat"}
STATS = {"stat", "lstat", "fstat", "newfstatat", "statx"}
# A traced call: "1234 openat(AT_FDCWD, ...) = 3" (the pid with -f), or its first half
# ("... <unfinished ...>"); its other half ("<... openat resumed>") is not counted again.
_CALL = re.compile(r"^(?:\d+\s+)?([a-z0-9_]+)\(")
# werkzeug's line for a request: '... "GET /bucket/key?query HTTP/1.1" 200 -' (maybe coloured).
_REQUEST = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+) (\S+) HTTP/[^"]*" (\d{3})')
REQUEST_KINDS = ("GET", "HEAD", "LIST", "PUT", "POST", "DELETE")

Figures = dict[str, Any]


# -- data --------------------------------------------------------------------------


def _jsonl(index: int) -> bytes:
    """File ``index`` of the tiny JSON Lines source: 200 rows of short text."""
    lines = (
        json.dumps(
            {
                "id": index * ROWS_PER_FILE + row,
                "text": f"file {index} row {row} " * (1 + row % 4),
            }
        )
        for row in range(ROWS_PER_FILE)
    )
    return ("\n".join(lines) + "\n").encode()


def _write_jsonl(folder: Path, indices: Iterable[int]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in indices:
        (folder / f"part-{index:05d}.jsonl").write_bytes(_jsonl(index))


def _settle() -> None:
    """Wait until the files just written are older than the racy-timestamp window (2 s):
    a file hashed within it of its mtime is hashed again by the next process, by design;
    a scheduled run's source files are usually older."""
    time.sleep(RACY_SECONDS)


def _write_parquet(folder: Path, total_bytes: float, files: int) -> int:
    """``files`` uncompressed Parquet files of random letters (1 kB texts) and ids, about
    ``total_bytes`` in all; returns their size."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    random = np.random.default_rng(25)
    text_bytes = 1000
    rows = max(1, int(total_bytes / files) // (text_bytes + 8))
    offsets = np.arange(rows + 1, dtype=np.int32) * text_bytes
    for index in range(files):
        letters = random.integers(97, 123, size=rows * text_bytes, dtype=np.uint8)
        text = pa.StringArray.from_buffers(
            rows, pa.py_buffer(offsets.tobytes()), pa.py_buffer(letters.tobytes())
        )
        ids = pa.array(np.arange(index * rows, (index + 1) * rows, dtype=np.int64))
        pq.write_table(
            pa.table({"id": ids, "text": text}),
            folder / f"part-{index:05d}.parquet",
            compression="none",
            use_dictionary=False,
        )
    return sum(path.stat().st_size for path in folder.iterdir())


# -- one measured process ----------------------------------------------------------


def _environment(work: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])]),
        DAGSTER_DS_DISABLE_PROGRESS_BARS="1",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_OFFLINE="1",
        HF_HOME=str(work / "hf-home"),
    )
    env.update(extra)
    return env


def _run(spec: dict[str, Any], env: dict[str, str], work: Path, trace: bool = False) -> Figures:
    """Run the child once: its figures, measured from here and by itself."""
    handle, name = tempfile.mkstemp(dir=work, prefix="child-", suffix=".json")
    os.close(handle)
    result, log, calls = (
        Path(name),
        Path(name).with_suffix(".log"),
        Path(name).with_suffix(".strace"),
    )
    command = [sys.executable, str(CHILD), json.dumps(spec), str(result)]
    if trace:
        calls_traced = "trace=" + ",".join(sorted(OPENS | STATS))
        strace = [STRACE, "-f", "-qq", "--seccomp-bpf", "-e", calls_traced, "-o", str(calls)]
        command = strace + command
    start = time.perf_counter()
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"the child {spec!r} failed ({process.returncode}):\n{tail}")
    figures: Figures = json.loads(result.read_text())
    figures.update(wall=wall, cpu=usage.ru_utime + usage.ru_stime)
    if trace:
        figures.update(_count_calls(calls))
    for path in (result, log, calls):
        path.unlink(missing_ok=True)
    return figures


def _count_calls(trace: Path) -> dict[str, int]:
    """Opens and stats in a strace log: of the whole process, and of its work alone."""
    counts: Counter[str] = Counter()
    working = False
    with trace.open(errors="replace") as lines:
        for line in lines:
            if START_MARKER in line or END_MARKER in line:
                working = START_MARKER in line
                continue
            match = _CALL.match(line)
            if match is None:
                continue
            kind = "opens" if match[1] in OPENS else "stats" if match[1] in STATS else None
            if kind is not None:
                counts[kind] += 1
                counts[f"work_{kind}"] += working
    return {name: counts[name] for name in ("opens", "stats", "work_opens", "work_stats")}


# -- scenarios ---------------------------------------------------------------------


def local_scenario(files: int, work: Path, trace: bool) -> list[Figures]:
    """The plain pipeline on tiny local files: three runs each side, new processes."""
    folder = work / f"local-{files}"
    source = folder / "source"
    _write_jsonl(source, range(files))
    _settle()
    spec = {"pipeline": "plain", "files": str(source / "*.jsonl"), "storage_options": None}
    runs: list[Figures] = []

    def env(side: str, lane: str) -> dict[str, str]:
        caches = {
            "ours": {"DAGSTER_DS_CACHE": str(folder / f"ours-{lane}")},
            "anchor": {"HF_DATASETS_CACHE": str(folder / f"anchor-{lane}")},
            "raw": {},
        }
        return _environment(work, **caches[side])

    for phase in PHASES:
        if phase == "append 1":
            _write_jsonl(source, [files])
            _settle()
        sides = ("ours", "anchor", "raw") if phase == "first run" else ("ours", "anchor")
        for side in sides:
            figures = _run({**spec, "side": side}, env(side, "measured"), work)
            if trace and side != "raw":  # the twin store, traced: the same run's calls
                counted = _run({**spec, "side": side}, env(side, "traced"), work, trace=True)
                figures.update({name: counted[name] for name in _count_names()})
            runs.append(
                {"scenario": "local", "files": files, "phase": phase, "side": side, **figures}
            )
            _progress(runs[-1])
    shutil.rmtree(folder, ignore_errors=True)
    return runs


def _count_names() -> tuple[str, ...]:
    return ("opens", "stats", "work_opens", "work_stats")


class _S3:
    """moto's S3 server in this process, with a bucket, and the requests it served."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        import s3fs

        from tests.conftest import AWS_TEST_ENV, moto_s3, s3_requests

        os.environ.update(AWS_TEST_ENV)
        self.log = stack.enter_context(s3_requests())
        self.endpoint = stack.enter_context(moto_s3(BUCKET))
        # Not offline: the anchor's offline mode refuses every remote file, s3:// too.
        self.env = {**AWS_TEST_ENV, "AWS_ENDPOINT_URL_S3": self.endpoint, "HF_HUB_OFFLINE": "0"}
        self.options = {"endpoint_url": self.endpoint}
        self.fs = s3fs.S3FileSystem(endpoint_url=self.endpoint, skip_instance_cache=True)

    def run(self, spec: dict[str, Any], env: dict[str, str], work: Path) -> Figures:
        """The child's figures (`_run`), with the requests this server served meanwhile."""
        before = len(self.log.lines)
        figures = _run(spec, env, work)
        figures["requests"] = _requests_by_kind(self.log.lines[before:])
        return figures


def _requests_by_kind(lines: Sequence[str]) -> dict[str, int]:
    """Requests by kind: LIST is a GET of a bucket listing (``list-type`` or ``prefix``)."""
    kinds: Counter[str] = Counter()
    for line in lines:
        match = _REQUEST.search(line)
        if match is None:
            continue
        method, target = match[1], match[2]
        query = parse_qs(urlsplit(target).query, keep_blank_values=True)
        listing = method == "GET" and ("list-type" in query or "prefix" in query)
        kinds["LIST" if listing else method] += 1
    counts = {kind: kinds[kind] for kind in REQUEST_KINDS}
    counts.update({kind: count for kind, count in kinds.items() if kind not in counts})
    counts["total"] = sum(kinds.values())
    return counts


def s3_scenario(files: int, work: Path, s3: _S3) -> list[Figures]:
    """The plain pipeline and the Dagster path, source and store on S3."""
    folder = work / f"s3-{files}"
    home = folder / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    prefix = f"{BUCKET}/s3-{files}"
    s3.fs.pipe({f"{prefix}/source/part-{i:05d}.jsonl": _jsonl(i) for i in range(files)})
    spec = {"files": f"s3://{prefix}/source/*.jsonl", "storage_options": s3.options}
    cases = {
        ("plain", "ours"): {"DAGSTER_DS_CACHE": f"s3://{prefix}/plain-store"},
        ("plain", "anchor"): {"HF_DATASETS_CACHE": str(folder / "anchor-cache")},
        ("dagster", "ours"): {
            "DAGSTER_HOME": str(home),
            "DAGSTER_DS_CACHE": f"s3://{prefix}/dagster-cache",
        },
    }
    runs: list[Figures] = []
    for phase in PHASES:
        if phase == "append 1":
            s3.fs.pipe({f"{prefix}/source/part-{files:05d}.jsonl": _jsonl(files)})
        for (pipeline, side), extra in cases.items():
            child = {
                **spec,
                "pipeline": pipeline,
                "side": side,
                "store": f"s3://{prefix}/dagster-store",
            }
            env = _environment(work, **s3.env, **extra)
            figures = s3.run(child, env, work)
            runs.append(
                {
                    "scenario": "s3",
                    "files": files,
                    "phase": phase,
                    "pipeline": pipeline,
                    "side": side,
                    **figures,
                }
            )
            _progress(runs[-1])
    s3.fs.rm(prefix, recursive=True)
    shutil.rmtree(folder, ignore_errors=True)
    return runs


# An instance as a production user's, less the capture of step output (a no-op here:
# the steps run in the child's process) and telemetry.
DAGSTER_YAML = """\
telemetry:
  enabled: false
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""


def big_scenario(gigabytes: float, work: Path) -> list[Figures]:
    """An unchanged 4 GB local Parquet source, loaded in two new processes, each side."""
    source = work / "big-source"
    size = _write_parquet(source, gigabytes * 1e9, BIG_FILES)
    _settle()
    spec = {"pipeline": "load", "files": str(source / "*.parquet"), "storage_options": None}
    runs: list[Figures] = []
    for side, variable in (("ours", "DAGSTER_DS_CACHE"), ("anchor", "HF_DATASETS_CACHE")):
        env = _environment(work, **{variable: str(work / f"big-{side}")})
        for phase in ("cold store", "unchanged source"):
            figures = _run({**spec, "side": side}, env, work)
            runs.append(
                {"scenario": "big", "source_bytes": size, "phase": phase, "side": side, **figures}
            )
            _progress(runs[-1])
        shutil.rmtree(work / f"big-{side}", ignore_errors=True)
    shutil.rmtree(source, ignore_errors=True)
    return runs


def memory_scenario(gigabytes: float, work: Path, s3: _S3) -> list[Figures]:
    """Peak RSS of the first materialization of one asset (a map), store on S3 / on disk."""
    source = work / "memory-source"
    size = _write_parquet(source, gigabytes * 1e9, max(1, round(gigabytes * 10)))
    _settle()
    runs: list[Figures] = []
    stores = {
        "s3": (f"s3://{BUCKET}/memory/store", f"s3://{BUCKET}/memory/cache"),
        "local disk": (str(work / "memory-store"), str(work / "memory-cache")),
    }
    for where, (store, cache) in stores.items():
        home = work / f"memory-home-{where.replace(' ', '-')}"
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        spec = {
            "side": "ours",
            "pipeline": "memory",
            "files": str(source / "*.parquet"),
            "storage_options": s3.options if where == "s3" else {},
            "store": store,
        }
        env = _environment(work, **s3.env, DAGSTER_HOME=str(home), DAGSTER_DS_CACHE=cache)
        figures = s3.run(spec, env, work)
        runs.append(
            {"scenario": "memory", "source_bytes": size, "store": where, "side": "ours", **figures}
        )
        _progress(runs[-1])
        shutil.rmtree(home, ignore_errors=True)
    s3.fs.rm(f"{BUCKET}/memory", recursive=True)
    shutil.rmtree(source, ignore_errors=True)
    return runs


# -- reporting ---------------------------------------------------------------------


def _progress(run: Figures) -> None:
    where = run.get("files") or _bytes(run.get("source_bytes", 0))
    what = "/".join(str(run[key]) for key in ("pipeline", "phase", "store") if key in run)
    requests = run.get("requests", {})
    extra = f" requests {requests['total']}" if requests else ""
    extra += "".join(f" {kind} {requests[kind]}" for kind in REQUEST_KINDS if requests.get(kind))
    print(
        f"  {run['scenario']} {where} {what} {run['side']}: work CPU {run['work_cpu']:.2f}s, "
        f"CPU {run['cpu']:.2f}s, wall {run['wall']:.2f}s, read {_bytes(run['work_rchar'])}, "
        f"RSS {run['rss_mb']:.0f} MB{extra}",
        flush=True,
    )


def _bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


def _pair(ours: float | None, anchor: float | None, text: Any = str) -> str:
    """``ours / anchor (ratio x)``."""
    if ours is None or anchor is None:
        return "-"
    ratio = f" ({ours / anchor:.1f}x)" if anchor else ""
    return f"{text(ours)} / {text(anchor)}{ratio}"


def _seconds(value: float) -> str:
    return f"{value:.2f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _own_cpu(run: Figures) -> float:
    """The process's CPU without the common imports its library does not make itself
    (pandas, for dagster_ds): what a process running only this pipeline costs."""
    return run["cpu"] - run["lent_cpu"]


def local_table(runs: list[Figures]) -> str:
    rows = []
    for files in sorted({run["files"] for run in runs}):
        for phase in PHASES:
            by_side = {
                run["side"]: run for run in runs if run["files"] == files and run["phase"] == phase
            }
            ours, anchor, raw = by_side["ours"], by_side["anchor"], by_side.get("raw")
            rows.append(
                [
                    f"{files:,}",
                    phase,
                    _pair(ours["work_cpu"], anchor["work_cpu"], _seconds),
                    _seconds(raw["work_cpu"]) if raw else "-",
                    _pair(ours["cpu"], anchor["cpu"], _seconds),
                    _pair(_own_cpu(ours), _own_cpu(anchor), _seconds),
                    _pair(ours["wall"], anchor["wall"], _seconds),
                    _pair(ours["work_rchar"], anchor["work_rchar"], _bytes),
                    _pair(ours.get("work_opens"), anchor.get("work_opens"), str),
                    _pair(ours.get("work_stats"), anchor.get("work_stats"), str),
                    _pair(ours["rss_mb"], anchor["rss_mb"], lambda mb: f"{mb:.0f}"),
                ]
            )
    headers = [
        "files",
        "run",
        "work CPU s: ours / anchor",
        "raw pyarrow CPU s",
        "process CPU s",
        "own imports: process CPU s",
        "wall s",
        "read (work)",
        "opens (work)",
        "stats (work)",
        "peak RSS MB",
    ]
    return _table(headers, rows)


def s3_table(runs: list[Figures]) -> str:
    rows = []
    for run in runs:
        requests = run["requests"]
        per_asset = f"{requests['total'] / 3:.1f}" if run["pipeline"] == "dagster" else "-"
        rows.append(
            [
                f"{run['files']:,}",
                run["pipeline"],
                run["phase"],
                run["side"],
                str(requests["total"]),
                *(str(requests[kind]) for kind in REQUEST_KINDS),
                f"{requests['total'] / run['files']:.1f}",
                per_asset,
                _seconds(run["work_cpu"]),
                _seconds(run["wall"]),
                f"{run['rss_mb']:.0f}",
            ]
        )
    headers = ["files", "pipeline", "run", "side", "requests", *REQUEST_KINDS]
    headers += ["per shard", "per asset", "work CPU s", "wall s", "peak RSS MB"]
    return _table(headers, rows)


def big_table(runs: list[Figures]) -> str:
    rows = [
        [
            _bytes(run["source_bytes"]),
            run["phase"],
            run["side"],
            _bytes(run["rchar"]),
            _bytes(run["work_rchar"]),
            f"{run['work_rchar'] / run['source_bytes']:.2f}",
            _bytes(run["work_read_bytes"]),
            _seconds(run["work_cpu"]),
            _seconds(run["wall"]),
            f"{run['rss_mb']:.0f}",
        ]
        for run in runs
    ]
    headers = ["source", "run", "side", "read (process)", "read (work)", "work read / source"]
    headers += ["from disk (work)", "work CPU s", "wall s", "peak RSS MB"]
    return _table(headers, rows)


def memory_table(runs: list[Figures]) -> str:
    rows = [
        [
            _bytes(run["source_bytes"]),
            run["store"],
            f"{run['rss_mb']:.0f}",
            _seconds(run["cpu"]),
            _seconds(run["wall"]),
            str(run["requests"]["total"]),
        ]
        for run in runs
    ]
    return _table(["asset source", "store", "peak RSS MB", "CPU s", "wall s", "S3 requests"], rows)


TABLES = {"local": local_table, "s3": s3_table, "big": big_table, "memory": memory_table}
TITLES = {
    "local": "Local store: load -> map -> filter, tiny JSON Lines files (200 rows), new processes",
    "s3": "S3 (moto): source and store on s3://, requests by type per run",
    "big": "Unchanged Parquet source loaded in a new process: bytes read",
    "memory": "First materialization of one asset (a map), Dagster path: peak RSS",
}


# -- main --------------------------------------------------------------------------


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="What a refresh costs at scale, in new processes.")
    parser.add_argument("--only", choices=SCENARIOS, action="append", help="scenario(s) to run")
    parser.add_argument("--quick", action="store_true", help="N = 100, 300 (S3: 100), small sizes")
    parser.add_argument("--json", type=Path, help="write the raw figures to this file")
    parser.add_argument(
        "--no-trace", action="store_true", help="skip the strace runs (opens, stats)"
    )
    return parser.parse_args()


def _opt_in_s3_files() -> tuple[int, ...]:
    """N = 1,000 on S3 when ``BENCH_SCALE_S3_1000`` is set (moto serves it slowly)."""
    return (1_000,) if os.environ.get("BENCH_SCALE_S3_1000", "") not in ("", "0") else ()


def _capped(counts: Sequence[int]) -> list[int]:
    cap = int(os.environ.get("BENCH_SCALE_MAX_FILES", "0")) or None
    return sorted({min(count, cap) if cap else count for count in counts})


def main() -> None:
    arguments = _arguments()
    scenarios = arguments.only or list(SCENARIOS)
    local_files = _capped(QUICK_LOCAL_FILES if arguments.quick else LOCAL_FILES)
    s3_files = _capped(QUICK_S3_FILES if arguments.quick else S3_FILES + _opt_in_s3_files())
    big_gb = 0.2 if arguments.quick else float(os.environ.get("BENCH_SCALE_BIG_GB", "4"))
    memory_gb = 0.1 if arguments.quick else float(os.environ.get("BENCH_SCALE_S3_GB", "1"))
    trace = not arguments.no_trace and os.path.exists(STRACE)
    settings = {
        "quick": arguments.quick,
        "local_files": local_files,
        "s3_files": s3_files,
        "big_gb": big_gb,
        "memory_gb": memory_gb,
        "rows_per_file": ROWS_PER_FILE,
        "traced": trace,
    }
    work = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=os.environ.get("BENCH_TMP")))
    results: dict[str, list[Figures]] = {}
    try:
        with contextlib.ExitStack() as stack:
            s3 = _S3(stack) if {"s3", "memory"} & set(scenarios) else None
            for scenario in scenarios:
                print(f"\n{TITLES[scenario]}", flush=True)
                runs: list[Figures] = []
                if scenario == "local":
                    for files in local_files:
                        runs += local_scenario(files, work, trace)
                elif scenario == "s3" and s3 is not None:
                    for files in s3_files:
                        runs += s3_scenario(files, work, s3)
                elif scenario == "big":
                    runs += big_scenario(big_gb, work)
                elif scenario == "memory" and s3 is not None:
                    runs += memory_scenario(memory_gb, work, s3)
                results[scenario] = runs
                print(TABLES[scenario](runs), flush=True)
                if arguments.json:  # after each scenario: a stopped run keeps what it measured
                    arguments.json.write_text(
                        json.dumps({"settings": settings, **results}, indent=1)
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n## Results\n")
    for scenario, runs in results.items():
        print(f"### {TITLES[scenario]}\n\n{TABLES[scenario](runs)}\n")


if __name__ == "__main__":
    main()
