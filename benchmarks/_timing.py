"""Shared timing helpers for the side-by-side benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


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
