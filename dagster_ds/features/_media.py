"""What `Image` and `Audio` share: files stored as ``struct<bytes: binary, path: string>``.

The storage layout, the JSON form and the accepted inputs are the anchor's, so a
dataset of images or sounds written by either library reads back in the other.
The codecs (Pillow, soundfile) are optional extras, imported on first use only.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pyarrow as pa

from dagster_ds.errors import FeatureError, MissingExtraError
from dagster_ds.features._composite import Composite
from dagster_ds.features._types import Value

STORAGE = {"bytes": Value("binary"), "path": Value("string")}
STORAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import an optional codec, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"The {feature} feature needs {module.split('.')[0]!r}, which is not installed; "
            f"install it with: pip install 'dagster-ds[{extra}]'."
        ) from error


def read_file(path: str) -> bytes:
    """The bytes of a local path or an fsspec URL (``hf://...``, ``s3://...``)."""
    if os.path.isfile(path):
        with open(path, "rb") as file:
            return file.read()
    import fsspec

    with fsspec.open(path.split("::")[-1] if "://" in path else path, "rb") as file:
        data: bytes = file.read()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
        return data


class Media(Composite):
    """A file feature: stored as its bytes and/or path; decoded by a codec on read."""

    _type: ClassVar[str]
    _form_fields: ClassVar[tuple[str, ...]]
    decode: bool

    @property
    def storage(self) -> Any:
        """``{"bytes": Value("binary"), "path": Value("string")}``, the anchor's storage."""
        return dict(STORAGE)

    def to_form(self) -> dict[str, Any]:
        """The JSON form: the fields that differ from their defaults, in the anchor's order."""
        defaults = type(self)()
        return {
            name: getattr(self, name)
            for name in self._form_fields
            if getattr(self, name) != getattr(defaults, name)
        }

    @classmethod
    def from_form(cls, fields: Mapping[str, Any]) -> Media:
        """The feature of a JSON form (unknown keys of newer anchors are ignored)."""
        known = {name: fields[name] for name in (*cls._form_fields, "id") if name in fields}
        return cls(**known)

    def encode_example(self, value: Any) -> dict[str, Any] | None:
        """A path, bytes or ``{"bytes", "path"}`` dict as stored; subclasses add objects."""
        if value is None:
            return None
        if isinstance(value, str):
            return {"bytes": None, "path": value}
        if isinstance(value, Path):
            return {"bytes": None, "path": str(value.absolute())}
        if isinstance(value, bytes | bytearray | memoryview):
            return {"bytes": bytes(value), "path": None}
        if isinstance(value, Mapping):
            record: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            data, path = record.get("bytes"), record.get("path")
            if data is None and path is None:
                raise FeatureError(
                    f"An {self._type} value needs a 'path' or 'bytes', got {dict(record)!r}."
                )
            if path is not None and os.path.isfile(path):
                return {"bytes": None, "path": path}  # the file is there: do not copy it
            return {"bytes": data, "path": path}
        raise FeatureError(
            f"{self._type} cannot store a {type(value).__name__} ({value!r:.80}); give a path, "
            "bytes or a {'bytes': ..., 'path': ...} dict."
        )

    def file_bytes(self, value: Mapping[str, Any]) -> tuple[bytes, str | None]:
        """The stored file's bytes (read from its path when not embedded) and its path."""
        data, path = value.get("bytes"), value.get("path")
        if data is not None:
            return bytes(data), path
        if path is None:
            raise FeatureError(f"An {self._type} value has neither 'bytes' nor 'path': {value!r}.")
        return read_file(path), path

    def check_decoding(self) -> None:
        if not self.decode:
            raise FeatureError(
                f"Decoding is disabled for this feature; use {self._type}(decode=True)."
            )

    def to_storage(self, array: pa.Array) -> pa.Array:
        """Arrow data as ``struct<bytes, path>``: paths (strings), bytes, or such structs."""
        if isinstance(array, pa.ExtensionArray):
            array = array.storage
        kind = array.type
        mask = array.is_null()
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            empty = pa.nulls(len(array), pa.binary())
            return pa.StructArray.from_arrays(
                [empty, array.cast(pa.string())], ["bytes", "path"], mask=mask
            )
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            empty = pa.nulls(len(array), pa.string())
            return pa.StructArray.from_arrays(
                [array.cast(pa.binary()), empty], ["bytes", "path"], mask=mask
            )
        if isinstance(array, pa.StructArray) and kind.get_field_index("array") < 0:
            fields = {kind.field(i).name: array.field(i) for i in range(kind.num_fields)}
            data = fields.get("bytes", pa.nulls(len(array), pa.binary()))
            path = fields.get("path", pa.nulls(len(array), pa.string()))
            return pa.StructArray.from_arrays(
                [data.cast(pa.binary()), path.cast(pa.string())], ["bytes", "path"], mask=mask
            )
        return self.objects_to_storage(array)

    def objects_to_storage(self, array: pa.Array) -> pa.Array:
        """Other Arrow data (image arrays, sound samples) encoded value by value."""
        raise FeatureError(
            f"A column of {array.type} cannot be cast to {self._type}; give paths (strings), "
            "bytes, or {'bytes', 'path'} structs."
        )

    def encoded_array(self, values: list[Any]) -> pa.Array:
        """Python values encoded and stored as ``struct<bytes, path>``."""
        return pa.array([self.encode_example(value) for value in values], STORAGE_TYPE)
