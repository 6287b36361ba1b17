"""The public names of dagster_ds.features, their docstring examples, and a light import."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pyarrow as pa
import pytest

import dagster_ds
import dagster_ds.features as features

MODULES = [
    "dagster_ds.features",
    *(f"dagster_ds.features.{name}" for name in ("_dtypes", "_types", "_mapping", "_serialize")),
    *(f"dagster_ds.features.{name}" for name in ("_features", "_encode", "_checks", "_cast")),
    "dagster_ds.features._composite",
    *(f"dagster_ds.features.{name}" for name in ("_media", "_image", "_audio", "_decode")),
]


def test_all_is_sorted_and_exactly_the_public_names() -> None:
    assert features.__all__ == sorted(features.__all__)
    public = {name for name in vars(features) if not name.startswith("_")}
    assert set(features.__all__) == public - set(features.__internal__)
    assert features.__all__ == [
        "Array2D",
        "Array3D",
        "Array4D",
        "Array5D",
        "Audio",
        "ClassLabel",
        "FeatureType",
        "Features",
        "Image",
        "Json",
        "LargeList",
        "List",
        "Sequence",
        "Translation",
        "TranslationVariableLanguages",
        "Value",
        "arrow_type_to_feature",
        "cast_array",
        "cast_table",
        "feature_to_arrow_type",
        "features_from_schema_metadata",
        "features_to_schema_metadata",
    ]


def test_top_level_reexports() -> None:
    assert dagster_ds.__all__ == sorted(dagster_ds.__all__)
    for name in ("Features", "Value", "ClassLabel", "List", "Sequence", "CastError"):
        assert name in dagster_ds.__all__
    assert dagster_ds.Features is features.Features


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    loaded = importlib.import_module(module)
    globs = {name: getattr(features, name) for name in features.__all__} | {"pa": pa}
    result = doctest.testmod(loaded, extraglobs=globs, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_importing_features_stays_light() -> None:
    code = (
        "import sys, dagster_ds.features, dagster_ds;"
        "heavy = ('dagster', 'huggingface_hub', 'datasets', 'pandas');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
