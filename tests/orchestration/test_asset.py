"""@dataset_asset in real Dagster runs: skipping by fingerprint, versions, metadata, errors."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, DatasetMetadataKey, dataset_asset
from tests.orchestration._chain import build, record
from tests.orchestration.conftest import (
    data_version,
    latest,
    metadata_value,
    observed_version,
    tag,
)

Key = DatasetMetadataKey


class MinLength(dg.Config):
    characters: int = 2


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every stored data and manifest file with its inode and modification time (ns).

    The store's bookkeeping (last use, reader leases, locks) is left out.
    """
    return {
        str(path.relative_to(folder)): (path.stat().st_ino, path.stat().st_mtime_ns)
        for path in (folder / "objects").rglob("*")
        if path.is_file() and path.name != "last-used"
    }


def _run(
    assets: Sequence[dg.AssetsDefinition | dg.SourceAsset],
    instance: dg.DagsterInstance,
    storage: Path,
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        assets,
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(storage))},
        selection=assets,
    )


def test_second_run_skips_every_transform_and_rewrites_nothing(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    assets = build(str(corpus)).all
    storage = tmp_path / "storage"
    first = _run(assets, instance, storage)
    assert body_calls() == ["cleaned", "tokens", "counts"]
    versions = {key: data_version(instance, key) for key in ("cleaned", "tokens", "counts")}
    stored = _files(storage)

    second = _run(assets, instance, storage)

    assert first.success
    assert second.success
    assert body_calls() == ["cleaned", "tokens", "counts"]  # no function ran again
    assert _files(storage) == stored  # nothing written, nothing replaced
    for key, version in versions.items():
        materialization = latest(instance, key)
        assert data_version(instance, key) == version
        assert metadata_value(materialization, Key.CACHE) == "hit"
        assert metadata_value(materialization, Key.BYTES_WRITTEN) == 0
    messages = [
        event.message or ""
        for event in instance.all_logs(second.run_id)
        if event.message and event.message.startswith("Skipped ")
    ]
    assert len(messages) == 3
    assert all("recipe" in message and "unchanged" in message for message in messages)


def test_changed_child_runs_in_the_same_run_as_its_unchanged_parent(
    tmp_path: Path,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    storage = tmp_path / "storage"
    assert _run(build(str(corpus)).all, instance, storage).success
    before = {key: data_version(instance, key) for key in ("cleaned", "tokens")}

    original, changed = build(str(corpus)), build(str(corpus), separator="o")
    # Only `tokens` uses the separator: only its code version changes.
    assert changed.cleaned.code_versions_by_key == original.cleaned.code_versions_by_key
    assert changed.tokens.code_versions_by_key != original.tokens.code_versions_by_key
    assert changed.counts.code_versions_by_key == original.counts.code_versions_by_key
    assert _run(changed.all, instance, storage).success

    assert body_calls() == ["cleaned", "tokens", "counts", "tokens", "counts"]
    assert metadata_value(latest(instance, "cleaned"), Key.CACHE) == "hit"
    assert data_version(instance, "cleaned") == before["cleaned"]
    assert metadata_value(latest(instance, "tokens"), Key.CACHE) == "miss"
    assert data_version(instance, "tokens") != before["tokens"]
    assert metadata_value(latest(instance, "counts"), Key.CACHE) == "miss"


def test_recorded_data_version_is_the_fingerprint_of_the_loaded_dataset(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    assets = build(str(corpus)).all
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    defs = dg.Definitions(assets=assets, resources=resources)
    assert _run(assets, instance, tmp_path / "storage").success
    assert body_calls() == ["cleaned", "tokens", "counts"]

    assert observed_version(instance, "docs") is not None
    recorded = {"docs": observed_version(instance, "docs")}
    recorded |= {key: data_version(instance, key) for key in ("cleaned", "tokens", "counts")}
    for key, version in recorded.items():
        loaded = defs.load_asset_value(key, instance=instance)
        assert isinstance(loaded, Dataset)
        assert loaded._fingerprint == version, key
    counts = defs.load_asset_value("counts", instance=instance)
    assert isinstance(counts, Dataset)
    assert counts["num_tokens"][:] == [2, 4]
    assert tag(instance, "counts", "dagster/input_data_version/tokens") == recorded["tokens"]


def test_materialization_metadata(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus))
    assert _run(chain.all, instance, tmp_path / "storage").success
    tokens = latest(instance, "tokens")
    # Two fingerprints: the recipe (decides the skip) and the content (the data version).
    assert metadata_value(tokens, Key.DATA_VERSION) == data_version(instance, "tokens")
    assert metadata_value(tokens, Key.RECIPE) != data_version(instance, "tokens")
    # One name per concept: no value is recorded twice under another name.
    hashes = [
        text
        for value in tokens.metadata.values()
        if re.fullmatch("[0-9a-f]{32}", text := str(getattr(value, "value", value)))
    ]
    assert len(hashes) == len(set(hashes)) == 3  # recipe, data version, code version
    assert not {
        "dagster_ds/fingerprint",
        "dagster_ds/content_fingerprint",
        "dagster_ds/transform_hash",
        "dagster_ds/parent_fingerprints",
    } & set(tokens.metadata)
    assert tag(instance, "tokens", "dagster/code_version") == metadata_value(
        tokens, Key.CODE_VERSION
    )
    assert (
        tag(instance, "tokens", "dagster/code_version")
        == chain.tokens.code_versions_by_key[dg.AssetKey("tokens")]
    )
    assert metadata_value(tokens, Key.PARENT_DATA_VERSIONS) == {
        "cleaned": data_version(instance, "cleaned")
    }
    assert metadata_value(tokens, "dagster/row_count") == 2
    schema = metadata_value(tokens, "dagster/column_schema")
    assert [(column.name, column.type, column.description) for column in schema.columns] == [
        ("text", "string", "Value('string')"),
        ("tokens", "list<string>", "List(Value('string'))"),
    ]
    preview = metadata_value(tokens, Key.PREVIEW)
    assert preview.splitlines()[0] == "| text | tokens |"
    assert '| hello world | \\["hello", "world"] |' in preview  # escaped for Markdown
    assert metadata_value(tokens, Key.CACHE) == "miss"
    assert metadata_value(tokens, Key.SIZE) > 0
    assert 0 < metadata_value(tokens, Key.DURATION) < 60
    # The map inside the function stored the tokens column: the materialization wrote it.
    assert metadata_value(tokens, Key.BYTES_WRITTEN) > 0
    stored = Path(metadata_value(tokens, Key.PATH))  # the version's manifest, in the store
    assert stored.parent.parent == tmp_path / "storage" / "objects"
    assert (stored / "manifest.json").is_file()


def test_config_values_enter_the_fingerprint(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    docs = build(str(corpus)).docs

    @dataset_asset
    def long_texts(docs: Dataset, config: MinLength) -> Dataset:
        record("long_texts")
        return docs.filter(lambda example: len(example["text"]) >= config.characters)

    def run(characters: int) -> str:
        config = {"ops": {"long_texts": {"config": {"characters": characters}}}}
        result = dg.materialize(
            [docs, long_texts],
            instance=instance,
            resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
            run_config=config,
        )
        assert result.success
        return data_version(instance, "long_texts")

    first, same, other = run(2), run(2), run(12)
    assert first == same != other
    assert body_calls() == ["long_texts", "long_texts"]
    assert metadata_value(latest(instance, "long_texts"), "dagster/row_count") == 1


def test_a_function_that_cannot_be_hashed_warns_and_always_runs(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    from dagster_ds import UnhashableTransformWarning

    pending = (number for number in range(3))  # generators cannot be pickled
    docs = build(str(corpus)).docs
    with pytest.warns(UnhashableTransformWarning, match="closure variable 'pending'"):

        @dataset_asset
        def locked(docs: Dataset) -> Dataset:
            record("locked")
            assert pending is not None
            return docs

    assert locked.code_versions_by_key[locked.key] is None
    for _ in range(2):
        assert _run([docs, locked], instance, tmp_path / "storage").success
    assert body_calls() == ["locked", "locked"]
    assert metadata_value(latest(instance, "locked"), Key.CACHE).startswith("disabled")


# -- bad input -------------------------------------------------------------


def _failure(result: dg.ExecuteInProcessResult) -> str:
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    assert error is not None
    causes = [error, *([error.cause] if error.cause else [])]
    return "\n".join(item.message for item in causes)


def test_returning_something_else_than_a_dataset_fails_naming_the_asset(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path
) -> None:
    docs = build(str(corpus)).docs

    @dataset_asset
    def counted(docs: Dataset) -> Dataset:
        return {"rows": docs.num_rows}  # type: ignore[return-value]

    result = dg.materialize(
        [docs, counted],
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        raise_on_error=False,
    )
    message = _failure(result)
    assert "Asset 'counted' returned a dict ({'rows': 3})" in message
    assert "DatasetAssetOutputError" in message


def test_a_parameter_naming_no_asset_fails_at_definition_time(corpus: Path) -> None:
    docs = build(str(corpus)).docs

    @dataset_asset
    def cleaned(dcos: Dataset) -> Dataset:
        return dcos

    # Dagster's own check, when the code location loads: it names the missing asset.
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r'Input asset "\["dcos"\]" is not'):
        dg.Definitions.validate_loadable(dg.Definitions(assets=[docs, cleaned]))


def test_a_source_without_files_fails_naming_the_source(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    assets = build(str(tmp_path / "nowhere" / "*.jsonl")).all
    result = dg.materialize(
        assets,
        instance=instance,
        resources={"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))},
        raise_on_error=False,
    )
    message = _failure(result)
    assert "DatasetSourceNotFoundError" in message
    assert "dataset_source 'docs'" in message
    assert "nowhere" in message


def test_a_parameter_fed_something_else_than_a_dataset_fails_naming_it(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(io_manager_key="plain")
    def settings() -> int:
        return 3

    @dataset_asset
    def uses_settings(settings: Dataset) -> Dataset:
        return settings

    result = dg.materialize(
        [settings, uses_settings],
        instance=instance,
        resources={
            "io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage")),
            "plain": dg.FilesystemIOManager(base_dir=str(tmp_path / "plain")),
        },
        raise_on_error=False,
    )
    assert "Asset 'uses_settings': parameter 'settings' received a int" in _failure(result)


def test_declaration_errors_name_the_asset() -> None:
    from dagster_ds.errors import DatasetAssetDefinitionError

    with pytest.raises(DatasetAssetDefinitionError, match=r"'merged': the function takes \*parts"):

        @dataset_asset
        def merged(*parts: Dataset) -> Dataset:
            return parts[0]

    with pytest.raises(
        DatasetAssetDefinitionError, match="'tuned': parameter 'config' is annotated"
    ):

        @dataset_asset
        def tuned(docs: Dataset, config: dict) -> Dataset:
            return docs

    with pytest.raises(DatasetAssetDefinitionError, match="not valid"):
        dataset_asset(push_to_hub="not a repo id")(lambda docs: docs)
