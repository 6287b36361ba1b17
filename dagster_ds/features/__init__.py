"""Features: the anchor's type system (`Value`, `ClassLabel`, `List`, ...) on Arrow.

Features describe a dataset's columns. They map to Arrow types both ways,
serialise to the anchor's JSON and YAML forms (so a dataset card or a Parquet
file written by ``datasets`` is read back intact, and the other way round), and
cast Arrow data with checks that refuse any silent loss.

Example:
    >>> import pyarrow as pa
    >>> from dagster_ds.features import ClassLabel, Features, Value, cast_table
    >>> features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    >>> table = cast_table(pa.table({"text": ["meh"], "label": ["neg"]}), features)
    >>> table.column("label").to_pylist()
    [0]
    >>> Features.from_arrow_schema(table.schema) == features
    True
"""

from dagster_ds.features._audio import Audio as Audio
from dagster_ds.features._cast import cast_array as cast_array
from dagster_ds.features._cast import cast_table as cast_table
from dagster_ds.features._composite import Array2D as Array2D
from dagster_ds.features._composite import Array3D as Array3D
from dagster_ds.features._composite import Array4D as Array4D
from dagster_ds.features._composite import Array5D as Array5D
from dagster_ds.features._composite import Translation as Translation
from dagster_ds.features._composite import (
    TranslationVariableLanguages as TranslationVariableLanguages,
)

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.features._decode import Decoder as Decoder
from dagster_ds.features._decode import SchemaMemo as SchemaMemo
from dagster_ds.features._decode import column_decoders as column_decoders
from dagster_ds.features._decode import column_features as column_features
from dagster_ds.features._decode import json_decoders as json_decoders
from dagster_ds.features._embed import embed_files as embed_files
from dagster_ds.features._encode import encode_nested as encode_nested
from dagster_ds.features._encode import holds_python_encoded as holds_python_encoded
from dagster_ds.features._features import Features as Features
from dagster_ds.features._features import (
    features_from_schema_metadata as features_from_schema_metadata,
)
from dagster_ds.features._features import features_to_schema_metadata as features_to_schema_metadata
from dagster_ds.features._features import with_features_metadata as with_features_metadata
from dagster_ds.features._image import Image as Image
from dagster_ds.features._image import image_columns as image_columns
from dagster_ds.features._image import is_pil_image as is_pil_image
from dagster_ds.features._mapping import arrow_type_to_feature as arrow_type_to_feature
from dagster_ds.features._mapping import feature_to_arrow_type as feature_to_arrow_type
from dagster_ds.features._media import Media as Media
from dagster_ds.features._schemas import concat_batches as concat_batches
from dagster_ds.features._schemas import conform as conform
from dagster_ds.features._schemas import table_to_batch as table_to_batch
from dagster_ds.features._schemas import unify_schemas as unify_schemas
from dagster_ds.features._types import ClassLabel as ClassLabel
from dagster_ds.features._types import FeatureType as FeatureType
from dagster_ds.features._types import Json as Json
from dagster_ds.features._types import LargeList as LargeList
from dagster_ds.features._types import List as List
from dagster_ds.features._types import Sequence as Sequence
from dagster_ds.features._types import Value as Value

__all__ = [
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

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "Decoder",
    "Media",
    "SchemaMemo",
    "column_decoders",
    "column_features",
    "concat_batches",
    "conform",
    "embed_files",
    "encode_nested",
    "holds_python_encoded",
    "image_columns",
    "is_pil_image",
    "json_decoders",
    "table_to_batch",
    "unify_schemas",
    "with_features_metadata",
]
