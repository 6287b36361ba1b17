"""The translator: previews, schemas, and a custom subclass."""

from __future__ import annotations

from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import (
    DatasetMetadataKey,
    DatasetTranslator,
    DatasetTranslatorSettings,
)
from dagster_ds.orchestration.metadata import markdown_table


def test_preview_escapes_and_cuts_cells() -> None:
    rows = [{"text": "a | b\nc", "tags": ["x", "y"], "long": "z" * 30}]
    assert markdown_table(rows, max_chars=10).splitlines() == [
        "| text | tags | long |",
        "| --- | --- | --- |",
        '| a \\| b c | ["x", "y"] | zzzzzzzzz… |',
    ]
    assert markdown_table([]) == "*(no rows)*"


def test_the_default_metadata_of_a_dataset() -> None:
    dataset = Dataset.from_dict({"n": list(range(10)), "text": [str(i) for i in range(10)]})
    metadata = DatasetTranslator(DatasetTranslatorSettings(preview_rows=2)).get_metadata(dataset)
    assert metadata[DatasetMetadataKey.ROW_COUNT.value] == dg.MetadataValue.int(10)
    assert metadata[DatasetMetadataKey.NUM_COLUMNS.value] == dg.MetadataValue.int(2)
    schema = metadata[DatasetMetadataKey.COLUMN_SCHEMA.value]
    assert [(column.name, column.type) for column in schema.columns] == [
        ("n", "Value('int64')"),
        ("text", "Value('string')"),
    ]
    preview = metadata[DatasetMetadataKey.PREVIEW.value].value
    assert preview.splitlines()[2:] == ["| 0 | 0 |", "| 1 | 1 |"]


def test_a_translator_subclass_adds_entries() -> None:
    class WithVocabulary(DatasetTranslator):
        def get_metadata(self, dataset: Any) -> dict[str, Any]:
            words = {word for text in dataset["text"] for word in text.split()}
            return {**super().get_metadata(dataset), "vocabulary": len(words)}

    dataset = Dataset.from_dict({"text": ["a b", "b c"]})
    assert WithVocabulary().get_metadata(dataset)["vocabulary"] == 3
