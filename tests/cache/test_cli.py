"""``dagster-ds cache ls | verify | gc | clean``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dagster_ds.cache import CacheStore
from dagster_ds.cli import main

from .conftest import fingerprint


def _fill(root: Path, sizes: list[int]) -> list[str]:
    store = CacheStore(root)
    fps = []
    for number, size in enumerate(sizes, start=1):
        with store.writer(fingerprint(number), metadata={"num_rows": number}) as writer:
            writer.write_bytes("data-00000-of-00001.arrow", b"x" * size)
        writer.entry.close()
        fps.append(fingerprint(number))
    return fps


def _invoke(*args: str) -> tuple[int, str]:
    """The exit status and standard output (where the store is and errors go to stderr)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def _stderr(*args: str) -> tuple[int, str]:
    """The exit status and standard error."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stderr


def test_ls_shows_sizes_and_totals(tmp_path: Path) -> None:
    a, b = _fill(tmp_path, [1_500_000, 2_000])
    code, output = _invoke("cache", "ls", "--store", str(tmp_path))
    assert code == 0
    lines = output.splitlines()
    assert lines[0].startswith(f"{b}     2.0 kB    1 files  used ")  # most recently used first
    assert lines[1].startswith(f"{a}     1.5 MB    1 files  used ")
    assert lines[-1] == f"2 entries, 1.5 MB in {tmp_path}"
    code, output = _invoke("cache", "ls", "--json", "--store", str(tmp_path))
    records = [json.loads(line) for line in output.splitlines()]
    assert [r["fingerprint"] for r in records] == [b, a]
    assert records[1]["size"] == 1_500_000
    assert records[1]["metadata"] == {"num_rows": 1}


def test_ls_uses_the_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    cache = os.environ["DAGSTER_DS_CACHE"]
    _fill(Path(cache), [10])
    code, output = _invoke("cache", "ls")
    assert code == 0
    assert output.splitlines()[-1] == f"1 entries, 10 B in {cache}"
    assert _stderr("cache", "ls") == (0, f"store: {cache} (from $DAGSTER_DS_CACHE)\n")


@pytest.mark.parametrize("command", [["ls"], ["verify"], ["gc", "--max-size", "1GB"], ["clean"]])
def test_every_command_takes_store_after_it_and_says_which_store_it_uses(
    tmp_path: Path, command: list[str]
) -> None:
    _fill(tmp_path, [10])
    code, errors = _stderr("cache", *command, "--store", str(tmp_path))
    assert code == 0
    assert errors == f"store: {tmp_path} (from --store)\n"


def test_the_old_dir_spellings_still_work_and_say_they_are_deprecated(tmp_path: Path) -> None:
    _fill(tmp_path, [10])
    expected = _invoke("cache", "ls", "--store", str(tmp_path))
    assert _invoke("cache", "--dir", str(tmp_path), "ls") == expected
    assert _invoke("cache", "ls", "--dir", str(tmp_path)) == expected
    code, errors = _stderr("cache", "--dir", str(tmp_path), "ls")
    assert code == 0
    assert "--dir is deprecated; give --store after the command" in errors
    assert f"store: {tmp_path} (from 'cache --dir', deprecated: use --store" in errors
    assert "--dir" not in CliRunner().invoke(main, ["cache", "ls", "--help"]).output


def test_a_store_without_entries_says_where_it_looked(tmp_path: Path) -> None:
    code, errors = _stderr("cache", "ls", "--store", str(tmp_path / "empty"))
    assert code == 0
    assert f"warning: no entries in '{tmp_path / 'empty'}' (from --store)" in errors


def test_verify_takes_fingerprints_as_we_print_them(tmp_path: Path) -> None:
    a, b = _fill(tmp_path, [100, 100])
    assert _invoke("cache", "verify", f"{a}…", f"{b}...", "--store", str(tmp_path)) == (
        0,
        "2 entries verified, 0 corrupt\n",
    )


def test_verify_reports_corruption_and_exits_1(tmp_path: Path) -> None:
    a, b = _fill(tmp_path, [100, 100])
    assert _invoke("cache", "verify", "--store", str(tmp_path)) == (
        0,
        "2 entries verified, 0 corrupt\n",
    )
    (tmp_path / "objects" / b[:2] / b / "data-00000-of-00001.arrow").write_bytes(b"y" * 100)
    code, output = _invoke("cache", "verify", "--store", str(tmp_path))
    assert code == 1
    assert f"CORRUPT {b}: data-00000-of-00001.arrow has xxh3-128 checksum" in output
    assert output.endswith("1 entries verified, 1 corrupt\n")
    code, output = _invoke("cache", "verify", a, b, "--store", str(tmp_path))
    assert code == 1
    assert f"MISSING {b}" in output


def test_gc_with_a_human_readable_size(tmp_path: Path) -> None:
    a, _, _ = _fill(tmp_path, [1000, 1000, 1000])
    code, output = _invoke("cache", "gc", "--max-size", "2kB", "--store", str(tmp_path))
    assert code == 0
    assert output == f"evicted {a}\nfreed 1.0 kB (1 entries, 0 garbage items); 2.0 kB left\n"
    code, output = _invoke("cache", "gc", "--max-size", "20GB", "--store", str(tmp_path))
    assert output.endswith("freed 0 B (0 entries, 0 garbage items); 2.0 kB left\n")
    code, errors = _stderr("cache", "gc", "--max-size", "lots", "--store", str(tmp_path))
    assert code == 2
    assert "Invalid size 'lots'" in errors
    code, errors = _stderr("cache", "gc", "--store", str(tmp_path))
    assert code == 2
    assert "Give --max-size" in errors


def test_clean_removes_dead_writers_garbage(tmp_path: Path) -> None:
    junk = tmp_path / "tmp" / "junk"
    junk.mkdir(parents=True)
    os.utime(junk, (0, 0))
    code, output = _invoke("cache", "clean", "--older-than", "1h", "--store", str(tmp_path))
    assert code == 0
    assert output == f"removed {junk}\n1 items removed\n"


@pytest.mark.slow
def test_the_installed_command(tmp_path: Path) -> None:
    _fill(tmp_path, [10])
    command = Path(sys.executable).with_name("dagster-ds")
    result = subprocess.run(
        [str(command), "cache", "ls", "--store", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines()[-1] == f"1 entries, 10 B in {tmp_path}"
    assert result.stderr == f"store: {tmp_path} (from --store)\n"
