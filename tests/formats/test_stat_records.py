"""Local source files hashed once per machine, not once per process: stat records, racy rule."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
import xxhash

from dagster_ds.formats import fingerprint_files
from dagster_ds.formats._stat_records import DATABASE, RACY_NS, StatRecords, stat_key
from tests import _fast


def _wait_until_not_racy(paths: list[Path]) -> None:
    """Wait until the last change of every file in ``paths`` is past the racy window.

    A file hashed from then on is recorded as trusted. Only the rest of the window
    is waited for: the time since the files changed counts.
    """
    changed = max(max(key[2], key[3]) for key in map(stat_key, map(str, paths)))
    while (left := changed + RACY_NS - time.time_ns()) > 0:
        time.sleep(left / 1e9)


@dataclass(frozen=True)
class AgedFiles:
    """Source files written once for the module, past the racy window when a test gets them.

    Each test reads its own set, so the module waits out the window once, not per test.

    Attributes:
        large: 8 files of 8 MiB of random bytes (the test that reads them rewrites one).
        small: One short text file.
        many: 40 text files.
    """

    large: list[Path]
    small: Path
    many: list[Path]


@pytest.fixture(scope="module")
def aged(tmp_path_factory: pytest.TempPathFactory) -> AgedFiles:
    folder = tmp_path_factory.mktemp("aged")
    large = [folder / f"part-{index}.bin" for index in range(8)]
    for path in large:
        path.write_bytes(os.urandom(8 << 20))
    small = folder / "data.txt"
    small.write_text("the rows")
    many = [folder / f"f{index}.txt" for index in range(40)]
    for index, path in enumerate(many):
        path.write_text(f"row {index}\n" * 1000)
    files = AgedFiles(large, small, many)
    _wait_until_not_racy([*large, small, *many])
    return files


def _run(code: str) -> str:
    done = _fast.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


FINGERPRINT_AND_BYTES_READ = """
import sys
from dagster_ds.formats import fingerprint_files

def rchar() -> int:
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])

files, state = sys.argv[1:-1], sys.argv[-1]
before = rchar()
fingerprint = fingerprint_files(files, state_dir=state)
print(fingerprint, rchar() - before)
"""


def _fingerprint_in_a_new_process(files: list[Path], state: Path) -> tuple[str, int]:
    done = _fast.run(
        [sys.executable, "-c", FINGERPRINT_AND_BYTES_READ, *map(str, files), str(state)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    fingerprint, read = done.stdout.split()
    return fingerprint, int(read)


def test_a_new_process_reads_none_of_an_unchanged_source(aged: AgedFiles, tmp_path: Path) -> None:
    files = aged.large
    state = tmp_path / "state"
    first, read_first = _fingerprint_in_a_new_process(files, state)
    second, read_second = _fingerprint_in_a_new_process(files, state)
    assert read_first >= 64 << 20  # the first process hashed every byte
    assert second == first
    assert read_second < 1 << 20  # the second read its records only, none of the 64 MiB
    files[3].write_bytes(os.urandom(8 << 20))  # one file changes: only it is read again
    _wait_until_not_racy(files)  # read because its stat changed, not because it is racy
    third, read_third = _fingerprint_in_a_new_process(files, state)
    assert third != first
    assert (8 << 20) <= read_third < (9 << 20)


def test_a_file_rewritten_with_the_same_size_at_once_is_never_taken_as_unchanged(
    tmp_path: Path,
) -> None:
    """Rewrites in the same timestamp tick keep size, mtime and ctime: the racy rule."""
    out = _run(
        f"""
        import os, xxhash
        from dagster_ds.formats import fingerprint_files
        path, state = {str(tmp_path / "data.bin")!r}, {str(tmp_path / "state")!r}
        wrong = 0
        for round in range(300):
            content = round.to_bytes(4, "little") * 256
            with open(path, "wb") as file:
                file.write(content)
            expected = xxhash.xxh3_128()
            expected.update(("content:" + xxhash.xxh3_128_hexdigest(content) + "\\n").encode())
            wrong += fingerprint_files([path], state_dir=state) != expected.hexdigest()
        print(wrong)
        """
    )
    assert out == "0"


def test_a_resolved_file_rewritten_with_the_same_size_at_once_is_never_taken_as_unchanged(
    tmp_path: Path,
) -> None:
    """The same, as `load_dataset` fingerprints: by the stat taken when resolving the file."""
    out = _run(
        f"""
        import os, xxhash
        from dagster_ds.formats import fingerprint_files, resolve_data_files
        folder, state = {str(tmp_path / "data")!r}, {str(tmp_path / "state")!r}
        os.makedirs(folder)
        wrong = 0
        for round in range(300):
            content = round.to_bytes(4, "little") * 256
            with open(folder + "/data.bin", "wb") as file:
                file.write(content)
            expected = xxhash.xxh3_128()
            expected.update(("content:" + xxhash.xxh3_128_hexdigest(content) + "\\n").encode())
            files = resolve_data_files(folder + "/*.bin")["train"]
            wrong += fingerprint_files(files, state_dir=state) != expected.hexdigest()
        print(wrong)
        """
    )
    assert out == "0"


def test_records_read_at_once_are_trusted_as_records_read_one_by_one(tmp_path: Path) -> None:
    paths = [tmp_path / f"data-{index}.txt" for index in range(3)]
    for path in paths:
        path.write_text(path.name)
    racy, old, damaged = keys = [stat_key(str(path)) for path in paths]
    changed = [max(key[2], key[3]) for key in keys]
    state = str(tmp_path / "state")
    with StatRecords(state) as records:
        records.record(racy, "a" * 32, changed[0] + RACY_NS - 1)  # hashed in the racy window
        records.record(old, "b" * 32, changed[1] + RACY_NS)
        records.record(damaged, "c" * 32, changed[2] + RACY_NS)
    with closing(sqlite3.connect(os.path.join(state, DATABASE))) as connection:
        connection.execute("UPDATE records SET digest = ? WHERE digest = ?", ("d" * 32, "c" * 32))
        connection.commit()
    with StatRecords(state) as records:
        records.prefetch([*keys, (str(tmp_path / "unknown"), 1, 2, 3, 4, 5)])
        assert [records.lookup(key) for key in keys] == [None, "b" * 32, None]
        newer = (*old[:2], old[2] + 1, *old[3:])  # another version, not prefetched
        assert records.lookup(newer) is None


def test_a_record_is_trusted_only_when_the_file_changed_well_before_it_was_hashed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "data.txt"
    path.write_text("hello")
    key = stat_key(str(path))
    changed = max(key[2], key[3])
    with StatRecords(str(tmp_path / "state")) as records:
        records.record(key, "a" * 32, changed + RACY_NS - 1)  # hashed in the racy window
        assert records.lookup(key) is None
        records.record(key, "b" * 32, changed + RACY_NS)
        assert records.lookup(key) == "b" * 32
        other = (*key[:2], key[2] + 1, *key[3:])  # another mtime: another file version
        assert records.lookup(other) is None


def test_damaged_records_cost_a_read_never_a_wrong_fingerprint(
    aged: AgedFiles, tmp_path: Path
) -> None:
    path = aged.small
    state = tmp_path / "state"
    right, _ = _fingerprint_in_a_new_process([path], state)
    with closing(sqlite3.connect(state / DATABASE)) as connection:  # a record's digest changed
        connection.execute("UPDATE records SET digest = ?", ("0" * 32,))
        connection.commit()
    assert _fingerprint_in_a_new_process([path], state)[0] == right
    (state / DATABASE).write_bytes(b"not a database at all" * 100)  # the file itself
    assert _fingerprint_in_a_new_process([path], state)[0] == right
    unusable = str(path / "state")  # a folder inside a file: never created
    assert fingerprint_files([path], state_dir=unusable) == right


def test_processes_hashing_the_same_files_at_once_agree(aged: AgedFiles, tmp_path: Path) -> None:
    files = aged.many
    expected = xxhash.xxh3_128()
    for path in files:
        expected.update(f"content:{xxhash.xxh3_128_hexdigest(path.read_bytes())}\n".encode())
    state = tmp_path / "state"
    runs = [
        _fast.Popen(
            [sys.executable, "-c", FINGERPRINT_AND_BYTES_READ, *map(str, files), str(state)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=120)[0].split()[0] for run in runs]
    assert outputs == [expected.hexdigest()] * 3
    assert _fingerprint_in_a_new_process(files, state)[0] == expected.hexdigest()


def test_records_of_many_files_are_written_in_one_transaction(tmp_path: Path) -> None:
    """Thousands of tiny files cost a few writes of the database, not a sync per file."""
    files = []
    for index in range(500):
        path = tmp_path / f"part-{index}.txt"
        path.write_text(f"row {index}\n")
        files.append(path)
    state = tmp_path / "state"
    out = _run(
        f"""
        from dagster_ds.formats import fingerprint_files

        def writes() -> int:
            with open("/proc/self/io") as io:
                return int(next(line for line in io if line.startswith("syscw:")).split()[1])

        files = {[str(path) for path in files]!r}
        before = writes()
        fingerprint_files(files, state_dir={str(state)!r})
        print(writes() - before)
        """
    )
    assert int(out) < 100  # a write per record would be 500 at least
    with closing(sqlite3.connect(state / DATABASE)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM records").fetchone() == (500,)
