"""Formats on map-style datasets: the shared `Formatter`, and keeping it through transforms.

The formats themselves live in `dagster_ds.formatting`, shared with `IterableDataset`;
``OutputFormat`` is the name the Dataset code knows them by.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from dagster_ds.formatting import Formatter

OutputFormat = Formatter

_Method = TypeVar("_Method", bound=Callable[..., Any])


def transmit_format(method: _Method) -> _Method:
    """Give a transform's result (or each split of it) the format of its input, as the anchor.

    The result keeps its own fingerprint: a format only changes how rows are handed out.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        outputs = list(result.values()) if isinstance(result, dict) else [result]
        wanted: Formatter = self._output_format
        for output in outputs:
            if hasattr(output, "_output_format") and output is not self:
                output._output_format = wanted.restricted_to(output.column_names)
        return result

    return wrapper  # type: ignore[return-value]
