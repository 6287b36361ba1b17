"""`Audio`: sound files stored as bytes and/or path, decoded to samples (extra ``audio``)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features._media import Media, require


def _soundfile() -> Any:
    return require("soundfile", "audio", "Audio")


@dataclass(repr=False)
class Audio(Media):
    """Sounds: stored as the anchor stores them, ``struct<bytes: binary, path: string>``.

    Accepts a path, encoded bytes, a ``{"bytes": ..., "path": ...}`` dict, or a
    ``{"array": samples, "sampling_rate": rate}`` dict (stored as WAV bytes).
    Reading gives ``{"path": ..., "array": float32 samples, "sampling_rate": rate}``
    (``array`` has shape ``(num_samples,)`` for one channel, else
    ``(num_channels, num_samples)``), or the stored dict when ``decode=False``. The
    anchor 5.2 decodes to a torchcodec ``AudioDecoder`` instead (README, "Where we
    differ"). Needs soundfile: ``pip install 'dagster-ds[audio]'``.

    Args:
        sampling_rate: Resample to this rate when decoding (linear interpolation).
        decode: Whether reading decodes the sounds.
        num_channels: ``1`` (mix down to mono) or ``2`` (stereo) when decoding; None keeps
            the file's channels.
        stream_index: Kept for compatibility with the anchor (files have one stream here).
        id: An optional identifier, kept for compatibility with the anchor.

    Example:
        >>> Audio(sampling_rate=16000).pa_type
        StructType(struct<bytes: binary, path: string>)
    """

    sampling_rate: int | None = None
    decode: bool = True
    num_channels: int | None = None
    stream_index: int | None = None
    id: str | None = None
    dtype: ClassVar[str] = "dict"
    _type: ClassVar[str] = "Audio"
    _form_fields: ClassVar[tuple[str, ...]] = (
        "sampling_rate",
        "decode",
        "num_channels",
        "stream_index",
    )

    def __post_init__(self) -> None:
        if self.num_channels not in (None, 1, 2):
            raise FeatureError(
                f"Audio num_channels must be None, 1 or 2, got {self.num_channels!r}."
            )

    def __repr__(self) -> str:
        return (
            f"Audio(sampling_rate={self.sampling_rate!r}, decode={self.decode}, "
            f"num_channels={self.num_channels!r}, stream_index={self.stream_index!r})"
        )

    def encode_example(self, value: Any) -> dict[str, Any] | None:
        """A path, bytes or ``{"array", "sampling_rate"}`` dict in stored form.

        Example:
            >>> Audio().encode_example("a.wav")
            {'bytes': None, 'path': 'a.wav'}
        """
        if isinstance(value, Mapping) and "array" in value:
            record: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            rate = record.get("sampling_rate")
            if rate is None:
                raise FeatureError("An Audio value with an 'array' needs its 'sampling_rate'.")
            return {"bytes": _wav_bytes(record["array"], int(rate)), "path": None}
        return super().encode_example(value)

    def decode_example(self, value: Any) -> Any:
        """The stored dict as ``{"path", "array", "sampling_rate"}``.

        Raises:
            MissingExtraError: soundfile is not installed.
            FeatureError: ``decode=False``, or the value has neither bytes nor path.
        """
        self.check_decoding()
        if value is None or not isinstance(value, dict) or "array" in value:
            return value
        import numpy as np

        data, path = self.file_bytes(value)  # pyright: ignore[reportUnknownArgumentType]
        samples, rate = _soundfile().read(io.BytesIO(data), dtype="float32", always_2d=True)
        samples = samples.T  # (channels, samples), as the anchor's decoder gives them
        if self.num_channels == 1 and samples.shape[0] > 1:
            samples = samples.mean(axis=0, keepdims=True)
        elif self.num_channels == 2 and samples.shape[0] == 1:
            samples = np.repeat(samples, 2, axis=0)
        if self.sampling_rate is not None and self.sampling_rate != rate:
            samples = _resample(samples, rate, self.sampling_rate)
            rate = self.sampling_rate
        array = samples[0] if samples.shape[0] == 1 else samples
        return {
            "path": path,
            "array": np.ascontiguousarray(array, np.float32),
            "sampling_rate": rate,
        }

    def objects_to_storage(self, array: pa.Array) -> pa.Array:
        """``{"array", "sampling_rate"}`` structs stored as WAV bytes."""
        if isinstance(array, pa.StructArray) and array.type.get_field_index("array") >= 0:
            import numpy as np

            values = [
                None if v is None else {**v, "array": np.asarray(v["array"], np.float32)}
                for v in array.to_pylist()  # pyright: ignore[reportAttributeAccessIssue]
            ]
            return self.encoded_array(values)
        return super().objects_to_storage(array)


def _wav_bytes(samples: Any, rate: int) -> bytes:
    """Samples (``(n,)``, or ``(channels, n)`` as decoding gives them) as 32-bit float WAV."""
    import numpy as np

    array = np.asarray(samples, dtype=np.float32)
    if array.ndim == 2:
        array = array.T  # soundfile writes (frames, channels)
    buffer = io.BytesIO()
    _soundfile().write(buffer, array, rate, format="WAV", subtype="FLOAT")
    return buffer.getvalue()


def _resample(samples: Any, rate: int, target: int) -> Any:
    """``samples`` (channels, n) at ``target`` Hz, by linear interpolation."""
    import numpy as np

    count = samples.shape[1]
    size = round(count * target / rate)
    source = np.arange(count) / rate
    wanted = np.arange(size) / target
    return np.stack([np.interp(wanted, source, channel) for channel in samples]).astype(np.float32)
