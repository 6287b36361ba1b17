"""Calling a user's map or filter function the way the anchor documents it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import operator
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster_ds.formatting._feature_values import encode_batch_result, encode_results
from dagster_ds.formatting._formatter import ArrowData, Formatter

# Examples turned into Python objects at a time by per-example map and filter: small
# enough to bound memory with large rows, large enough to amortise Arrow conversions.
EXAMPLES_PER_CALL = 1000


@dataclass(frozen=True)
class FunctionCall:
    """A function and how to call it: ``f(example | *columns[, index], **fn_kwargs)``."""

    function: Callable[..., Any]
    input_columns: tuple[str, ...] | None = None
    with_indices: bool = False
    fn_kwargs: Mapping[str, Any] = field(default_factory=dict[str, Any])
    formatter: Formatter = field(default_factory=Formatter)

    def per_example(
        self, batch: ArrowData, first_index: int, *, lazy: bool = True
    ) -> tuple[list[Any], list[Any]]:
        """The formatted rows of ``batch`` and the function's result for each.

        ``lazy``: `LazyRow` examples in the default format (their reads observed),
        else plain dicts (cheaper to read when every column is read anyway).
        """
        formatter = self.formatter
        rows = formatter.function_rows(batch) if lazy else formatter.rows(batch)
        results = self.each(rows, first_index)
        encode_results(results, batch.schema)
        return rows, results

    def each(self, rows: list[Any], first_index: int) -> list[Any]:
        """The function's result for each of ``rows`` (formatted examples)."""
        function, kwargs, columns = self.function, self.fn_kwargs, self.input_columns
        if columns is None and not self.with_indices:
            if not kwargs:
                return awaited_all(list(map(function, rows)))
            return awaited_all([function(row, **kwargs) for row in rows])
        results: list[Any] = []
        for offset, row in enumerate(rows):
            args: list[Any] = [row] if columns is None else [row[name] for name in columns]
            if self.with_indices:
                args.append(first_index + offset)
            results.append(function(*args, **kwargs))
        return awaited_all(results)

    def batched(self, batch: ArrowData, first_index: int) -> tuple[Any, Any]:
        """The formatted batch and the function's result for it."""
        columns = self.input_columns
        # As the anchor: lazy in the default format, unless the function gets columns.
        formatted = (
            self.formatter.function_batch(batch) if columns is None else self.formatter.batch(batch)
        )
        args: list[Any] = [formatted] if columns is None else [formatted[name] for name in columns]
        if self.with_indices:
            args.append(list(range(first_index, first_index + batch.num_rows)))
        result = awaited_all([self.function(*args, **self.fn_kwargs)])[0]
        encode_batch_result(result, batch.schema)
        return formatted, result


def returned_input(inputs: Sequence[Any], results: Sequence[Any]) -> bool:
    """Whether the function returned (possibly changed) input objects rather than new ones."""
    return any(map(operator.is_, inputs, results))


def awaited_all(results: list[Any]) -> list[Any]:
    """``results`` with awaitables (what an ``async def`` function returns) awaited.

    As the anchor, the calls of one batch of examples run concurrently on an event
    loop; plain values are returned as they are (one check of the first result).
    """
    if not results or not inspect.isawaitable(results[0]):
        return results

    async def gather() -> list[Any]:
        return list(await asyncio.gather(*(_as_awaitable(result) for result in results)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(gather())
    # Called from inside a running loop (a notebook): run ours on another thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, gather()).result()


async def _as_awaitable(value: Awaitable[Any] | Any) -> Any:
    return await value if inspect.isawaitable(value) else value
