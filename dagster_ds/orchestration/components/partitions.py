"""Partitions declared in ``defs.yaml``: ``partitions_def`` of a source or a transform.

The shapes are Dagster's own component models (``type: daily`` with
``start_date``, ``type: static`` with ``partition_keys``), plus ``type:
dynamic`` with a ``name``. Equal declarations give equal definitions, so a
source and the transforms below it partitioned alike share partitions (the
identity mapping), and an unpartitioned transform reads all of them.
"""

from __future__ import annotations

from typing import Literal

import dagster as dg
from pydantic import Field

from dagster_ds.errors import DatasetAssetDefinitionError


class _TimeWindowModel(dg.Model):
    start_date: str = Field(description="The first partition's start, e.g. '2024-01-01'.")
    end_date: str | None = Field(default=None, description="Exclusive end; default: now.")
    timezone: str | None = None
    minute_offset: int = 0


class HourlyPartitionsModel(_TimeWindowModel):
    """``type: hourly``: one partition per hour from ``start_date``."""

    type: Literal["hourly"] = "hourly"


class DailyPartitionsModel(_TimeWindowModel):
    """``type: daily``: one partition per day from ``start_date``."""

    type: Literal["daily"] = "daily"
    hour_offset: int = 0


class StaticPartitionsModel(dg.Model):
    """``type: static``: a fixed list of ``partition_keys``."""

    type: Literal["static"] = "static"
    partition_keys: list[str] = Field(description="The partitions, e.g. [en, fr].")


class DynamicPartitionsModel(dg.Model):
    """``type: dynamic``: partitions added at run time (``instance.add_dynamic_partitions``)."""

    type: Literal["dynamic"] = "dynamic"
    name: str = Field(description="The dynamic partitions' name, shared by every asset using it.")


# (A plain union: Dagster's resolution of component models refuses Annotated fields;
# each model's `type` literal tells them apart.)
PartitionsModel = (
    HourlyPartitionsModel | DailyPartitionsModel | StaticPartitionsModel | DynamicPartitionsModel
)


def partitions_definition(
    asset: str, model: PartitionsModel | None
) -> dg.PartitionsDefinition | None:
    """The Dagster partitions definition a declaration names (None: unpartitioned).

    Raises:
        DatasetAssetDefinitionError: A time window's dates or timezone are invalid, or
            static partitions have no keys.
    """
    if model is None:
        return None
    if isinstance(model, StaticPartitionsModel) and not model.partition_keys:
        raise DatasetAssetDefinitionError(
            f"Asset {asset!r}: partitions_def of type static has no partition_keys; list them,"
            " e.g. partition_keys: [en, fr]."
        )
    try:
        if isinstance(model, HourlyPartitionsModel):
            return dg.HourlyPartitionsDefinition(
                start_date=model.start_date,
                end_date=model.end_date,
                timezone=model.timezone,
                minute_offset=model.minute_offset,
            )
        if isinstance(model, DailyPartitionsModel):
            return dg.DailyPartitionsDefinition(
                start_date=model.start_date,
                end_date=model.end_date,
                timezone=model.timezone,
                minute_offset=model.minute_offset,
                hour_offset=model.hour_offset,
            )
    except (ValueError, dg.DagsterInvalidDefinitionError) as error:
        raise DatasetAssetDefinitionError(
            f"Asset {asset!r}: partitions_def {model.model_dump(exclude_none=True)!r} is not a"
            f" valid {model.type} partitioning ({error}). Give start_date (and end_date) as"
            " 'YYYY-MM-DD' (hourly: 'YYYY-MM-DD-HH:MM') and a timezone such as 'UTC'."
        ) from error
    if isinstance(model, StaticPartitionsModel):
        return dg.StaticPartitionsDefinition(model.partition_keys)
    return dg.DynamicPartitionsDefinition(name=model.name)
