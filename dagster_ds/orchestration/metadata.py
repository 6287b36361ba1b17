"""Materialization metadata: the keys dagster_ds records, and the translator that builds them.

Every dataset asset's materialization carries provenance (fingerprint, parent
fingerprints, transform hash), what the data looks like (``dagster/row_count``,
``dagster/column_schema``, a Markdown preview), how it was obtained (cache hit
or miss, duration), where it is stored (path, size) and, when pushed, the Hub
URL and commit. `DatasetTranslator` builds the data-describing part; subclass
it to change the preview or add your own entries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import dagster as dg

__all__ = ["DatasetMetadataKey", "DatasetTranslator", "DatasetTranslatorSettings"]


class DatasetMetadataKey(StrEnum):
    """The metadata keys dagster_ds writes on materializations and observations.

    Example:
        >>> DatasetMetadataKey.FINGERPRINT.value
        'dagster_ds/fingerprint'
    """

    FINGERPRINT = "dagster_ds/fingerprint"
    CONTENT_FINGERPRINT = "dagster_ds/content_fingerprint"
    PARENT_FINGERPRINTS = "dagster_ds/parent_fingerprints"
    TRANSFORM_HASH = "dagster_ds/transform_hash"
    CACHE = "dagster_ds/cache"
    DURATION = "dagster_ds/duration_s"
    ROW_COUNT = "dagster/row_count"
    COLUMN_SCHEMA = "dagster/column_schema"
    NUM_COLUMNS = "dagster_ds/num_columns"
    PREVIEW = "dagster_ds/preview"
    PATH = "dagster_ds/path"
    SIZE = "dagster_ds/size_bytes"
    BYTES_WRITTEN = "dagster_ds/bytes_written"
    HUB_URL = "dagster_ds/hub_url"
    HUB_COMMIT = "dagster_ds/hub_commit"
    HUB_PUSH = "dagster_ds/hub_push"
    HUB_TARGET = "dagster_ds/hub_target"
    SHARDS_CACHED = "dagster_ds/shards_cached"
    SHARDS_COMPUTED = "dagster_ds/shards_computed"
    SHARDS_ELSEWHERE = "dagster_ds/shards_computed_elsewhere"
    EXECUTOR = "dagster_ds/executor"


# Keys that describe one run, not the data: never copied from an earlier materialization.
RUN_SPECIFIC_KEYS = frozenset(
    {
        DatasetMetadataKey.FINGERPRINT.value,
        DatasetMetadataKey.CONTENT_FINGERPRINT.value,
        DatasetMetadataKey.BYTES_WRITTEN.value,
        DatasetMetadataKey.PARENT_FINGERPRINTS.value,
        DatasetMetadataKey.TRANSFORM_HASH.value,
        DatasetMetadataKey.CACHE.value,
        DatasetMetadataKey.DURATION.value,
        DatasetMetadataKey.PATH.value,
        DatasetMetadataKey.SIZE.value,
        DatasetMetadataKey.HUB_URL.value,
        DatasetMetadataKey.HUB_COMMIT.value,
        DatasetMetadataKey.HUB_PUSH.value,
        DatasetMetadataKey.HUB_TARGET.value,
        DatasetMetadataKey.SHARDS_CACHED.value,
        DatasetMetadataKey.SHARDS_COMPUTED.value,
        DatasetMetadataKey.SHARDS_ELSEWHERE.value,
        DatasetMetadataKey.EXECUTOR.value,
    }
)


@dataclass(frozen=True)
class DatasetTranslatorSettings:
    """Settings of the default `DatasetTranslator`.

    Attributes:
        preview_rows: How many rows the Markdown preview shows.
        preview_max_chars: Longer cell values are cut to this many characters.

    Example:
        >>> DatasetTranslator(DatasetTranslatorSettings(preview_rows=3)).settings.preview_rows
        3
    """

    preview_rows: int = 5
    preview_max_chars: int = 80


class DatasetTranslator:
    """Turns a dataset into the metadata that describes it on a materialization.

    One ``get_*`` method per entry; subclass and override one to change it, or
    `get_metadata` to add entries. The result must depend only on the data:
    when an asset is skipped because its fingerprint is unchanged, the entries
    are copied from the materialization that produced that fingerprint.

    Example:
        >>> from dagster_ds import Dataset
        >>> class WithLanguage(DatasetTranslator):
        ...     def get_metadata(self, dataset):
        ...         return {**super().get_metadata(dataset), "language": "en"}
        >>> sorted(WithLanguage().get_metadata(Dataset.from_dict({"a": [1]})))[:2]
        ['dagster/column_schema', 'dagster/row_count']
    """

    def __init__(self, settings: DatasetTranslatorSettings | None = None) -> None:
        self.settings = settings or DatasetTranslatorSettings()

    def get_metadata(self, dataset: Any) -> dict[str, Any]:
        """Every data-describing entry: row count, column schema, column count, preview."""
        metadata: dict[str, Any] = {
            DatasetMetadataKey.COLUMN_SCHEMA.value: self.get_column_schema(dataset),
            DatasetMetadataKey.NUM_COLUMNS.value: dg.MetadataValue.int(
                len(dataset.column_names or [])
            ),
            DatasetMetadataKey.PREVIEW.value: self.get_preview(dataset),
        }
        row_count = self.get_row_count(dataset)
        if row_count is not None:
            metadata[DatasetMetadataKey.ROW_COUNT.value] = dg.MetadataValue.int(row_count)
        return metadata

    def get_row_count(self, dataset: Any) -> int | None:
        """The number of rows, or None when unknown without reading everything (streams)."""
        num_rows = getattr(dataset, "num_rows", None)
        return num_rows if isinstance(num_rows, int) else None

    def get_column_schema(self, dataset: Any) -> dg.TableSchema:
        """A `TableSchema` with each column's feature type, as ``repr`` shows it."""
        features = dataset.features or {}
        return dg.TableSchema(
            columns=[
                dg.TableColumn(name, _type_name(feature)) for name, feature in features.items()
            ]
        )

    def get_preview(self, dataset: Any) -> dg.MarkdownMetadataValue:
        """A Markdown table of the first ``preview_rows`` rows."""
        rows = _first_rows(dataset, self.settings.preview_rows)
        return dg.MetadataValue.md(markdown_table(rows, self.settings.preview_max_chars))


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


def _cell(value: Any, max_chars: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _first_rows(dataset: Any, count: int) -> list[dict[str, Any]]:
    num_rows = getattr(dataset, "num_rows", None)
    if isinstance(num_rows, int):  # map-style: Arrow slice, no Python formatting
        return dataset.with_format("arrow")[: min(count, num_rows)].to_pylist()
    return list(dataset.take(count))  # a stream: read only the first rows


def _type_name(feature: Any) -> str:
    return repr(feature)
