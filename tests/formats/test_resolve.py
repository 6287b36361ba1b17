from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from dagster_ds import load_dataset
from dagster_ds.errors import DataFilesNotFoundError, InvalidDataFilesError, UnknownFormatError
from dagster_ds.formats import ResolvedFile, infer_compression, infer_format, resolve_data_files


def make(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def urls(files: list[ResolvedFile]) -> list[str]:
    return [f.url for f in files]


def test_single_path_is_train_split_with_size(tmp_path: Path) -> None:
    make(tmp_path, "a.csv")
    resolved = resolve_data_files(str(tmp_path / "a.csv"))
    assert resolved == {"train": [ResolvedFile(str(tmp_path / "a.csv"), size=len("a.csv"))]}


def test_glob_list_and_dict_of_splits(tmp_path: Path) -> None:
    make(tmp_path, "train-1.jsonl", "train-0.jsonl", "test.jsonl", "dev.jsonl")
    assert urls(resolve_data_files(str(tmp_path / "train-*.jsonl"))["train"]) == [
        str(tmp_path / "train-0.jsonl"),
        str(tmp_path / "train-1.jsonl"),
    ]
    # A list keeps the patterns' order; a file listed twice appears once.
    listed = resolve_data_files([str(tmp_path / "test.jsonl"), str(tmp_path / "*.jsonl")])
    assert urls(listed["train"]) == [
        str(tmp_path / name)
        for name in ["test.jsonl", "dev.jsonl", "train-0.jsonl", "train-1.jsonl"]
    ]
    splits = resolve_data_files(
        {"train": "train-*.jsonl", "test": ["test.jsonl"]}, base_path=tmp_path
    )
    assert list(splits) == ["train", "test"]
    assert urls(splits["test"]) == [str(tmp_path / "test.jsonl")]
    as_entries = resolve_data_files(
        [{"split": "validation", "path": "dev.jsonl"}], base_path=tmp_path
    )
    assert urls(as_entries["validation"]) == [str(tmp_path / "dev.jsonl")]


def test_directory_is_its_files_recursively_sorted_without_hidden(tmp_path: Path) -> None:
    make(
        tmp_path,
        "data/b.parquet",
        "data/a.parquet",
        "data/sub/c.parquet",
        "data/.hidden.parquet",
        "data/.cache/d.parquet",
        "data/_SUCCESS",
        "data/_tmp/e.parquet",
        "data/README.md",
    )
    resolved = resolve_data_files(tmp_path / "data")
    assert urls(resolved["train"]) == [
        str(tmp_path / "data" / name) for name in ["a.parquet", "b.parquet", "sub/c.parquet"]
    ]


def test_glob_ignores_hidden_unless_the_pattern_names_them(tmp_path: Path) -> None:
    make(tmp_path, "a.csv", ".b.csv", "_c.csv", ".hidden/d.csv", "sub/e.csv")
    assert urls(resolve_data_files("*.csv", base_path=tmp_path)["train"]) == [
        str(tmp_path / "a.csv")
    ]
    assert urls(resolve_data_files("**/*.csv", base_path=tmp_path)["train"]) == [
        str(tmp_path / "a.csv"),
        str(tmp_path / "sub/e.csv"),
    ]
    assert urls(resolve_data_files(".*.csv", base_path=tmp_path)["train"]) == [
        str(tmp_path / ".b.csv")
    ]
    assert urls(resolve_data_files(".hidden/*", base_path=tmp_path)["train"]) == [
        str(tmp_path / ".hidden/d.csv")
    ]
    # An explicit path is always taken, hidden or not.
    assert urls(resolve_data_files(str(tmp_path / "_c.csv"))["train"]) == [str(tmp_path / "_c.csv")]


def test_relative_paths_use_base_path_or_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "x/a.txt")
    monkeypatch.chdir(tmp_path / "x")
    assert urls(resolve_data_files("a.txt")["train"]) == [str(tmp_path / "x/a.txt")]
    assert urls(resolve_data_files("x/a.txt", base_path=tmp_path)["train"]) == [
        str(tmp_path / "x/a.txt")
    ]


def test_file_url(tmp_path: Path) -> None:
    make(tmp_path, "a.txt", "b.txt")
    resolved = resolve_data_files(f"file://{tmp_path}/*.txt")
    assert urls(resolved["train"]) == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]


def test_memory_urls_glob_and_directory(memory_root: str) -> None:
    fs = fsspec.filesystem("memory")
    for name in ["d/b.jsonl", "d/a.jsonl", "d/sub/c.jsonl", "d/.x.jsonl"]:
        fs.pipe(f"{memory_root}/{name}", b"{}\n")
    by_glob = resolve_data_files(f"{memory_root}/d/*.jsonl")["train"]
    assert [f.url.rsplit("/", 1)[1] for f in by_glob] == ["a.jsonl", "b.jsonl"]
    assert all(f.url.startswith("memory://") and f.size == 3 for f in by_glob)
    by_dir = resolve_data_files({"all": f"{memory_root}/d"})["all"]
    assert [f.url.split("/d/", 1)[1] for f in by_dir] == ["a.jsonl", "b.jsonl", "sub/c.jsonl"]
    relative = resolve_data_files("d/sub/*.jsonl", base_path=memory_root)["train"]
    assert len(relative) == 1


def test_nothing_matching_names_the_pattern_and_folder(tmp_path: Path) -> None:
    make(tmp_path, "a.csv", "b.csv")
    with pytest.raises(DataFilesNotFoundError) as raised:
        resolve_data_files("*.parquet", base_path=tmp_path)
    message = str(raised.value)
    assert "*.parquet" in message
    assert str(tmp_path) in message
    assert "a.csv, b.csv" in message
    assert raised.value.searched == str(tmp_path)
    assert isinstance(raised.value, FileNotFoundError)

    with pytest.raises(DataFilesNotFoundError, match="does not exist"):
        resolve_data_files(str(tmp_path / "missing" / "*.csv"))
    with pytest.raises(DataFilesNotFoundError, match="No file or folder matches"):
        resolve_data_files(str(tmp_path / "nope.csv"))
    (tmp_path / "empty").mkdir()
    make(tmp_path, "empty/.only-hidden")
    with pytest.raises(DataFilesNotFoundError, match="No data file matches"):
        resolve_data_files(str(tmp_path / "empty"))


def test_invalid_shapes() -> None:
    with pytest.raises(InvalidDataFilesError, match="got int"):
        resolve_data_files(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidDataFilesError, match="empty list"):
        resolve_data_files({"train": []})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.parquet", "parquet"),
        ("a.jsonl", "json"),
        ("a.ndjson.gz", "json"),
        ("a.json.zst", "json"),
        ("A.CSV.BZ2", "csv"),
        ("a.tsv.xz", "tsv"),
        ("notes.txt", "text"),
        ("memory://x/data-00000-of-00001.arrow", "arrow"),
    ],
)
def test_infer_format(name: str, expected: str) -> None:
    assert infer_format(name) == expected


def test_infer_format_errors_and_compression() -> None:
    assert infer_format(["a.jsonl", "b.jsonl.gz"]) == "json"
    with pytest.raises(UnknownFormatError, match="mix several formats"):
        infer_format(["a.jsonl", "b.csv"])
    with pytest.raises(UnknownFormatError, match=r"'a\.xlsx'"):
        infer_format("a.xlsx")
    assert infer_compression("a.jsonl.gz") == "gzip"
    assert infer_compression("a.jsonl") is None


def test_an_existing_path_with_brackets_is_taken_as_written(tmp_path: Path) -> None:
    make(tmp_path, "run[1]/data.jsonl", "run1/data.jsonl", "run[1]/more/x.jsonl")
    as_file = resolve_data_files(str(tmp_path / "run[1]/data.jsonl"))["train"]
    assert urls(as_file) == [str(tmp_path / "run[1]/data.jsonl")]
    as_folder = resolve_data_files("run[1]", base_path=tmp_path)["train"]
    assert urls(as_folder) == [
        str(tmp_path / name) for name in ["run[1]/data.jsonl", "run[1]/more/x.jsonl"]
    ]
    # Where no file has the name as written, it is still a pattern.
    assert urls(resolve_data_files("run[1]/*.jsonl", base_path=tmp_path)["train"]) == [
        str(tmp_path / "run1/data.jsonl")
    ]


def test_a_literal_path_with_brackets_loads(tmp_path: Path) -> None:
    make(tmp_path, "run[1]/placeholder")
    (tmp_path / "run[1]/data.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    loaded = load_dataset("json", data_files=str(tmp_path / "run[1]/data.jsonl"), split="train")
    assert loaded["a"][:] == [1, 2]


def test_a_literal_path_with_a_wildcard_on_memory_and_s3(
    memory_root: str, s3_endpoint: str
) -> None:
    options = {"endpoint_url": s3_endpoint}
    for root, storage in [(memory_root, None), ("s3://datasets", options)]:
        fs, _ = fsspec.core.url_to_fs(root, **(storage or {}))
        for name in ["run[1]/data.jsonl", "run1/data.jsonl", "a*b.jsonl", "axb.jsonl"]:
            fs.pipe(f"{root}/{name}", b"{}\n")
        for name in ["run[1]/data.jsonl", "a*b.jsonl"]:
            files = resolve_data_files(f"{root}/{name}", storage_options=storage)["train"]
            (file,) = files
            assert file.url.endswith(f"/{name}")
