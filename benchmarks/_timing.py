"""Shared timing helpers for the side-by-side benchmarks."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

_CACHEGRIND = (
    "valgrind",
    "--tool=cachegrind",
    "--cache-sim=no",
    "--branch-sim=no",
    "--cachegrind-out-file=/dev/null",
)


def best_of(function: Callable[[], object], repeat: int = 5) -> float:
    """The median of ``repeat`` wall-clock runs, in seconds (the machine is noisy)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fastest_of(function: Callable[[], object], repeat: int = 5) -> float:
    """The fastest of ``repeat`` wall-clock runs, in seconds: the least disturbed one."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def report(title: str, rows: list[tuple[str, float, float, float | None]]) -> None:
    """Print rows of (case, anchor seconds, ours seconds, raw floor seconds or None)."""
    print(f"\n{title}")
    header = f"{'case':<38} {'datasets':>10} {'dagster_ds':>11} {'raw':>10} {'anchor/ours':>12}"
    print(header + f" {'raw/ours':>9}")
    for case, anchor, ours, raw in rows:
        raw_text = f"{raw * 1000:>8.1f}ms" if raw is not None else f"{'-':>10}"
        speed = f"{raw / ours:>8.2f}x" if raw is not None else f"{'-':>9}"
        print(
            f"{case:<38} {anchor * 1000:>8.1f}ms {ours * 1000:>9.1f}ms {raw_text} "
            f"{anchor / ours:>11.1f}x {speed}"
        )


def counts_instructions() -> bool:
    """Whether `instructions` can count (valgrind is installed)."""
    return shutil.which("valgrind") is not None


def instructions(command: Sequence[str], env: Mapping[str, str]) -> tuple[int, str]:
    """The instructions a process executes, and its standard output.

    Cachegrind's count of instructions (its "I refs") does not depend on the machine's
    load, unlike any time: the measure to compare on a shared machine. The process runs
    about 50 times slower under valgrind.

    Example:
        >>> count, output = instructions(["python", "-c", "print(1)"], os.environ)
    """
    done = subprocess.run(
        [*_CACHEGRIND, *command], capture_output=True, text=True, check=True, env=env
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")), done.stdout
