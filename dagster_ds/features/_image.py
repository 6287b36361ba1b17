"""`Image`: image files stored as bytes and/or path, decoded to PIL images (extra ``vision``)."""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features._media import Media, require

# Array dtypes Pillow stores without loss (as the anchor: int8 is not among them).
_EXACT_DTYPES = ("|b1", "|u1", "<u2", ">u2", "<i2", ">i2", "<u4", ">u4", "<i4", ">i4")
_EXACT_DTYPES += ("<f4", ">f4", "<f8", ">f8")


def _pil() -> Any:
    return require("PIL.Image", "vision", "Image")


def is_pil_image(value: Any) -> bool:
    """Whether ``value`` is a PIL image (without importing Pillow when nobody has)."""
    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(value, module.Image)


def image_columns(columns: Mapping[str, Any]) -> dict[str, Image]:
    """The columns of Python values whose first non-null value is a PIL image (anchor: Image)."""
    if "PIL.Image" not in sys.modules:
        return {}
    found: dict[str, Image] = {}
    for name, values in columns.items():
        if isinstance(values, list | tuple):
            items: Sequence[Any] = values  # pyright: ignore[reportUnknownVariableType]
            first = next((value for value in items if value is not None), None)
            if is_pil_image(first):
                found[name] = Image()
    return found


@dataclass(repr=False)
class Image(Media):
    """Images: stored as the anchor stores them, ``struct<bytes: binary, path: string>``.

    Accepts a path (``str`` or ``pathlib.Path``), encoded bytes, a
    ``{"bytes": ..., "path": ...}`` dict, a numpy array (stored as PNG, or TIFF for
    other dtypes) or a PIL image (its file if it has one, else PNG/TIFF bytes).
    Reading gives a ``PIL.Image.Image`` (converted to ``mode`` if given), or the
    stored dict when ``decode=False``. Needs Pillow: ``pip install 'dagster-ds[vision]'``.

    Args:
        mode: The mode to convert images to when decoding (``"RGB"``, ``"L"``, ...).
        decode: Whether reading decodes the images.
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> Image().pa_type
        StructType(struct<bytes: binary, path: string>)
        >>> Image(decode=False).encode_example("cat.png")
        {'bytes': None, 'path': 'cat.png'}
    """

    mode: str | None = None
    decode: bool = True
    id: str | None = None
    dtype: ClassVar[str] = "PIL.Image.Image"
    _type: ClassVar[str] = "Image"
    _form_fields: ClassVar[tuple[str, ...]] = ("mode", "decode")

    def __repr__(self) -> str:
        return f"Image(mode={self.mode!r}, decode={self.decode})"

    def encode_example(self, value: Any) -> dict[str, Any] | None:
        """An image, array, path or bytes in stored form.

        Example:
            >>> Image().encode_example(b"...")
            {'bytes': b'...', 'path': None}
        """
        if isinstance(value, list):
            import numpy as np

            value = np.array(value)
        if is_pil_image(value):
            filename = getattr(value, "filename", "")
            if filename:
                return {"bytes": None, "path": filename}
            return {"bytes": _image_bytes(value), "path": None}
        if type(value).__module__ == "numpy" and hasattr(value, "dtype"):
            return {"bytes": _array_bytes(value), "path": None}
        return super().encode_example(value)

    def decode_example(self, value: Any) -> Any:
        """The stored dict as a ``PIL.Image.Image`` (a decoded image is returned as is).

        Raises:
            MissingExtraError: Pillow is not installed.
            FeatureError: ``decode=False``, or the value has neither bytes nor path.
        """
        self.check_decoding()
        if value is None or not isinstance(value, dict):
            return value
        image_module = _pil()
        data, _ = self.file_bytes(value)  # pyright: ignore[reportUnknownArgumentType]
        image = image_module.open(io.BytesIO(data))
        image.load()  # no file handle is left open
        orientation = image.getexif().get(image_module.ExifTags.Base.Orientation)
        if orientation is not None:
            ops = require("PIL.ImageOps", "vision", "Image")
            image = ops.exif_transpose(image)
        if self.mode and self.mode != image.mode:
            image = image.convert(self.mode)
        return image

    def objects_to_storage(self, array: pa.Array) -> pa.Array:
        """Image arrays (nested lists of pixels) stored as PNG/TIFF bytes."""
        if not pa.types.is_list(array.type) and not pa.types.is_large_list(array.type):
            return super().objects_to_storage(array)
        import numpy as np

        values = [None if v is None else np.array(v) for v in array.to_pylist()]
        return self.encoded_array(values)


def _image_bytes(image: Any) -> bytes:
    """A PIL image in its own format when Pillow can write it, else PNG (or TIFF)."""
    image_module = _pil()
    image_module.init()
    writable = set(image_module.OPEN) & set(image_module.SAVE)
    if image.format in writable:
        kind = image.format
    else:
        kind = "PNG" if image.mode in ("1", "L", "LA", "RGB", "RGBA") else "TIFF"
    buffer = io.BytesIO()
    image.save(buffer, format=kind)
    return buffer.getvalue()


def _array_bytes(array: Any) -> bytes:
    """A numpy array as image bytes, with the anchor's dtype rules.

    Multi-channel arrays must be integers and are stored as ``uint8``; other arrays
    keep their dtype when Pillow stores it exactly, else the largest smaller one of
    the same kind (a warning says so).
    """
    import warnings

    import numpy as np

    dtype = array.dtype
    order = (
        dtype.byteorder if dtype.byteorder != "=" else ("<" if sys.byteorder == "little" else ">")
    )
    exact = [np.dtype(name) for name in _EXACT_DTYPES]
    target = None
    if array.ndim > 2:
        if dtype.kind not in "ui":
            raise FeatureError(
                f"Image arrays with channels must be integers (stored as uint8), got {dtype}."
            )
        target = np.dtype("|u1")
    elif dtype in exact:
        target = dtype
    else:
        size = dtype.itemsize
        while size >= 1 and target is None:
            candidate = np.dtype(f"{order}{dtype.kind}{size}")
            target = candidate if candidate in exact else None
            size //= 2
        if target is None:
            raise FeatureError(
                f"Image arrays of dtype {dtype} cannot be stored; use one of {_EXACT_DTYPES}."
            )
    if target != dtype:
        warnings.warn(f"Downcasting image array dtype {dtype} to {target}.", stacklevel=4)
    return _image_bytes(_pil().fromarray(array.astype(target)))
