"""`tests._fast`: a forked child runs a module or an installed command as a cold start does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _fast

SHOW = """\
import json, os, sys
fields = {"name": __name__, "argv": sys.argv, "path0": sys.path[0], "parent": os.getppid()}
print(json.dumps(fields))
sys.exit(int(sys.argv[-1]))
"""


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A folder: the package ``shown`` (its module ``show`` prints what it ran as), and a
    command's script (``command``, the same code) as pip installs one."""
    (tmp_path / "shown").mkdir()
    (tmp_path / "shown" / "__init__.py").write_text("")
    (tmp_path / "shown" / "show.py").write_text(SHOW)
    (tmp_path / "command").write_text(f"#!{sys.executable}\n{SHOW}")
    return tmp_path


def _both(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], ...]:
    """``args`` run by `_fast.run`, then by `subprocess.run`."""
    return tuple(
        run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
        for run in (_fast.run, subprocess.run)
    )


def _shown(forked: str, cold: str) -> dict[str, object]:
    """What both children printed, once the forked one is shown to be the fork server's."""
    seen, expected = json.loads(forked), json.loads(cold)
    assert expected.pop("parent") == os.getpid()
    assert seen.pop("parent") != os.getpid()  # forked by the server, not started from here
    assert seen == expected
    return seen


def test_a_module_run_with_dash_m_is_forked_and_sees_what_a_cold_start_sees(
    package: Path,
) -> None:
    forked, cold = _both([sys.executable, "-m", "shown.show", "a b", "3"], package)
    assert (forked.returncode, cold.returncode) == (3, 3)
    assert forked.stderr == cold.stderr == ""
    assert _shown(forked.stdout, cold.stdout) == {
        "name": "__main__",
        "argv": [str(package / "shown" / "show.py"), "a b", "3"],
        "path0": str(package),  # the working folder, as `python -m` puts it
    }

    missing = _both([sys.executable, "-m", "shown.missing"], package)
    assert [done.returncode for done in missing] == [1, 1]
    assert missing[0].stderr == missing[1].stderr
    assert "No module named shown.missing" in missing[0].stderr


def test_an_installed_commands_script_is_forked_and_runs_as_the_command(package: Path) -> None:
    command = str(package / "command")
    forked, cold = _both([sys.executable, command, "x", "0"], package)
    assert forked.returncode == cold.returncode == 0
    assert _shown(forked.stdout, cold.stdout) == {
        "name": "__main__",
        "argv": [command, "x", "0"],
        "path0": str(package),
    }

    installed = str(Path(sys.executable).with_name("dagster-ds"))
    forked, cold = _both([sys.executable, installed, "--help"], package)
    assert forked.returncode == cold.returncode == 0
    assert forked.stdout == cold.stdout
    assert "Usage: dagster-ds" in forked.stdout


def test_a_child_in_a_new_session_is_forked_and_leads_its_own_process_group() -> None:
    source = "import json, os; print(json.dumps([os.getsid(0), os.getpgid(0), os.getppid()]))"
    with _fast.Popen(
        [sys.executable, "-c", source], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        printed = child.communicate(timeout=120)[0]
    session, group, parent = json.loads(printed)
    assert session == group == child.pid  # so os.killpg(child.pid, ...) ends it and its children
    assert parent != os.getpid()


def test_waiting_no_time_for_a_running_forked_child_times_out_as_subprocess_does() -> None:
    with _fast.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    ) as child:
        for timeout in (0, 0.0, 0.01):
            with pytest.raises(subprocess.TimeoutExpired):
                child.wait(timeout=timeout)
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=120) == 0


def test_a_child_with_its_own_values_of_variables_read_at_start_is_forked_as_they_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As Dask's nannies leave it in the process that started them.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    source = (
        "import json, os; "
        "print(json.dumps([hash('abc'), os.environ['OMP_NUM_THREADS'], os.getppid()]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "9"}
    forked, cold = (
        run([sys.executable, "-c", source], env=env, capture_output=True, text=True, check=True)
        for run in (_fast.run, subprocess.run)
    )
    *seen, parent = json.loads(forked.stdout)
    *expected, cold_parent = json.loads(cold.stdout)
    assert seen == expected  # the string hashes of that seed, and the variable
    assert cold_parent == os.getpid()
    assert parent != os.getpid()


def test_past_the_most_servers_an_idle_one_makes_room_and_children_still_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The most is one more than this process has: the first new server fills it, and the
    # next two each close an idle one (a server costs its imports: three, not eight).
    running = len(_fast._servers)  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(_fast, "_MAX_SERVERS", running + 1)
    source = "import os; print(os.getppid())"
    for seed in range(3):
        env = {**os.environ, "PYTHONHASHSEED": str(100 + seed)}
        child = _fast.run([sys.executable, "-c", source], env=env, capture_output=True, text=True)
        assert int(child.stdout) != os.getpid()  # forked from a server, not started cold
        assert len(_fast._servers) == running + 1  # pyright: ignore[reportPrivateUsage]
