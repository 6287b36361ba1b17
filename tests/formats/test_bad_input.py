"""Bad input gets an error naming the file and line, within bounded memory."""

from __future__ import annotations

import gzip
import json
import resource
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds import DataFilesNotFoundError, MalformedFileError, load_dataset
from dagster_ds.errors import FormatOptionError


def _nested(depth: int) -> str:
    return '{"a": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def test_deep_nesting_is_refused_with_the_line_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": 1}\n' * 3 + _nested(2000) + "\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(
        MalformedFileError, match=r"deep.jsonl.*line 4.*nested more than 64"
    ) as info:
        load_dataset("json", data_files=str(path), split="train")
    assert info.value.line == 4
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200_000
    with pytest.raises(MalformedFileError, match="line 4"):
        load_dataset("json", data_files=str(path), split="train", streaming=True).to_list()


@pytest.mark.parametrize("depth", [65, 200])
def test_depth_just_over_the_limit_is_refused_and_at_the_limit_loads(
    tmp_path: Path, depth: int
) -> None:
    over, at = tmp_path / "over.jsonl", tmp_path / "at.jsonl"
    over.write_text(_nested(depth) + "\n")
    at.write_text(_nested(64) + '\n{"b": "' + "[" * 100 + '"}\n')
    with pytest.raises(MalformedFileError, match=r"over\.jsonl"):
        load_dataset("json", data_files=str(over), split="train")
    assert load_dataset("json", data_files=str(at), split="train").num_rows == 2


@settings(max_examples=25, deadline=None)
@given(
    depths=st.lists(st.integers(1, 64), min_size=1, max_size=6),
    deep_at=st.one_of(st.none(), st.integers(0, 5)),
    noise=st.text(alphabet="[]{}x", max_size=8),
)
def test_only_a_line_deeper_than_the_limit_is_refused(
    tmp_path_factory: pytest.TempPathFactory, depths: list[int], deep_at: int | None, noise: str
) -> None:
    lines = [_nested(depth).replace('"a"', f'"k{depth}"') for depth in depths]
    lines.append(json.dumps({"s": noise}))  # brackets inside a string do not count
    position = None if deep_at is None else min(deep_at, len(lines))
    if position is not None:
        lines.insert(position, _nested(65).replace('"a"', '"deep"'))
    path = tmp_path_factory.mktemp("depths") / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    if position is None:
        assert load_dataset("json", data_files=str(path), split="train").num_rows == len(lines)
    else:
        with pytest.raises(MalformedFileError, match="nested more than 64") as info:
            load_dataset("json", data_files=str(path), split="train")
        assert info.value.line == position + 1


def test_a_deep_whole_json_document_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" + _nested(3000) + "]")
    with pytest.raises(MalformedFileError, match=r"deep\.json.*nested"):
        load_dataset("json", data_files=str(path), split="train")


def test_non_utf8_json_lines_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "l1.jsonl"
    path.write_bytes(b'{"a": "x"}\n{"a": "caf\xe9"}\n')
    with pytest.raises(MalformedFileError, match=r"l1.jsonl.*line 2.*0xe9.*UTF-8") as info:
        load_dataset("json", data_files=str(path), split="train")
    assert info.value.line == 2


@pytest.mark.parametrize("kind", ["fake", "truncated"])
def test_a_bad_gzip_file_is_named(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "train.jsonl.gz"
    data = gzip.compress(b'{"a": 1}\n' * 5000)
    path.write_bytes(b"not gzip at all" if kind == "fake" else data[: len(data) // 2])
    with pytest.raises(MalformedFileError, match=r"train.jsonl.gz.*not a valid gzip file"):
        load_dataset("json", data_files=str(path), split="train")


def test_a_glob_through_a_folder_with_brackets_says_how_to_escape(tmp_path: Path) -> None:
    folder = tmp_path / "data[1]"
    folder.mkdir()
    (folder / "a.csv").write_text("a\n1\n")
    pattern = f"{folder}/*.csv"
    with pytest.raises(DataFilesNotFoundError, match=r"escape them as '\[\[\]' and '\[\]\]'"):
        load_dataset("csv", data_files=pattern, split="train")
    escaped = f"{tmp_path}/data[[]1]/*.csv"
    assert load_dataset("csv", data_files=escaped, split="train").num_rows == 1


def test_the_depth_limit_error_names_the_option_to_raise_it(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": 1}\n' + _nested(100) + "\n")
    with pytest.raises(MalformedFileError, match=r"deep\.jsonl.*line 2.*more than 64.*max_depth="):
        load_dataset("json", data_files=str(path), split="train", streaming=True).to_list()


@pytest.mark.parametrize("whole", [False, True])
def test_deeper_json_streams_with_max_depth(tmp_path: Path, whole: bool) -> None:
    rows = [_nested(100), _nested(100).replace("1", "2")]
    path = tmp_path / ("deep.json" if whole else "deep.jsonl")
    path.write_text("[" + ",".join(rows) + "]" if whole else "\n".join(rows) + "\n")
    loaded = load_dataset(
        "json", data_files=str(path), split="train", streaming=True, max_depth=100
    )
    assert loaded.to_list() == [json.loads(row) for row in rows]
    with pytest.raises(MalformedFileError, match=r"line 1: .*more than 99 levels"):
        load_dataset(
            "json", data_files=str(path), split="train", streaming=True, max_depth=99
        ).to_list()


def test_a_lower_max_depth_is_a_stricter_guard(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": [1]}\n{"a": [[1]]}\n')
    with pytest.raises(MalformedFileError, match=r"line 2: .*more than 2 levels") as info:
        load_dataset("json", data_files=str(path), split="train", max_depth=2)
    assert info.value.line == 2


def test_the_deepest_max_depth_reads_in_a_thread(tmp_path: Path) -> None:
    # 500 levels stay far within the stack of Arrow's (recursive) JSON parser, also on
    # the thread a streaming read decodes on.
    path = tmp_path / "deepest.jsonl"
    path.write_text(_nested(500) + "\n")
    loaded = load_dataset(
        "json", data_files=str(path), split="train", streaming=True, max_depth=500
    )
    assert loaded.to_list() == [json.loads(_nested(500))]


@pytest.mark.parametrize("depth", [0, 501, 2.5])
def test_max_depth_out_of_range_is_refused(tmp_path: Path, depth: object) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n')
    with pytest.raises(FormatOptionError, match=r"max_depth"):
        load_dataset(
            "json", data_files=str(path), split="train", streaming=True, max_depth=depth
        ).to_list()


def test_a_map_style_load_deeper_than_its_cache_holds_says_to_stream(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(_nested(100) + "\n")
    with pytest.raises(FormatOptionError, match=r"max_depth=100.*64 levels.*streaming=True"):
        load_dataset("json", data_files=str(path), split="train", max_depth=100)


@pytest.mark.parametrize("field", [None, "data"])
def test_whole_json_records_at_the_limit_load_and_past_it_are_refused(
    tmp_path: Path, field: str | None
) -> None:
    def document(depth: int) -> str:
        records = "[" + _nested(depth) + "]"
        return records if field is None else '{"data": ' + records + "}"

    at, over = tmp_path / "at.json", tmp_path / "over.json"
    at.write_text(document(64))
    over.write_text(document(65))
    assert load_dataset("json", data_files=str(at), split="train", field=field).num_rows == 1
    with pytest.raises(MalformedFileError, match=r"over\.json.*more than 64"):
        load_dataset("json", data_files=str(over), split="train", field=field)
