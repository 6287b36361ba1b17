"""Dagster components of dagster_ds (the `dagster_dg_cli.registry_modules` entry point).

``dg list components`` lists `DatasetPipelineComponent`; ``dg scaffold defs
dagster_ds.orchestration.components.DatasetPipelineComponent my_pipeline``
writes a runnable pipeline to start from. `shared_resource` makes a project's
resources one object with a component's equal ones, so their definitions merge.

Example:
    >>> from dagster_ds.orchestration.components import DatasetPipelineComponent
    >>> DatasetPipelineComponent.__name__
    'DatasetPipelineComponent'
"""

from dagster_ds.orchestration.components.pipeline import (
    DatasetPipelineComponent as DatasetPipelineComponent,
)
from dagster_ds.orchestration.components.resources import shared_resource as shared_resource

__all__ = ["DatasetPipelineComponent", "shared_resource"]
