"""DatasetPipelineComponent: declared in defs.yaml, scaffolded, loaded and materialized; dg CLI."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster.components.testing import create_defs_folder_sandbox

from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.orchestration import DatasetIOManager, HubResource
from dagster_ds.orchestration.components import DatasetPipelineComponent, shared_resource
from tests.dg import run_dg
from tests.orchestration.conftest import latest, metadata_value

COMPONENT = "dagster_ds.orchestration.components.DatasetPipelineComponent"

# Dagster 1.13's component loader, not our code: it reads defs.yaml with pydantic's
# deprecated parse_obj_as, and tags every component asset with beta code references.
pytestmark = [
    pytest.mark.filterwarnings("ignore:`parse_obj_as` is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::dagster.BetaWarning"),
]


def _yaml(attributes: dict[str, Any]) -> dict[str, Any]:
    return {"type": COMPONENT, "attributes": attributes}


def test_the_scaffolded_pipeline_loads_and_materializes(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(DatasetPipelineComponent, defs_path="docs_pipeline")
        assert {"defs.yaml", "transforms.py", "data"} <= {p.name for p in path.iterdir()}
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, DatasetPipelineComponent)
            keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
            assert keys == {"docs", "lowercased"}
            result = dg.materialize(
                [
                    a
                    for a in defs.assets or []
                    if isinstance(a, dg.AssetsDefinition | dg.SourceAsset)
                ],
                instance=instance,
                resources=defs.resources,  # the component's own io_manager and hub
                selection=["lowercased"],
            )
            assert result.success
            lowered = latest(instance, "lowercased")
            preview = metadata_value(lowered, "dagster_ds/preview")
            assert "the quick brown fox" in preview
            assert metadata_value(lowered, "dagster/row_count") == 3

            # Its sources are observed by a sensor in its own process: a run only on a change.
            repository = defs.get_repository_def()
            sensor = repository.get_sensor_def("observe_" + path.name)
            for expected in ("observed", "0 of 1 sources changed"):
                context = dg.build_sensor_context(instance=instance, repository_def=repository)
                data = sensor.evaluate_tick(context)
                assert not data.run_requests
                for event in data.asset_events:  # as the sensor daemon records them
                    instance.report_runless_asset_event(event)
                outcome = "observed" if data.asset_events else (data.skip_message or "")
                assert outcome.splitlines()[0] == expected


def test_fn_kwargs_enter_the_code_version_and_bad_declarations_are_clear() -> None:
    def code_version(strip: bool) -> str:
        with create_defs_folder_sandbox(project_name="hashed_project") as sandbox:
            path = sandbox.scaffold_component(DatasetPipelineComponent, defs_path="p")
            text = (
                (path / "defs.yaml")
                .read_text()
                .replace("strip: true", f"strip: {str(strip).lower()}")
            )
            (path / "defs.yaml").write_text(text)
            with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
                node = defs.resolve_asset_graph().get(dg.AssetKey("lowercased"))
                assert node.code_version is not None
                return node.code_version

    assert code_version(True) == code_version(True)
    assert code_version(True) != code_version(False)

    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(
            DatasetPipelineComponent,
            defs_path="broken",
            defs_yaml_contents=_yaml(
                {"transforms": [{"name": "t", "fn": ".missing.fn"}], "resources": False}
            ),
        )
        assert "fn '.missing.fn' cannot be imported" in _build_error(sandbox, path)
        (path / "defs.yaml").write_text(
            json.dumps(
                _yaml(
                    {
                        "transforms": [
                            {"name": "t", "fn": ".transforms.lowercase", "fn_kwargs": {"x": 1}}
                        ]
                    }
                )
            )
        )
        (path / "transforms.py").write_text("def lowercase(docs):\n    return docs\n")
        assert "fn_kwargs ['x'] are not parameters" in _build_error(sandbox, path)


def _build_error(sandbox: Any, path: Path) -> str:
    """Our error under Dagster's ComponentTreeException, which names the defs.yaml."""
    with pytest.raises(Exception) as raised:  # noqa: PT011, SIM117
        with sandbox.load_component_and_build_defs(defs_path=path):
            pass
    error: BaseException | None = raised.value
    while error is not None and not isinstance(error, DatasetAssetDefinitionError):
        error = error.__cause__
    assert error is not None, raised.value
    return str(error)


def _dg(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_dg(project, project / "home", *args, path=project / "src")


@pytest.mark.slow
def test_dg_scaffolds_checks_and_lists_the_component(tmp_path: Path) -> None:
    project = tmp_path / "project"
    package = project / "src" / "docs_project"
    (package / "defs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            import dagster as dg


            @dg.definitions
            def defs() -> dg.Definitions:
                return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
            """
        )
    )
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [project]
            name = "docs-project"
            version = "0.1.0"

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "docs_project"
            """
        )
    )
    scaffolded = _dg(project, "scaffold", "defs", COMPONENT, "docs_pipeline")
    assert scaffolded.returncode == 0, scaffolded.stdout + scaffolded.stderr
    assert (package / "defs" / "docs_pipeline" / "defs.yaml").is_file()
    checked = _dg(project, "check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = _dg(project, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    defs = json.loads(listed.stdout)
    assert {asset["asset_key"] for asset in defs["assets"]} == {"docs", "lowercased"}
    assert [check["key"] for check in defs["asset_checks"]] == ["lowercased:row_count"]


def test_the_library_is_registered_with_dagster() -> None:
    from dagster_ds import __version__

    libraries = dg.DagsterLibraryRegistry.get()  # pyright: ignore[reportPrivateImportUsage]
    assert libraries["dagster-ds"] == __version__


PARTITIONED_TRANSFORMS = """
from dagster_ds import Dataset


def shout(logs: Dataset) -> Dataset:
    return logs.map(lambda row: {"text": row["text"].upper()})


def keep(texts: Dataset) -> Dataset:
    return texts
"""


def test_partitions_declared_in_defs_yaml_materialize_one_partition(
    instance: dg.DagsterInstance,
) -> None:
    daily = {"type": "daily", "start_date": "2024-01-01", "end_date": "2024-01-04"}
    attributes = {
        "sources": [
            {
                "name": "logs",
                "path": "json",
                "data_files": "data/{partition_key}.jsonl",
                "partitions_def": daily,
            },
            {
                "name": "texts",
                "path": "json",
                "data_files": "data/{partition_key}.jsonl",
                "partitions_def": {
                    "type": "static",
                    "partition_keys": ["2024-01-01", "2024-01-02"],
                },
            },
            {
                "name": "uploads",
                "path": "json",
                "data_files": "data/{partition_key}.jsonl",
                "partitions_def": {"type": "dynamic", "name": "uploads"},
            },
        ],
        "transforms": [
            {"name": "shouted", "fn": ".transforms.shout", "partitions_def": daily},
            {
                "name": "hourly",
                "fn": ".transforms.shout",
                "inputs": {"logs": "shouted"},
                "partitions_def": {"type": "hourly", "start_date": "2024-01-01-00:00"},
            },
            {
                "name": "kept",
                "fn": ".transforms.keep",
                "partitions_def": {
                    "type": "static",
                    "partition_keys": ["2024-01-01", "2024-01-02"],
                },
            },
            {"name": "every_day", "fn": ".transforms.shout", "inputs": {"logs": "shouted"}},
        ],
        "storage": "store",
    }
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(
            DatasetPipelineComponent, defs_path="days", defs_yaml_contents=_yaml(attributes)
        )
        (path / "transforms.py").write_text(PARTITIONED_TRANSFORMS)
        for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
            (path / "data" / f"{day}.jsonl").write_text(f'{{"text": "day {day}"}}\n')
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            graph = defs.resolve_asset_graph()
            partitions = {
                key.to_user_string(): graph.get(key).partitions_def
                for key in graph.get_all_asset_keys()
            }
            assert partitions["logs"] == partitions["shouted"]
            assert isinstance(partitions["shouted"], dg.DailyPartitionsDefinition)
            assert partitions["shouted"].get_partition_keys() == [
                "2024-01-01",
                "2024-01-02",
                "2024-01-03",
            ]
            assert isinstance(partitions["hourly"], dg.HourlyPartitionsDefinition)
            assert isinstance(partitions["kept"], dg.StaticPartitionsDefinition)
            assert partitions["texts"] == partitions["kept"]
            assert partitions["uploads"] == dg.DynamicPartitionsDefinition(name="uploads")
            assert partitions["every_day"] is None

            assets = [
                a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition | dg.SourceAsset)
            ]
            result = dg.materialize(
                assets,
                instance=instance,
                resources=defs.resources,
                selection=["shouted"],
                partition_key="2024-01-02",
            )
            assert result.success
            (record_,) = instance.fetch_materializations(dg.AssetKey("shouted"), limit=5).records
            assert record_.partition_key == "2024-01-02"
            materialization = record_.asset_materialization
            assert materialization is not None
            assert "DAY 2024-01-02" in metadata_value(materialization, "dagster_ds/preview")
            assert (materialization.tags or {})["dagster/data_version"] == metadata_value(
                materialization, "dagster_ds/data_version"
            )
            assert (path / "store").is_dir()  # the component's own store, persistent


def test_a_bad_partitions_declaration_is_refused_clearly() -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(
            DatasetPipelineComponent,
            defs_path="bad",
            defs_yaml_contents=_yaml(
                {
                    "transforms": [
                        {
                            "name": "t",
                            "fn": ".transforms.lowercase",
                            "partitions_def": {"type": "daily", "start_date": "January"},
                        }
                    ],
                    "resources": False,
                }
            ),
        )
        assert "is not a valid daily partitioning" in _build_error(sandbox, path)


def test_equal_resources_of_components_and_the_project_merge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    with create_defs_folder_sandbox() as sandbox:
        sandbox.scaffold_component(DatasetPipelineComponent, defs_path="first")
        transform = {
            "name": "lowered_2",
            "fn": ".transforms.lowercase",
            "fn_kwargs": {"strip": True},
            "inputs": {"docs": "docs_2"},
        }
        second = sandbox.scaffold_component(
            DatasetPipelineComponent,
            defs_path="second",
            defs_yaml_contents=_yaml(
                {
                    "sources": [{"name": "docs_2", "path": "json", "data_files": "data/*.jsonl"}],
                    "transforms": [transform],
                    "pushes": [{"name": "hub_2", "repo_id": "me/d", "splits": {"x": "lowered_2"}}],
                }
            ),
        )
        (second / "transforms.py").write_text(
            (second.parent / "first" / "transforms.py").read_text()
        )
        # Two components, both with resources: true (the default), in one defs folder.
        with sandbox.build_all_defs() as components:
            project = dg.Definitions(
                resources={
                    "io_manager": shared_resource(DatasetIOManager()),
                    "hub": shared_resource(HubResource()),
                }
            )
            merged = dg.Definitions.merge(project, components)
            assert {"io_manager", "hub"} <= set(merged.resources or {})
            merged.get_repository_def().validate_loadable()
            # A project whose io_manager really differs still clashes.
            other = dg.Definitions(
                resources={"io_manager": shared_resource(DatasetIOManager(base_dir="elsewhere"))}
            )
            with pytest.raises(dg.DagsterInvariantViolationError, match="'io_manager'"):
                dg.Definitions.merge(other, components)


def test_shared_resources_are_equal_in_class_and_configuration() -> None:
    token = shared_resource(HubResource(token=dg.EnvVar("HF_TOKEN")))
    assert shared_resource(HubResource(token=dg.EnvVar("HF_TOKEN"))) is token
    assert shared_resource(HubResource(token="HF_TOKEN")) is not token  # a literal token
    store = shared_resource(DatasetIOManager(storage_options={"key": "a"}))
    assert shared_resource(DatasetIOManager(storage_options={"key": "a"})) is store
    assert shared_resource(DatasetIOManager(storage_options={"key": "b"})) is not store
    assert shared_resource(DatasetIOManager(base_dir="x")) is not shared_resource(
        DatasetIOManager(base_dir="y")
    )
