"""Metadata values: previews that Markdown shows as typed, typed durations and sizes, schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from markdown_it import MarkdownIt

from dagster_ds import Dataset, Features, List, Value
from dagster_ds.orchestration import (
    DatasetMetadataKey,
    DatasetTranslator,
    DatasetTranslatorSettings,
    schema_check,
)
from dagster_ds.orchestration.io_manager import fingerprints_of
from dagster_ds.orchestration.metadata import (
    duration_metadata,
    markdown_table,
    recorded_value,
    schema_text,
    size_metadata,
)

GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _cells(markdown: str) -> list[list[str]]:
    """The text of each rendered table row's cells, as a browser would show it."""
    tokens = GFM.parse(markdown)
    rows: list[list[str]] = []
    for index, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and tokens[index - 1].type in ("td_open", "th_open"):
            rows[-1].append("".join(child.content for child in token.children or []))
    return rows


def test_preview_escapes_and_cuts_cells() -> None:
    rows = [{"text": "a | b\nc", "tags": ["x", "y"], "long": "z" * 30}]
    assert markdown_table(rows, max_chars=10).splitlines() == [
        "| text | tags | long |",
        "| --- | --- | --- |",
        '| a \\| b c | \\["x", "y"] | zzzzzzzzz… |',
    ]
    assert markdown_table([]) == "*(no rows)*"


def test_markdown_renders_every_cell_as_typed() -> None:
    hostile = [
        "__debug__",
        "*args and **kwargs",
        "`code` | pipe",
        "line one\nline two\r\n\tthree",
        "[link](https://example.com) ![img](x.png)",
        "<b>html</b> &amp; ~~gone~~ \\escaped",
    ]
    markdown = markdown_table([{"value": text} for text in hostile], max_chars=200)
    html = GFM.render(markdown)
    for tag in ("<strong>", "<em>", "<code>", "<a ", "<img", "<b>", "<s>", "<del>", "<br"):
        assert tag not in html
    shown = [row[0] for row in _cells(markdown)[1:]]
    assert shown == [" ".join(text.split()) for text in hostile]  # one row each, nothing lost
    assert "__debug__" in html


def test_long_values_are_cut() -> None:
    (row,) = _cells(markdown_table([{"text": "word " * 100}], max_chars=20))[1:]
    assert row == ["word word word word…"]


def test_durations_are_rounded_seconds_and_sizes_keep_bytes() -> None:
    ((label, value),) = duration_metadata(0.07102550100000826).items()
    assert label == "dagster_ds/duration (s)"
    assert value == dg.MetadataValue.float(0.071)
    sizes = size_metadata(807939)
    assert sizes[DatasetMetadataKey.SIZE.value] == dg.MetadataValue.int(807939)  # plotted
    assert sizes[DatasetMetadataKey.SIZE_TEXT.value] == dg.MetadataValue.text("807.9 kB")


def test_schemas_read_as_text() -> None:
    features = Features({"id": Value("string"), "tokens": List(Value("string"))})
    assert schema_text(dict(features)) == "id: string, tokens: List(string)"


def test_the_default_metadata_of_a_dataset() -> None:
    dataset = Dataset.from_dict({"n": list(range(10)), "text": [str(i) for i in range(10)]})
    metadata = DatasetTranslator(DatasetTranslatorSettings(preview_rows=2)).get_metadata(dataset)
    assert metadata[DatasetMetadataKey.ROW_COUNT.value] == dg.MetadataValue.int(10)
    assert metadata[DatasetMetadataKey.NUM_COLUMNS.value] == dg.MetadataValue.int(2)
    schema = metadata[DatasetMetadataKey.COLUMN_SCHEMA.value]
    assert [(column.name, column.type, column.description) for column in schema.columns] == [
        ("n", "int64", "Value('int64')"),
        ("text", "string", "Value('string')"),
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


def test_metadata_recorded_under_earlier_names_is_read_back() -> None:
    recipe, content = "a" * 32, "b" * 32
    earlier = dg.AssetMaterialization(
        "docs",
        metadata={
            "dagster_ds/fingerprint": recipe,
            "dagster_ds/content_fingerprint": content,
            "dagster_ds/transform_hash": "c" * 32,
        },
    )
    assert fingerprints_of(earlier) == (recipe, content)
    assert recorded_value(earlier.metadata, DatasetMetadataKey.RECIPE) == recipe
    assert recorded_value(earlier.metadata, DatasetMetadataKey.CODE_VERSION) == "c" * 32
    assert recorded_value(earlier.metadata, DatasetMetadataKey.SIZE) is None


def test_a_schema_check_passes_on_a_schema_recorded_by_an_earlier_release(
    tmp_path: Path,
) -> None:
    features = Features({"text": Value("string"), "tokens": List(Value("string"))})
    earlier = dg.TableSchema(
        columns=[dg.TableColumn(name, repr(feature)) for name, feature in features.items()]
    )
    check = schema_check("docs", features)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "docs", metadata={DatasetMetadataKey.COLUMN_SCHEMA.value: earlier}
            )
        )
        result = dg.materialize(
            [dg.AssetSpec("docs"), check],
            instance=instance,
            selection=dg.AssetSelection.checks(check),
        )
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.passed, evaluation.description
