"""The feature types: Value, ClassLabel, List (and legacy Sequence), LargeList, Json."""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable, Iterable
from collections.abc import Sequence as CollectionsSequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import pyarrow as pa

from dagster_ds.errors import ClassLabelError, ClassLabelNamesError, FeatureError
from dagster_ds.features._checks import per_chunk
from dagster_ds.features._dtypes import canonical_dtype, dtype_to_arrow
from dagster_ds.features._labels import cast_labels

_MAX_NAMES_SHOWN = 20


# How features pickle: the reader and writer of their serialised form (see `pickle_as_form`).
_pickled_form: list[tuple[Callable[[str], Any], Callable[[Any], str]]] = []


def pickle_as_form(read: Callable[[str], Any], write: Callable[[Any], str]) -> None:
    """Make features pickle (and hash) as ``read(write(feature))``.

    `_serialize` knows every feature type (media and composite ones too), so it sits
    above this module and hands its functions down when imported; the package's
    ``__init__`` imports it, so they are set before any feature can be pickled.
    """
    _pickled_form[:] = [(read, write)]


class _Reducible:
    """Pickles (and hashes) a feature as its serialised form, which keeps field order."""

    def __reduce__(self) -> tuple[Any, ...]:
        read, write = _pickled_form[0]
        return read, (write(self),)


@dataclass(repr=False)
class Value(_Reducible):
    """A scalar of one Arrow type, named by the anchor's dtype string.

    Dtypes: ``null``, ``bool``, ``int8`` ... ``int64``, ``uint8`` ... ``uint64``,
    ``float16``, ``float32`` (alias ``float``), ``float64`` (alias ``double``),
    ``string``, ``large_string``, ``string_view``, ``binary``, ``large_binary``,
    ``binary_view``, ``fixed_size_binary[n]``, ``date32``, ``date64``,
    ``time32[s|ms]``, ``time64[us|ns]``, ``timestamp[unit]``,
    ``timestamp[unit, tz=zone]``, ``duration[unit]``, ``decimal128(p, s)``,
    ``decimal256(p, s)``.

    Args:
        dtype: The dtype string.
        id: An optional identifier, kept for compatibility with the anchor.

    Raises:
        FeatureError: ``dtype`` is not a valid dtype string.

    Example:
        >>> Value("int32").pa_type
        DataType(int32)
    """

    dtype: str
    id: str | None = None
    _type: ClassVar[str] = "Value"

    def __post_init__(self) -> None:
        self.dtype = canonical_dtype(self.dtype)
        dtype_to_arrow(self.dtype)  # validate now rather than at first use

    @property
    def pa_type(self) -> pa.DataType:
        """The Arrow type of this value."""
        return dtype_to_arrow(self.dtype)

    def __call__(self) -> pa.DataType:
        return self.pa_type

    def encode_example(self, value: Any) -> Any:
        """Coerce a Python value to this dtype's Python type (``"3"`` to ``3`` for ints).

        Example:
            >>> Value("int64").encode_example("3")
            3
        """
        kind = self.pa_type
        if pa.types.is_boolean(kind):
            return bool(value)
        if pa.types.is_integer(kind):
            return int(value)
        if pa.types.is_floating(kind):
            return float(value)
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return str(value)
        if pa.types.is_string_view(kind):
            return str(value)
        return value

    def __repr__(self) -> str:
        return f"Value({self.dtype!r})"


class ClassLabel(_Reducible):
    """Integer class labels with names, stored as ``int64``; ``-1`` means "no label".

    Give exactly one source of names: ``names``, ``names_file`` (one name per
    line), or ``num_classes`` alone (names ``"0"`` ... ``"n-1"``). Two labels are
    equal when their names (and ids) are equal, however they were made.

    Args:
        num_classes: The number of classes; must match ``len(names)`` if both are given.
        names: The class names, in label order.
        names_file: A UTF-8 file with one name per line (blank lines ignored).
        id: An optional identifier, kept for compatibility with the anchor.

    Raises:
        FeatureError: no names source, two of them, duplicated names, or a count
            that does not match the names.
        ClassLabelNamesError: ``names`` is not a list (a numpy array, say); also a
            ``TypeError``, as the anchor raises.

    Example:
        >>> label = ClassLabel(names=["neg", "pos"])
        >>> label.str2int("pos"), label.int2str(0)
        (1, 'neg')
    """

    dtype: ClassVar[str] = "int64"
    _type: ClassVar[str] = "ClassLabel"

    def __init__(
        self,
        num_classes: int | None = None,
        names: Iterable[str] | None = None,
        names_file: str | None = None,
        id: str | None = None,
    ) -> None:
        if names is not None and names_file is not None:
            raise FeatureError("Give ClassLabel either names or names_file, not both.")
        if names is None and names_file is not None:
            with open(names_file, encoding="utf-8") as file:
                names = [line.strip() for line in file.read().split("\n") if line.strip()]
        if names is None:
            if num_classes is None:
                raise FeatureError("Give ClassLabel num_classes, names or names_file.")
            names = [str(index) for index in range(num_classes)]
        if isinstance(names, str):
            raise FeatureError(f"ClassLabel names must be a list of strings, got {names!r}.")
        if not isinstance(names, CollectionsSequence):
            raise ClassLabelNamesError(
                f"ClassLabel names must be a list of strings, got a {type(names).__name__} "
                f"({names!r}); pass list(names)."
            )
        self.names: list[str] = [str(name) for name in names]
        if num_classes is not None and num_classes != len(self.names):
            raise FeatureError(
                f"ClassLabel got num_classes={num_classes} but {len(self.names)} names; "
                "give one or make them agree."
            )
        self.num_classes: int = len(self.names)
        self.names_file = names_file
        self.id = id
        self._str2int = {name: index for index, name in enumerate(self.names)}
        if len(self._str2int) != len(self.names):
            duplicated = sorted({name for name in self.names if self.names.count(name) > 1})
            raise FeatureError(f"ClassLabel names must be unique; duplicated: {duplicated!r}.")

    @property
    def pa_type(self) -> pa.DataType:
        """The Arrow storage type, ``int64``."""
        return pa.int64()

    def __call__(self) -> pa.DataType:
        return self.pa_type

    def __eq__(self, other: object) -> bool:
        if type(other) is not ClassLabel:
            return NotImplemented
        return self.names == other.names and self.id == other.id

    def __repr__(self) -> str:
        return f"ClassLabel(names={self.names!r})"

    def _names_preview(self) -> str:
        shown = self.names[:_MAX_NAMES_SHOWN]
        more = len(self.names) - len(shown)
        return repr(shown) + (f" and {more} more" if more else "")

    def str2int(self, values: str | Iterable[str]) -> int | list[int]:
        """Names to integers: a name, a name with surrounding spaces, or a number string.

        Args:
            values: One name, or an iterable of names.

        Returns:
            An int for one name, a list of ints for an iterable.

        Raises:
            ClassLabelError: a value is not a name (nor an integer string in
                ``-1 .. num_classes - 1``).

        Example:
            >>> ClassLabel(names=["neg", "pos"]).str2int(["pos", "neg"])
            [1, 0]
        """
        if isinstance(values, str):
            return self._name_to_int(values)
        if not isinstance(values, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ClassLabelError(
                f"str2int takes a string or an iterable of strings, got {values!r}."
            )
        return [self._name_to_int(value) for value in values]

    def _name_to_int(self, value: object) -> int:
        text = str(value)
        found = self._str2int.get(text)
        if found is None:
            found = self._str2int.get(text.strip())
        if found is None:
            try:
                found = int(text)
            except ValueError:
                found = None
            if found is not None and not -1 <= found < self.num_classes:
                found = None
        if found is None:
            raise ClassLabelError(
                f"Invalid class label name {text!r}: not one of the ClassLabel names "
                f"{self._names_preview()}. Add it to the names or map the column first."
            )
        return found

    def int2str(self, values: int | Iterable[int]) -> str | list[str]:
        """Integers to names.

        Args:
            values: One integer, or an iterable of integers, each in ``0 .. num_classes - 1``.

        Returns:
            A name for one integer, a list of names for an iterable.

        Raises:
            ClassLabelError: an integer is out of range (``-1``, "no label", has no name).

        Example:
            >>> ClassLabel(names=["neg", "pos"]).int2str([1, 0])
            ['pos', 'neg']
        """
        if isinstance(values, numbers.Integral):
            return self._int_to_name(values)
        if not isinstance(values, Iterable):
            raise ClassLabelError(f"int2str takes an int or an iterable of ints, got {values!r}.")
        return [self._int_to_name(value) for value in values]

    def _int_to_name(self, value: object) -> str:
        if not isinstance(value, numbers.Integral) or not 0 <= int(value) < self.num_classes:
            raise ClassLabelError(
                f"Invalid integer class label {value!r}: ClassLabel has {self.num_classes} "
                f"classes, so labels run from 0 to {self.num_classes - 1} "
                "(-1, meaning no label, has no name)."
            )
        return self.names[int(value)]

    def encode_example(self, value: Any) -> int:
        """A label name or integer as the stored integer.

        Example:
            >>> ClassLabel(names=["neg", "pos"]).encode_example("pos")
            1
        """
        if isinstance(value, str):
            return self._name_to_int(value)
        if not isinstance(value, numbers.Integral) or not -1 <= int(value) < self.num_classes:
            raise ClassLabelError(
                f"Invalid class label {value!r}: ClassLabel has {self.num_classes} classes "
                f"(0 to {self.num_classes - 1}, or -1 for no label)."
            )
        return int(value)

    def cast_storage(self, storage: pa.Array) -> pa.Array:
        """Label names (strings) or ids (integers) as this label's ``int64`` storage.

        The anchor's public method; a name not in ``names`` or an id out of range is a
        `CastError` (a ``ValueError``, as the anchor's) naming the value.

        Example:
            >>> ClassLabel(names=["neg", "pos"]).cast_storage(pa.array(["pos", None])).to_pylist()
            [1, None]
        """
        return per_chunk(
            storage, "<array>", pa.int64, lambda array, where: cast_labels(array, self, where)
        )


class Sequence:
    """The legacy list feature: `List`, except that a dict of features becomes a dict of lists.

    ``Sequence(Value("int64"))`` is ``List(Value("int64"))``;
    ``Sequence({"a": Value("int64")})`` is ``{"a": List(Value("int64"))}``, as in
    the anchor (a TensorFlow Datasets convention). ``isinstance(List(...), Sequence)``
    is true.

    Args:
        feature: The feature of each item.
        length: The fixed length of every list, or -1 for any length.
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> Sequence({"a": Value("int64")})
        {'a': List(Value('int64'))}
    """

    def __new__(cls, feature: Any = None, length: int = -1, **kwargs: Any) -> Any:
        if (
            cls is Sequence
            and isinstance(feature, dict)
            and any(not isinstance(sub, List) for sub in feature.values())  # pyright: ignore[reportUnknownVariableType]
        ):
            items: dict[str, Any] = feature  # pyright: ignore[reportUnknownVariableType]
            return {key: List(sub, length=length, **kwargs) for key, sub in items.items()}
        return object.__new__(List)


@dataclass(repr=False)
class List(_Reducible, Sequence):
    """A list of items of one feature, stored as an Arrow list (fixed-size if ``length >= 0``).

    Args:
        feature: The feature of each item (a feature type or a dict of them).
        length: The fixed length of every list, or -1 for any length.
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> List(Value("float32"), length=3)
        List(Value('float32'), length=3)
    """

    feature: Any
    length: int = -1
    id: str | None = None
    _type: ClassVar[str] = "List"

    def __post_init__(self) -> None:
        if not isinstance(self.length, int) or self.length < -1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise FeatureError(
                f"List length must be -1 (any) or a non-negative int, got {self.length!r}."
            )

    def __repr__(self) -> str:
        if self.length != -1:
            return f"List({self.feature}, length={self.length})"
        return f"List({self.feature})"


@dataclass(repr=False)
class LargeList(_Reducible):
    """A list stored as an Arrow ``large_list`` (64-bit offsets).

    Args:
        feature: The feature of each item.
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> LargeList(Value("string"))
        LargeList(Value('string'))
    """

    feature: Any
    id: str | None = None
    _type: ClassVar[str] = "LargeList"

    def __repr__(self) -> str:
        return f"LargeList({self.feature})"


@dataclass
class Json(_Reducible):
    """JSON values stored as JSON text in Arrow's ``arrow.json`` extension type.

    Args:
        decode: Whether readers should parse the text into Python objects.
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> Json().pa_type
        JsonType(extension<arrow.json>)
    """

    decode: bool = True
    id: str | None = None
    _type: ClassVar[str] = "Json"

    @property
    def pa_type(self) -> pa.DataType:
        """The Arrow type, ``pa.json_()``."""
        return pa.json_()

    def __call__(self) -> pa.DataType:
        return self.pa_type

    def encode_example(self, value: Any) -> str | None:
        """A Python value as JSON text; a string that already is JSON text is kept.

        Example:
            >>> Json().encode_example({"a": [1, 2]})
            '{"a":[1,2]}'
        """
        if value is None:
            return None
        if isinstance(value, str):
            try:
                json.loads(value)
            except ValueError:
                pass
            else:
                return value
        return json.dumps(value, separators=(",", ":"))

    def __repr__(self) -> str:
        return f"Json(decode={self.decode})"


FeatureType: TypeAlias = Value | ClassLabel | List | LargeList | Json | dict[str, Any]
"""Any feature: a leaf type, a list type, or a dict of features (an Arrow struct)."""

LEAF_TYPES = (Value, ClassLabel, Json)
