"""Features stored as other features: Array2D-5D, Translation, TranslationVariableLanguages.

Each has a ``storage`` feature (nested lists, a struct) that the rest of the type
system (Arrow types, casts, encoding) works on; the type itself is kept in the
features' JSON and YAML forms, as the anchor writes them, so files and cards read
back with the same features in dagster_ds and in `datasets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features._types import List, Value


class _Composite:
    """Shared behaviour: the Arrow type and JSON form come from the storage feature."""

    _type: ClassVar[str]

    @property
    def storage(self) -> Any:
        raise NotImplementedError

    @property
    def pa_type(self) -> pa.DataType:
        """The Arrow type that stores the feature."""
        from dagster_ds.features._mapping import feature_to_arrow_type

        return feature_to_arrow_type(self.storage)

    def __call__(self) -> pa.DataType:
        return self.pa_type

    def encode_example(self, value: Any) -> Any:
        """A Python value in storable form (numpy arrays become lists)."""
        return value.tolist() if hasattr(value, "tolist") else value


@dataclass
class _ArrayXD(_Composite):
    shape: tuple[int | None, ...]
    dtype: str
    id: str | None = None
    _dimensions: ClassVar[int] = 0

    def __post_init__(self) -> None:
        self.shape = tuple(self.shape)
        if len(self.shape) != self._dimensions:
            raise FeatureError(
                f"{type(self).__name__} needs a shape of {self._dimensions} sizes, got "
                f"{self.shape!r}."
            )
        Value(self.dtype)  # checks the dtype

    @property
    def storage(self) -> Any:
        """Nested lists of ``dtype`` values, one level per dimension (the anchor's storage)."""
        feature: Any = Value(self.dtype)
        for _ in self.shape:
            feature = List(feature)
        return feature

    def to_form(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype!r})"


@dataclass(repr=False)
class Array2D(_ArrayXD):
    """Two-dimensional arrays of one ``dtype`` (the first size may be None: variable).

    Example:
        >>> Array2D(shape=(2, 3), dtype="int32").pa_type
        ListType(list<item: list<item: int32>>)
    """

    _type: ClassVar[str] = "Array2D"
    _dimensions: ClassVar[int] = 2


@dataclass(repr=False)
class Array3D(_ArrayXD):
    """Three-dimensional arrays of one ``dtype`` (see `Array2D`)."""

    _type: ClassVar[str] = "Array3D"
    _dimensions: ClassVar[int] = 3


@dataclass(repr=False)
class Array4D(_ArrayXD):
    """Four-dimensional arrays of one ``dtype`` (see `Array2D`)."""

    _type: ClassVar[str] = "Array4D"
    _dimensions: ClassVar[int] = 4


@dataclass(repr=False)
class Array5D(_ArrayXD):
    """Five-dimensional arrays of one ``dtype`` (see `Array2D`)."""

    _type: ClassVar[str] = "Array5D"
    _dimensions: ClassVar[int] = 5


@dataclass
class Translation(_Composite):
    """One text per language, for fixed ``languages``: a struct of strings.

    Example:
        >>> Translation(languages=["fr", "en"]).pa_type
        StructType(struct<en: string, fr: string>)
    """

    languages: list[str]
    id: str | None = None
    _type: ClassVar[str] = "Translation"

    def __post_init__(self) -> None:
        self.languages = list(self.languages)

    @property
    def storage(self) -> Any:
        """A struct with one string field per language, sorted."""
        return {language: Value("string") for language in sorted(self.languages)}

    def to_form(self) -> dict[str, Any]:
        return {"languages": list(self.languages)}


@dataclass
class TranslationVariableLanguages(_Composite):
    """Translations in languages that vary by example: parallel lists of languages and texts.

    An example is ``{language: text or [texts]}``; it is stored sorted by language.

    Example:
        >>> feature = TranslationVariableLanguages(languages=["en", "fr"])
        >>> feature.encode_example({"fr": "bonjour", "en": ["hi", "hello"]})
        {'language': ['en', 'en', 'fr'], 'translation': ['hello', 'hi', 'bonjour']}
    """

    languages: list[str] | None = None
    num_languages: int | None = None
    id: str | None = None
    _type: ClassVar[str] = "TranslationVariableLanguages"
    _known: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.languages = sorted(set(self.languages)) if self.languages else None
        self.num_languages = len(self.languages) if self.languages else None
        self._known = frozenset(self.languages or ())

    @property
    def storage(self) -> Any:
        """``{"language": List(string), "translation": List(string)}``."""
        return {"language": List(Value("string")), "translation": List(Value("string"))}

    def encode_example(self, value: Any) -> Any:
        """``{language: text or texts}`` as sorted parallel lists (the anchor's storage)."""
        if value is None:
            return None
        if isinstance(value, Mapping) and set(value) == {"language", "translation"}:
            return dict(value)  # already stored form
        if not isinstance(value, Mapping):
            raise FeatureError(
                f"TranslationVariableLanguages expects a dict of language to text(s), got "
                f"{value!r}."
            )
        translations: Mapping[str, Any] = value
        unknown = sorted(set(translations) - self._known) if self._known else []
        if unknown:
            raise FeatureError(
                f"TranslationVariableLanguages got languages {unknown} that are not in "
                f"{sorted(self._known)}; add them to languages=."
            )
        pairs: list[tuple[str, str]] = []
        for language, texts in translations.items():
            items: Iterable[str] = [texts] if isinstance(texts, str) else texts
            pairs.extend((language, text) for text in items)
        pairs.sort()
        return {"language": [p[0] for p in pairs], "translation": [p[1] for p in pairs]}

    def to_form(self) -> dict[str, Any]:
        return {"languages": self.languages, "num_languages": self.num_languages}


COMPOSITE_TYPES: dict[str, type[_Composite]] = {
    cls._type: cls  # pyright: ignore[reportPrivateUsage]
    for cls in (Array2D, Array3D, Array4D, Array5D, Translation, TranslationVariableLanguages)
}
Composite = _Composite


def composite_from_form(kind: str, fields: Mapping[str, Any]) -> _Composite:
    """A composite feature from its JSON form."""
    cls = COMPOSITE_TYPES[kind]
    feature_id = fields.get("id")
    if issubclass(cls, _ArrayXD):
        return cls(shape=tuple(fields["shape"]), dtype=fields["dtype"], id=feature_id)
    if cls is Translation:
        return Translation(languages=list(fields["languages"]), id=feature_id)
    return TranslationVariableLanguages(languages=fields.get("languages"), id=feature_id)
