"""`Image` and `Audio`: the anchor's storage and metadata, casts, encoding, decoding on read.

Images and sounds are made here (tiny arrays); nothing is downloaded. The anchor
(`datasets` 5.2) is the oracle for storage, metadata and images; it decodes sounds
only through torchcodec, which is not installed, so sounds are checked on their
stored form and on their samples.
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import PIL.Image
import pyarrow as pa
import pytest
import soundfile

from dagster_ds import Audio, Dataset, Features, Image, IterableDataset, Value, load_dataset
from dagster_ds.errors import FeatureError, MissingExtraError

PIXELS = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
GREY = np.array([[0, 64], [128, 255]], dtype=np.uint8)
RATE = 8000
SAMPLES = np.sin(np.arange(80, dtype=np.float32) / 5).astype(np.float32)


def png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    PIL.Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format="WAV", subtype="FLOAT")
    return buffer.getvalue()


def pixels(image: Any) -> list[Any]:
    return np.asarray(image).tolist()


@pytest.fixture
def image_file(tmp_path: Path) -> Path:
    path = tmp_path / "cat.png"
    path.write_bytes(png(PIXELS))
    return path


def test_storage_type_and_schema_metadata_are_the_anchors(anchor: ModuleType) -> None:
    ours = Features(
        {
            "img": Image(),
            "grey": Image(mode="L", decode=False),
            "sound": Audio(),
            "speech": Audio(sampling_rate=16000, decode=False, num_channels=1),
        }
    )
    theirs = anchor.Features(
        {
            "img": anchor.Image(),
            "grey": anchor.Image(mode="L", decode=False),
            "sound": anchor.Audio(),
            "speech": anchor.Audio(sampling_rate=16000, decode=False, num_channels=1),
        }
    )
    assert ours.arrow_schema.equals(theirs.arrow_schema, check_metadata=True)
    assert ours.arrow_schema.metadata == theirs.arrow_schema.metadata
    assert ours.to_dict() == theirs.to_dict()
    assert Features.from_dict(theirs.to_dict()) == ours
    assert Features.from_arrow_schema(theirs.arrow_schema) == ours
    assert ours.to_yaml_list() == theirs._to_yaml_list()


def test_cast_column_from_paths_bytes_and_arrays_as_the_anchor(
    anchor: ModuleType, image_file: Path
) -> None:
    columns = {
        "path": [str(image_file), None],
        "data": [png(GREY), None],
        "array": [PIXELS.tolist(), None],
    }
    ours, theirs = Dataset.from_dict(columns), anchor.Dataset.from_dict(columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # both downcast int64 pixel lists to uint8
        for name in columns:
            ours = ours.cast_column(name, Image())
            theirs = theirs.cast_column(name, anchor.Image())
    assert ours.features == Features({name: Image() for name in columns})
    assert ours.data.to_pydict() == theirs.data.table.to_pydict()  # stored bytes identical
    assert pixels(ours[0]["path"]) == pixels(theirs[0]["path"]) == PIXELS.tolist()
    assert pixels(ours[0]["data"]) == GREY.tolist()
    assert pixels(ours[0]["array"]) == PIXELS.tolist()
    assert ours[1] == theirs[1] == {"path": None, "data": None, "array": None}


def test_pil_images_and_arrays_encode_as_the_anchor(anchor: ModuleType) -> None:
    images = [PIL.Image.fromarray(PIXELS), None, PIL.Image.fromarray(GREY)]
    ours, theirs = Dataset.from_dict({"img": images}), anchor.Dataset.from_dict({"img": images})
    assert ours.features == Features({"img": Image()})
    assert ours.data.to_pydict() == theirs.data.table.to_pydict()
    features = Features({"img": Image()})
    arrays = Dataset.from_dict({"img": [PIXELS, GREY]}, features=features)
    theirs = anchor.Dataset.from_dict(
        {"img": [PIXELS, GREY]}, features=anchor.Features({"img": anchor.Image()})
    )
    assert arrays.data.to_pydict() == theirs.data.table.to_pydict()


def test_decoding_in_each_format_and_decode_false(image_file: Path) -> None:
    ds = Dataset.from_dict({"img": [str(image_file)] * 2}).cast_column("img", Image())
    image = ds[0]["img"]
    assert isinstance(image, PIL.Image.Image)
    assert pixels(image) == PIXELS.tolist()
    assert [pixels(row["img"]) for row in ds] == [PIXELS.tolist()] * 2
    assert [pixels(i) for i in ds["img"][:]] == [PIXELS.tolist()] * 2
    assert ds.with_format("numpy")[:]["img"].shape == (2, 2, 3, 3)
    assert ds.with_format("numpy")[0]["img"].tolist() == PIXELS.tolist()
    if importlib.util.find_spec("torch") is not None:  # not on the other Pythons' legs
        assert tuple(ds.with_format("torch")[:]["img"].shape) == (2, 2, 3, 3)
    assert pixels(ds.with_format("pandas")[:]["img"][0]) == PIXELS.tolist()
    assert ds.with_format("arrow")[:].column("img").type == Image().pa_type
    grey = ds.cast_column("img", Image(mode="L"))[0]["img"]
    assert grey.mode == "L"
    raw = ds.cast_column("img", Image(decode=False))
    assert raw[0]["img"] == {"bytes": None, "path": str(image_file)}
    with pytest.raises(FeatureError, match="Decoding is disabled"):
        Image(decode=False).decode_example({"bytes": None, "path": str(image_file)})


def test_map_and_add_item_encode_images_and_keep_the_feature() -> None:
    ds = Dataset.from_dict({"img": [PIL.Image.fromarray(PIXELS)], "n": [1]})
    seen: list[Any] = []

    def rotate(row: dict[str, Any]) -> dict[str, Any]:
        seen.append(type(row["img"]))
        return {"img": row["img"].rotate(180)}

    rotated = ds.map(rotate)
    assert len(seen) == 1
    assert issubclass(seen[0], PIL.Image.Image)
    assert rotated.features == ds.features
    assert pixels(rotated[0]["img"]) == PIXELS[::-1, ::-1].tolist()
    batched = ds.map(lambda b: {"img": [i.convert("L") for i in b["img"]]}, batched=True)
    assert batched.features == ds.features
    assert batched[0]["img"].mode == "L"
    added = ds.add_item({"img": PIL.Image.fromarray(GREY), "n": 2})
    assert added.features == ds.features
    assert pixels(added[1]["img"]) == GREY.tolist()


def test_streaming_decodes_and_encodes_through_the_same_formatter(image_file: Path) -> None:
    features = Features({"img": Image(), "n": Value("int64")})
    stream = IterableDataset.from_dict({"img": [str(image_file)], "n": [1]}, features=features)
    assert stream.features == features
    assert pixels(next(iter(stream))["img"]) == PIXELS.tolist()
    assert next(iter(stream.with_format("numpy").iter(1)))["img"].shape == (1, 2, 3, 3)
    seen: list[Any] = []
    mapped = stream.map(lambda row: seen.append(row["img"].size) or {"n": row["n"] + 1})
    assert next(iter(mapped))["n"] == 2
    assert seen == [(3, 2)]
    # As the anchor, a streaming map's output still hands out images (kept or returned).
    assert pixels(next(iter(mapped))["img"]) == PIXELS.tolist()
    rotated = stream.map(lambda row: {"img": row["img"].rotate(180)})
    assert pixels(next(iter(rotated))["img"]) == PIXELS[::-1, ::-1].tolist()
    from_map_style = Dataset.from_dict({"img": [PIL.Image.fromarray(GREY)]}).to_iterable_dataset()
    assert pixels(next(iter(from_map_style))["img"]) == GREY.tolist()


def test_a_dataset_the_anchor_saved_loads_in_ours(anchor: ModuleType, tmp_path: Path) -> None:
    images = [PIL.Image.fromarray(PIXELS), PIL.Image.fromarray(GREY)]
    theirs = anchor.Dataset.from_dict({"img": images, "label": [0, 1]})
    theirs.save_to_disk(str(tmp_path / "saved"))
    theirs.to_parquet(str(tmp_path / "img.parquet"))
    saved = Dataset.load_from_disk(str(tmp_path / "saved"))
    loaded = load_dataset("parquet", data_files=str(tmp_path / "img.parquet"), split="train")
    for ours in (saved, loaded):
        assert ours.features == Features({"img": Image(), "label": Value("int64")})
        assert [pixels(row["img"]) for row in ours] == [PIXELS.tolist(), GREY.tolist()]


def test_audio_encodes_arrays_and_decodes_to_the_documented_dict(tmp_path: Path) -> None:
    path = tmp_path / "tone.wav"
    path.write_bytes(wav(SAMPLES))
    stereo = np.stack([SAMPLES, -SAMPLES])
    ds = Dataset.from_dict(
        {
            "a": [
                {"array": SAMPLES, "sampling_rate": RATE},
                str(path),
                {"array": stereo, "sampling_rate": RATE},
            ]
        },
        features=Features({"a": Audio()}),
    )
    first, second, third = (row["a"] for row in ds)
    assert first["path"] is None
    assert first["sampling_rate"] == RATE
    assert first["array"].dtype == np.float32
    assert first["array"].tolist() == SAMPLES.tolist()
    assert second["path"] == str(path)
    assert second["array"].tolist() == SAMPLES.tolist()
    assert third["array"].shape == (2, SAMPLES.size)
    assert third["array"].tolist() == stereo.tolist()
    mono = ds.cast_column("a", Audio(num_channels=1))[2]["a"]["array"]
    assert mono.shape == (SAMPLES.size,)
    assert np.allclose(mono, 0)
    faster = ds.cast_column("a", Audio(sampling_rate=2 * RATE))[0]["a"]
    assert faster["sampling_rate"] == 2 * RATE
    assert faster["array"].shape == (2 * SAMPLES.size,)
    assert ds.cast_column("a", Audio(decode=False))[1]["a"] == {"bytes": None, "path": str(path)}
    with pytest.raises(FeatureError, match="sampling_rate"):
        Audio().encode_example({"array": SAMPLES})


def test_audio_storage_and_casts_are_the_anchors(anchor: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "tone.wav"
    path.write_bytes(wav(SAMPLES))
    columns = {"path": [str(path)], "data": [wav(SAMPLES)]}
    ours, theirs = Dataset.from_dict(columns), anchor.Dataset.from_dict(columns)
    for name in columns:
        ours = ours.cast_column(name, Audio())
        theirs = theirs.cast_column(name, anchor.Audio())
    assert ours.data.to_pydict() == theirs.data.table.to_pydict()
    assert ours.features.to_dict() == theirs.features.to_dict()
    assert ours[0]["data"]["array"].tolist() == SAMPLES.tolist()


def test_importing_dagster_ds_imports_no_codec_and_a_missing_extra_names_it(
    image_file: Path,
) -> None:
    script = f"""
import sys
import dagster_ds
assert "PIL" not in sys.modules and "soundfile" not in sys.modules, "imported a codec"
sys.modules["PIL"] = None  # as if Pillow and soundfile were not installed
sys.modules["soundfile"] = None
ds = dagster_ds.Dataset.from_dict({{"img": [{str(image_file)!r}]}})
ds = ds.cast_column("img", dagster_ds.Image())  # storing a path needs no codec
for feature, value in ((dagster_ds.Image(), {{"bytes": b"x", "path": None}}),
                       (dagster_ds.Audio(), {{"bytes": b"x", "path": None}})):
    try:
        feature.decode_example(value)
    except dagster_ds.MissingExtraError as error:
        assert isinstance(error, ImportError)
        print(error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'dagster-ds[vision]'" in done.stdout
    assert "pip install 'dagster-ds[audio]'" in done.stdout


def test_bad_values_raise_clear_errors() -> None:
    with pytest.raises(FeatureError, match="'path' or 'bytes'"):
        Image().encode_example({"bytes": None, "path": None})
    with pytest.raises(FeatureError, match="cannot store a int"):
        Image().encode_example(3)
    with pytest.raises(FeatureError, match="cannot be cast to Image"):
        Dataset.from_dict({"img": [1]}).cast_column("img", Image())
    with pytest.raises(FeatureError, match="num_channels"):
        Audio(num_channels=3)
    assert isinstance(MissingExtraError("x"), ImportError)
    assert Image().encode_example(pa.py_buffer(b"ab").to_pybytes()) == {
        "bytes": b"ab",
        "path": None,
    }


_ANCHOR_PIXELS = """
import json, sys
import numpy as np
import datasets

datasets.config.USE_PARQUET_EXPORT = False  # no datasets-server here
ds = datasets.load_dataset(sys.argv[1], split="train")
print(json.dumps({
    "features": ds.features.to_dict(),
    "pixels": [np.asarray(row["img"]).tolist() for row in ds],
    "files": [np.asarray(row["file"]).tolist() for row in ds],
    "paths": [ds.cast_column("file", datasets.Image(decode=False))[i]["file"]["path"]
              for i in range(len(ds))],
    "modes": [row["img"].mode for row in ds],
    "labels": ds["label"][:],
}))
"""


def test_images_we_push_load_in_the_anchor_with_equal_pixels(
    local_hub: Any, tmp_path: Path
) -> None:
    import json
    import os

    images = [PIL.Image.fromarray(PIXELS), PIL.Image.fromarray(GREY)]
    files = [tmp_path / "a.png", tmp_path / "b.png"]
    for path, image in zip(files, images, strict=True):
        image.save(path)
    ours = Dataset.from_dict({"img": images, "label": [3, 4], "file": list(map(str, files))})
    ours = ours.cast_column("file", Image())  # stored by path: the push embeds the files
    ours.push_to_hub("user/images", endpoint=local_hub.endpoint)
    env = {
        **os.environ,
        **local_hub.client_env,
        "HF_HOME": str(tmp_path / "anchor-home"),
        "HF_DATASETS_CACHE": str(tmp_path / "anchor-cache"),
    }
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_TOKEN"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", _ANCHOR_PIXELS, "user/images"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs["features"] == ours.features.to_dict()
    assert theirs["pixels"] == [PIXELS.tolist(), GREY.tolist()]
    assert theirs["files"] == theirs["pixels"]
    assert theirs["paths"] == ["a.png", "b.png"]
    assert theirs["modes"] == ["RGB", "L"]
    assert theirs["labels"] == [3, 4]
    back = load_dataset("user/images", split="train", endpoint=local_hub.endpoint)
    assert back.features == ours.features
    assert [pixels(row["img"]) for row in back] == theirs["pixels"]
    assert [pixels(row["file"]) for row in back] == theirs["pixels"]


def test_filter_gets_images_and_flatten_keeps_them_as_the_anchor(anchor: ModuleType) -> None:
    images = [PIL.Image.fromarray(PIXELS), PIL.Image.fromarray(GREY)]
    columns = {"img": images, "s": [{"x": 1, "y": {"z": 2}}, {"x": 3, "y": {"z": 4}}]}
    ours, theirs = Dataset.from_dict(columns), anchor.Dataset.from_dict(columns)
    assert ours.filter(lambda row: row["img"].mode == "L")["s"][:] == [columns["s"][1]]
    assert ours.filter(lambda b: [i.mode == "L" for i in b["img"]], batched=True).num_rows == 1
    assert ours.flatten().features.to_dict() == theirs.flatten().features.to_dict()
    assert pixels(ours.flatten()[0]["img"]) == PIXELS.tolist()
    raw, raw_theirs = (
        ours.cast_column("img", Image(decode=False)),
        theirs.cast_column("img", anchor.Image(decode=False)),
    )
    assert raw.flatten().features.to_dict() == raw_theirs.flatten().features.to_dict()
    assert raw.flatten()[:] == raw_theirs.flatten()[:]
    assert repr(Audio()) == repr(anchor.Audio())
    assert repr(Image(mode="L")) == repr(anchor.Image(mode="L"))
