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
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_ls_shows_sizes_and_totals(tmp_path: Path) -> None:
    a, b = _fill(tmp_path, [1_500_000, 2_000])
    code, output = _invoke("cache", "--dir", str(tmp_path), "ls")
    assert code == 0
    lines = output.splitlines()
    assert lines[0].startswith(f"{b}     2.0 kB    1 files  used ")  # most recently used first
    assert lines[1].startswith(f"{a}     1.5 MB    1 files  used ")
    assert lines[-1] == f"2 entries, 1.5 MB in {tmp_path}"
    code, output = _invoke("cache", "--dir", str(tmp_path), "ls", "--json")
    records = [json.loads(line) for line in output.splitlines()]
    assert [r["fingerprint"] for r in records] == [b, a]
    assert records[1]["size"] == 1_500_000
    assert records[1]["metadata"] == {"num_rows": 1}


def test_ls_uses_the_environment_by_default(tmp_path: Path) -> None:
    _fill(Path(os.environ["DAGSTER_DS_CACHE"]), [10])
    code, output = _invoke("cache", "ls")
    assert code == 0
    assert output.splitlines()[-1].startswith("1 entries, 10 B in ")


def test_verify_reports_corruption_and_exits_1(tmp_path: Path) -> None:
    a, b = _fill(tmp_path, [100, 100])
    assert _invoke("cache", "--dir", str(tmp_path), "verify") == (
        0,
        "2 entries verified, 0 corrupt\n",
    )
    (tmp_path / "objects" / b[:2] / b / "data-00000-of-00001.arrow").write_bytes(b"y" * 100)
    code, output = _invoke("cache", "--dir", str(tmp_path), "verify")
    assert code == 1
    assert f"CORRUPT {b}: data-00000-of-00001.arrow has xxh3-128 checksum" in output
    assert output.endswith("1 entries verified, 1 corrupt\n")
    code, output = _invoke("cache", "--dir", str(tmp_path), "verify", a, b)
    assert code == 1
    assert f"MISSING {b}" in output


def test_gc_with_a_human_readable_size(tmp_path: Path) -> None:
    a, _, _ = _fill(tmp_path, [1000, 1000, 1000])
    code, output = _invoke("cache", "--dir", str(tmp_path), "gc", "--max-size", "2kB")
    assert code == 0
    assert output == f"evicted {a}\nfreed 1.0 kB (1 entries, 0 garbage items); 2.0 kB left\n"
    code, output = _invoke("cache", "--dir", str(tmp_path), "gc", "--max-size", "20GB")
    assert output.endswith("freed 0 B (0 entries, 0 garbage items); 2.0 kB left\n")
    code, output = _invoke("cache", "--dir", str(tmp_path), "gc", "--max-size", "lots")
    assert code == 2
    assert "Invalid size 'lots'" in output
    code, output = _invoke("cache", "--dir", str(tmp_path), "gc")
    assert code == 2
    assert "--max-size" in output


def test_clean_removes_dead_writers_garbage(tmp_path: Path) -> None:
    junk = tmp_path / "tmp" / "junk"
    junk.mkdir(parents=True)
    os.utime(junk, (0, 0))
    code, output = _invoke("cache", "--dir", str(tmp_path), "clean", "--older-than", "1h")
    assert code == 0
    assert output == f"removed {junk}\n1 items removed\n"


@pytest.mark.slow
def test_the_installed_command(tmp_path: Path) -> None:
    _fill(tmp_path, [10])
    command = Path(sys.executable).with_name("dagster-ds")
    result = subprocess.run(
        [str(command), "cache", "--dir", str(tmp_path), "ls"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines()[-1] == f"1 entries, 10 B in {tmp_path}"
