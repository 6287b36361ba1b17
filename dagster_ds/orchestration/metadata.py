"""Materialization metadata: the keys dagster_ds records, and the translator that builds them.

Every dataset asset's materialization carries provenance (its recipe, data
version and code version, the parents' data versions), what the data looks like
(``dagster/row_count``, ``dagster/column_schema``, a Markdown preview), how it was
obtained (cache hit or miss, duration), where it is stored (path, size) and, when pushed, the Hub
URL and commit. `DatasetTranslator` (in ``translator.py``) builds the
data-describing part; subclass it to change the preview or add your own entries.

Values are typed for the UI: durations are seconds rounded to milliseconds
(the unit is in the label), sizes are bytes (plotted) next to the same size
in human units, preview cells are escaped so Markdown never reformats them,
and the code and data versions are entries of their own (not only tags).
Column lineage (``dagster/column_lineage``: each output column with the
upstream asset columns it came from) is also a Markdown table
(``dagster_ds/column_lineage``), as Dagster's open-source UI does not draw it.

One name per concept, as in the logs, the CLI and the README:

- **recipe** (``dagster_ds/recipe``): the fingerprint computed before running, from
  the code version, the parents' data versions and the config; it decides the skip.
- **data version** (``dagster_ds/data_version``): the content fingerprint of what was
  stored, which Dagster shows as the data version.
- **code version** (``dagster_ds/code_version``): the transform hash.

Metadata recorded by earlier releases under other names
(``dagster_ds/fingerprint``, ``dagster_ds/content_fingerprint``,
``dagster_ds/transform_hash``, ``dagster_ds/parent_fingerprints``) is still read
back by `recorded_value`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import dagster as dg

from dagster_ds.cache import format_size
from dagster_ds.features import feature_to_arrow_type

__all__ = ["DatasetMetadataKey", "recorded_value"]


class DatasetMetadataKey(StrEnum):
    """The metadata keys dagster_ds writes on materializations and observations.

    Example:
        >>> DatasetMetadataKey.RECIPE.value
        'dagster_ds/recipe'
    """

    RECIPE = "dagster_ds/recipe"
    DATA_VERSION = "dagster_ds/data_version"
    CODE_VERSION = "dagster_ds/code_version"
    PARENT_DATA_VERSIONS = "dagster_ds/parent_data_versions"
    CACHE = "dagster_ds/cache"
    DURATION = "dagster_ds/duration (s)"
    ROW_COUNT = "dagster/row_count"
    COLUMN_SCHEMA = "dagster/column_schema"
    NUM_COLUMNS = "dagster_ds/num_columns"
    PREVIEW = "dagster_ds/preview"
    PATH = "dagster_ds/path"
    SIZE = "dagster_ds/size_bytes"
    SIZE_TEXT = "dagster_ds/size"
    BYTES_WRITTEN = "dagster_ds/bytes_written"
    HUB_URL = "dagster_ds/hub_url"
    HUB_COMMIT = "dagster_ds/hub_commit"
    HUB_PUSH = "dagster_ds/hub_push"
    HUB_TARGET = "dagster_ds/hub_target"
    HUB_SPLITS = "dagster_ds/hub_splits"
    SHARDS_CACHED = "dagster_ds/shards_cached"
    SHARDS_COMPUTED = "dagster_ds/shards_computed"
    SHARDS_ELSEWHERE = "dagster_ds/shards_computed_elsewhere"
    EXECUTOR = "dagster_ds/executor"
    COLUMN_LINEAGE = "dagster/column_lineage"
    COLUMN_LINEAGE_TABLE = "dagster_ds/column_lineage"
    # Earlier names of the members above, kept as aliases for code that used them.
    FINGERPRINT = "dagster_ds/recipe"
    CONTENT_FINGERPRINT = "dagster_ds/data_version"
    TRANSFORM_HASH = "dagster_ds/code_version"
    PARENT_FINGERPRINTS = "dagster_ds/parent_data_versions"


# The names earlier releases recorded each value under, read back from stored metadata.
_EARLIER_NAMES: dict[DatasetMetadataKey, tuple[str, ...]] = {
    DatasetMetadataKey.RECIPE: ("dagster_ds/fingerprint",),
    DatasetMetadataKey.DATA_VERSION: ("dagster_ds/content_fingerprint",),
    DatasetMetadataKey.CODE_VERSION: ("dagster_ds/transform_hash",),
    DatasetMetadataKey.PARENT_DATA_VERSIONS: ("dagster_ds/parent_fingerprints",),
}


def recorded_value(metadata: Mapping[str, Any], key: DatasetMetadataKey) -> Any:
    """The value ``metadata`` records under ``key`` (or an earlier name of it), else None.

    Example:
        >>> recorded_value({"dagster_ds/fingerprint": "ab"}, DatasetMetadataKey.RECIPE)
        'ab'
    """
    for name in (key.value, *_EARLIER_NAMES.get(key, ())):
        entry = metadata.get(name)
        if entry is not None:
            return getattr(entry, "value", entry)
    return None


# Keys that describe one run, not the data: never copied from an earlier materialization.
RUN_SPECIFIC_KEYS = frozenset(
    {
        DatasetMetadataKey.RECIPE.value,
        DatasetMetadataKey.DATA_VERSION.value,
        DatasetMetadataKey.CODE_VERSION.value,
        DatasetMetadataKey.PARENT_DATA_VERSIONS.value,
        DatasetMetadataKey.BYTES_WRITTEN.value,
        DatasetMetadataKey.CACHE.value,
        DatasetMetadataKey.DURATION.value,
        DatasetMetadataKey.PATH.value,
        DatasetMetadataKey.SIZE.value,
        DatasetMetadataKey.SIZE_TEXT.value,
        DatasetMetadataKey.HUB_URL.value,
        DatasetMetadataKey.HUB_COMMIT.value,
        DatasetMetadataKey.HUB_PUSH.value,
        DatasetMetadataKey.HUB_TARGET.value,
        DatasetMetadataKey.HUB_SPLITS.value,
        DatasetMetadataKey.SHARDS_CACHED.value,
        DatasetMetadataKey.SHARDS_COMPUTED.value,
        DatasetMetadataKey.SHARDS_ELSEWHERE.value,
        DatasetMetadataKey.EXECUTOR.value,
        *(name for names in _EARLIER_NAMES.values() for name in names),
    }
)


def markdown_table(rows: list[dict[str, Any]], max_chars: int = 80) -> str:
    """Rows as a Markdown table, cells cut to ``max_chars`` and escaped."""
    if not rows:
        return "*(no rows)*"
    columns = list(rows[0])
    lines = [
        "| " + " | ".join(_cell(name, max_chars) for name in columns) + " |",
        "|" + "|".join(" --- " for _ in columns) + "|",
    ]
    lines.extend(
        "| " + " | ".join(_cell(row.get(name), max_chars) for name in columns) + " |"
        for row in rows
    )
    return "\n".join(lines)


def duration_metadata(seconds: float) -> dict[str, Any]:
    """The step's duration: seconds rounded to milliseconds, under a label naming the unit."""
    return {DatasetMetadataKey.DURATION.value: dg.MetadataValue.float(round(seconds, 3))}


def size_metadata(size: int) -> dict[str, Any]:
    """The stored size twice: bytes (an int, which the UI plots) and human units (text)."""
    return {
        DatasetMetadataKey.SIZE.value: dg.MetadataValue.int(size),
        DatasetMetadataKey.SIZE_TEXT.value: dg.MetadataValue.text(format_size(size)),
    }


def version_metadata(code_version: str | None, data_version: str) -> dict[str, Any]:
    """The code and data versions as entries of their own (Dagster shows its tags folded)."""
    return {
        DatasetMetadataKey.CODE_VERSION.value: dg.MetadataValue.text(
            code_version or "none (unhashable transform)"
        ),
        DatasetMetadataKey.DATA_VERSION.value: dg.MetadataValue.text(data_version),
    }


_FEATURE_VALUE = re.compile(r"Value\('([^']*)'\)")
_LIST_ITEM = re.compile(r"(list<)item: ")


def type_name(feature: Any) -> str:
    """A feature's stored type as users read it: ``string``, ``list<string>``, ``int64``.

    Example:
        >>> from dagster_ds import List, Value
        >>> type_name(List(Value("string")))
        'list<string>'
    """
    return _LIST_ITEM.sub(r"\1", str(feature_to_arrow_type(feature)))


def feature_text(feature: Any) -> str:
    """A feature type as a reader writes it: ``string``, ``List(string)``, ``ClassLabel(...)``."""
    return _FEATURE_VALUE.sub(r"\1", feature if isinstance(feature, str) else repr(feature))


def schema_text(columns: Mapping[str, Any]) -> str:
    """Columns and types as one readable line: ``id: string, tokens: List(string)``."""
    return ", ".join(f"{name}: {feature_text(feature)}" for name, feature in columns.items())


# What Markdown (CommonMark, GitHub's tables) could read as formatting inside a table cell:
# emphasis, code, links and images (an escaped "[" opens none), HTML, entities, cell bars.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[<|~&])")


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown formatting character backslash-escaped (shown as typed)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _cell(value: Any, max_chars: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return escape_markdown(text)
