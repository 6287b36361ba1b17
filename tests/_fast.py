"""Python children without the cold start: `Popen` and `run` fork them from a warm server.

A test that needs a fresh Python process (a second process reusing a cache, a writer killed
with SIGKILL, a process's own memo) pays ~0.4-2 s of CPU for its imports when the child
starts cold: pyarrow, numpy, pandas, dill, fsspec, and Dagster. A *fork server* (one per
test process, started at its first use) imports those third-party libraries once; each child
is then ``os.fork()``-ed from it and is a real, separate process: its own pid (killable,
waited for, its exit code reported), its own memory, stdin/stdout/stderr of its own, the
environment, working folder and ``sys.path`` it was given. It imports dagster_ds and the
tests' modules itself, from their files as they are when it starts (the server never
imports them: tests edit them between runs), and exits as Python does (threads joined,
atexit handlers run).

`Popen` and `run` take the arguments of `subprocess.Popen` and `subprocess.run` (with
``start_new_session=True`` a forked child calls `os.setsid` first thing). A child is
forked when the arguments are ``[sys.executable, "-c", source, *argv]``,
``[sys.executable, "-m", module, *argv]`` or ``[sys.executable, script, *argv]`` (a ``.py``
file, or an installed command's script: ``Path(sys.executable).with_name("dg")``) and a
cold start would behave the same. Environment variables that the interpreter or a
preloaded library reads when it starts (`_READ_AT_IMPORT`: PYTHONHASHSEED, whose string
hashes a fork keeps, OMP_NUM_THREADS...) are the server's: a child whose values of them
differ is forked from a server started with those values (at most `_MAX_SERVERS`: the
least recently used idle one is closed to make room; a child starts cold only when every
server has a child running). A test that changes one of them for good (Dask's
nannies set OMP_NUM_THREADS and PYTHONHASHSEED in the process that starts them) thus
does not make every later child start cold. Anything else starts cold, as with
`subprocess`. Tests about imports or start-up call `subprocess` itself (or
``run_python(..., cold=True)``).

Run as a script (``python tests/_fast.py SOCKET``), this file is the server.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

# Imported by the server before it forks: dagster_ds's and the Dagster tests' heavy
# third-party imports. None of them reads at import an environment variable the tests
# change (checked: HF_*, AWS_*, DAGSTER_HOME and the like are read when used); those they
# do read are in `_READ_AT_IMPORT`.
PRELOADED = (
    "numpy",
    "pandas",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.dataset",
    "pyarrow.json",
    "pyarrow.parquet",
    "dill",
    "xxhash",
    "fsspec",
    "dagster",
    "s3fs",
)
# Environment variables (names, or prefixes ending in "_") read when the interpreter or a
# `PRELOADED` library starts: a child whose value differs starts cold. Those in
# `_APPLIED_IN_CHILD` are applied to a forked child instead.
_READ_AT_IMPORT = (
    "PYTHON",
    "FSSPEC_",
    "ARROW_",
    "OPENBLAS_",
    "OMP_",
    "MKL_",
    "NUMPY_",
    "PANDAS_",
    "LANG",
    "LC_",
    "TZ",
    "S3FS_",
    "AIOHTTP_",
    "YARL_",
    "MULTIDICT_",
    "FROZENLIST_",
    "PROPCACHE_",
)
_APPLIED_IN_CHILD = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONWARNINGS")
# Dagster's variables read when used, not at import (the rest of DAGSTER_* is guarded).
_DAGSTER_READ_LATER = ("DAGSTER_HOME", "DAGSTER_DISABLE_TELEMETRY")


def share_botocore_data() -> None:
    """One botocore data loader, and one SSL context per CA bundle, for every S3 client here.

    Each new session (each new s3fs filesystem: the tests make them with
    ``skip_instance_cache``) otherwise parses botocore's JSON models again, the S3 service
    model and the endpoint rules: ~0.1 s of CPU per filesystem, a quarter of an S3 test's
    time (measured). The loader reads only botocore's own data files, the same for every
    session with the same data path; credentials and configuration stay per session.
    The SSL contexts: `_share_ssl_contexts`.
    """
    import functools

    import botocore.session

    if not hasattr(botocore.session.create_loader, "cache_info"):
        botocore.session.create_loader = functools.cache(botocore.session.create_loader)
    with contextlib.suppress(ImportError):  # aiobotocore: s3fs's client
        _share_ssl_contexts()


def _share_ssl_contexts() -> None:
    """One SSL context per CA bundle for every aiobotocore HTTP session of this process.

    Each new s3fs filesystem (fsspec keeps one per thread) builds its aiohttp session's
    context and loads certifi's CA certificates into it: ~28 ms of CPU, 8% of the S3 tests'
    time (py-spy), though the tests' S3 endpoints are plain HTTP. A context is shared only
    when nothing is added to it afterwards (no proxy, no client certificate); aiohttp
    only reads it.
    """
    from aiobotocore.httpsession import AIOHTTPSession

    build = AIOHTTPSession._build_ssl_contexts  # pyright: ignore[reportPrivateUsage]
    if getattr(build, "shared", False):
        return
    contexts: dict[object, tuple[Any, Any]] = {}
    lock = threading.Lock()

    def shared(self: Any, proxy_url: Any) -> Any:
        if proxy_url or self._cert_file:
            return build(self, proxy_url)
        with lock:
            if self._verify not in contexts:
                contexts[self._verify] = build(self, proxy_url)
            return contexts[self._verify]

    shared.shared = True  # pyright: ignore[reportFunctionMemberAccess]
    AIOHTTPSession._build_ssl_contexts = shared  # pyright: ignore[reportPrivateUsage]


def _warm_botocore() -> None:
    """Share botocore's loader and parse the S3 models once, before the server forks."""
    import botocore.session

    share_botocore_data()
    session = botocore.session.get_session()
    session.create_client(
        "s3", region_name="us-east-1", aws_access_key_id="-", aws_secret_access_key="-"
    ).close()


def _read_at_import(name: str) -> bool:
    if name in _APPLIED_IN_CHILD:
        return False
    if name.startswith("DAGSTER_"):
        return not name.startswith("DAGSTER_DS_") and name not in _DAGSTER_READ_LATER
    return any(
        name.startswith(prefix) if prefix.endswith("_") or prefix == "PYTHON" else name == prefix
        for prefix in _READ_AT_IMPORT
    )


_AtImport = tuple[tuple[str, str], ...]
# Fork servers a test process may start (one per distinct `_AtImport`, ~200 MB each): a
# handful of environments in the whole suite.
_MAX_SERVERS = 6


def _at_import(env: Mapping[str, str]) -> _AtImport:
    """The variables of ``env`` read when Python and the preloaded libraries start."""
    return tuple(sorted((name, value) for name, value in env.items() if _read_at_import(name)))


class _Server:
    """A fork server of this process: started at its first forked child, ended at exit."""

    def __init__(self, at_import: _AtImport) -> None:
        self.folder = tempfile.mkdtemp(prefix="dagster-ds-forks-")
        self.address = os.path.join(self.folder, "socket")
        # The server's environment: this process's, less PYTHONPATH (each child brings its
        # own), with its children's values of the variables read at start.
        self.env = {
            name: value
            for name, value in os.environ.items()
            if name != "PYTHONPATH" and not _read_at_import(name)
        }
        self.env.update(at_import)
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.address],
            stdin=subprocess.PIPE,  # its end of file tells the server that this process ended
            stdout=subprocess.PIPE,
            env=self.env,
            cwd=self.folder,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        self.process.stdout.close()
        if ready != b"ready\n":
            raise RuntimeError(f"the fork server did not start (it said {ready!r})")
        self.running = 0  # children forked whose exit status is not taken yet
        self.last_used = time.monotonic()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_servers: dict[_AtImport, _Server] = {}
_server_lock = threading.Lock()


def _the_server(env: Mapping[str, str]) -> _Server | None:
    """The server for a child of environment ``env``, counted as running one more child.

    At `_MAX_SERVERS`, the least recently used server with no running child is closed to
    make room; None (start the child cold) when every server has one running.
    """
    at_import = _at_import(env)
    with _server_lock:
        server = _servers.get(at_import)
        if server is None:
            idle = [known for known, old in _servers.items() if old.running == 0]
            if len(_servers) >= _MAX_SERVERS and idle:
                _servers.pop(min(idle, key=lambda known: _servers[known].last_used)).close()
            if len(_servers) < _MAX_SERVERS:
                server = _servers[at_import] = _Server(at_import)
                atexit.register(server.close)
        if server is not None:
            server.running += 1
            server.last_used = time.monotonic()
        return server


def _release(server: _Server) -> None:
    """One child of ``server`` ended (its status is taken), or was never forked."""
    with _server_lock:
        server.running -= 1


def _forkable(args: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether these `subprocess.Popen` arguments run Python source in a child of ours."""
    if isinstance(args, (str, bytes)) or len(args) < 2 or args[0] != sys.executable:
        return False
    if not all(isinstance(arg, str) for arg in args):
        return False
    if args[1] in ("-c", "-m"):
        if len(args) < 3:
            return False
    elif args[1].startswith("-") or not _is_script(args[1]):
        return False
    unsupported = (
        "executable",
        "preexec_fn",
        "pass_fds",
        "shell",
        "process_group",
        "user",
        "group",
        "extra_groups",
    )
    if any(kwargs.get(name) for name in unsupported) or kwargs.get("close_fds") is False:
        return False
    if kwargs.get("umask", -1) != -1:
        return False
    cwd = kwargs.get("cwd")
    return cwd is None or os.path.isdir(cwd)  # else the cold path raises, as subprocess does


def _is_script(path: str) -> bool:
    """Whether ``path`` is Python source: a ``.py`` file, or a script starting ``#!...python``."""
    if path.endswith(".py"):
        return True
    try:
        with open(path, "rb") as file:
            first = file.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


class Popen(subprocess.Popen):
    """`subprocess.Popen`, its child forked from the fork server when it can be (see above).

    Example:
        >>> with Popen([sys.executable, "-c", "print(6 * 7)"], stdout=subprocess.PIPE) as child:
        ...     child.communicate()[0]
        b'42\\n'
    """

    def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
        self._forked: socket.socket | None = None
        self._server: _Server | None = None
        self._fork = not rest and _forkable(args, kwargs)
        self._new_session = bool(kwargs.get("start_new_session"))
        super().__init__(args, *rest, **kwargs)

    def _execute_child(self, args: Any, *rest: Any) -> None:
        (cwd, env) = rest[4:6]
        environment = os.environ if env is None else env
        server = _the_server(environment) if self._fork else None
        if server is None:
            super()._execute_child(args, *rest)  # pyright: ignore[reportAttributeAccessIssue]
            return
        p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = rest[9:15]
        request = json.dumps(
            {
                "argv": list(args[1:]),
                "cwd": os.fsdecode(cwd) if cwd is not None else os.getcwd(),
                "env": dict(environment),
                "new_session": self._new_session,
            }
        ).encode()
        fds = [
            p2cread if p2cread != -1 else 0,
            c2pwrite if c2pwrite != -1 else 1,
            errwrite if errwrite != -1 else 2,
        ]
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(server.address)
            socket.send_fds(connection, [struct.pack("!Q", len(request))], fds)
            connection.sendall(request)
            self.pid = int(_read_line(connection))
        except BaseException:
            connection.close()
            _release(server)
            raise
        self._forked, self._server = connection, server
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)  # pyright: ignore[reportAttributeAccessIssue]

    def _internal_poll(self, *args: Any, **kwargs: Any) -> int | None:
        if self._forked is None:
            return super()._internal_poll(*args, **kwargs)  # pyright: ignore[reportAttributeAccessIssue]
        if self.returncode is None:
            self._forked.setblocking(False)
            with contextlib.suppress(BlockingIOError):  # not ended yet
                self._take_status()
        return self.returncode

    def _wait(self, timeout: float | None) -> int:
        if self._forked is None:
            return super()._wait(timeout)  # pyright: ignore[reportAttributeAccessIssue]
        if self.returncode is None:
            self._forked.settimeout(timeout)
            try:
                self._take_status()
            except (TimeoutError, BlockingIOError):  # only with a timeout (0: non-blocking)
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0) from None
        assert self.returncode is not None
        return self.returncode

    def _take_status(self) -> None:
        assert self._forked is not None
        self.returncode = int(_read_line(self._forked))
        self._forked.close()
        if self._server is not None:
            _release(self._server)
            self._server = None


def _read_line(connection: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        part = connection.recv(64)
        if not part:
            raise RuntimeError("the fork server closed the connection (did it die?)")
        line += part
    return line


def run(
    args: Sequence[str],
    *,
    input: Any = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run`, its child from `Popen`.

    Example:
        >>> run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout
        '42\\n'
    """
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
        assert code is not None
    if check and code:
        raise subprocess.CalledProcessError(code, args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(args, code, stdout, stderr)


# The server (this file run as a script).


def _serve(address: str) -> None:
    import gc
    import importlib
    import select
    import warnings

    del sys.path[0]  # this folder: each child has a sys.path of its own
    assert not sys.warnoptions, "the server starts without PYTHONWARNINGS (children bring theirs)"
    cold_filters: list[Any] = list(warnings.filters)
    for name in PRELOADED:
        with contextlib.suppress(ImportError):  # not installed: a child fails as a cold one
            importlib.import_module(name)
    with contextlib.suppress(ImportError):
        _warm_botocore()
    # The libraries' warning filters, in front of the interpreter's (and a child's options).
    preloaded_filters = list(warnings.filters)[: len(warnings.filters) - len(cold_filters)]
    # The preloaded objects are out of the children's garbage collections: a collection
    # that traversed them would write to (and so copy) every page they are on, in each
    # child: 0.6 s of CPU a child with Dagster loaded, measured.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd: pid, connection
    stdin, listening = sys.stdin.fileno(), listener.fileno()
    while True:
        readable: list[int] = select.select([stdin, listening, *children], [], [])[0]
        for pidfd in readable:
            if pidfd in children:
                pid, connection = children.pop(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                connection.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
                connection.close()
        if stdin in readable:  # the test process closed it, or ended without closing it
            shutil.rmtree(os.path.dirname(address), ignore_errors=True)
            return  # its children end with it, or alone
        if listening in readable:
            connection, _ = listener.accept()
            header, fds, _, _ = socket.recv_fds(connection, 8, 3)
            request = json.loads(_receive(connection, struct.unpack("!Q", header)[0]))
            with warnings.catch_warnings():
                # OpenBLAS's threads (numpy) make CPython 3.12+ warn at each fork: OpenBLAS
                # stops them for the fork itself (pthread_atfork).
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                for server_socket in (listener, connection, *(c for _, c in children.values())):
                    server_socket.detach()  # closed below, as fds: no ResourceWarning at exit
                _become(request, fds, (preloaded_filters, cold_filters))  # exits the child
            for fd in fds:
                os.close(fd)
            connection.sendall(b"%d\n" % pid)
            children[os.pidfd_open(pid)] = (pid, connection)


def _receive(connection: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        part = connection.recv(min(size - len(data), 1 << 20))
        if not part:
            raise RuntimeError("the test process closed the connection mid-request")
        data += part
    return bytes(data)


def _become(request: dict[str, Any], fds: list[int], filters: tuple[list[Any], list[Any]]) -> None:
    """In the forked child: take the request's stdio, environment, folder and path; run it.

    It ends the process: through SystemExit, as Python ends (threads joined, atexit run).
    ``filters`` are the preloaded libraries' warning filters and the interpreter's.
    """
    import importlib
    import io
    import random
    import types
    import warnings

    if request["new_session"]:  # start_new_session=True: its own session and process group
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    env: dict[str, str] = request["env"]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, errors=errors, closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        open(1, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
        encoding=encoding,
        errors=errors,
        line_buffering=os.isatty(1),
        write_through=unbuffered,
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        open(2, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
        write_through=unbuffered,
    )
    command, *argv = request["argv"]
    main = types.ModuleType("__main__")
    if command == "-c":
        source, *argv = argv
        sys.argv, filename, first = ["-c", *argv], "<string>", ""
    elif command == "-m":  # as Python runs it: runpy finds the module, sets sys.argv[0]
        module, *argv = argv
        source = f"import runpy\nrunpy._run_module_as_main({module!r})"
        sys.argv, filename, first = ["-m", *argv], "<string>", os.getcwd()
    else:  # a script
        filename = os.path.abspath(command)
        source = Path(filename).read_text(encoding="utf-8")
        sys.argv, main.__file__ = [command, *argv], filename
        first = os.path.dirname(os.path.realpath(filename))
    python_path = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    sys.path[:] = [first, *python_path, *sys.path]
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    # PYTHONWARNINGS, as Python applies it at start, before the libraries add their filters.
    sys.warnoptions[:] = [option for option in env.get("PYTHONWARNINGS", "").split(",") if option]
    preloaded_filters, cold_filters = filters
    current = cast(list[Any], warnings.filters)
    current[:] = cold_filters
    warnings._processoptions(sys.warnoptions)  # pyright: ignore[reportAttributeAccessIssue]
    current[:0] = preloaded_filters
    warnings._filters_mutated()  # pyright: ignore[reportAttributeAccessIssue]
    importlib.invalidate_caches()
    random.seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(source, filename, "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # shown as Python shows it, without this function's frame
        if error.__traceback__ is not None:
            error = error.with_traceback(error.__traceback__.tb_next)
        sys.excepthook(type(error), error, error.__traceback__)
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    _serve(sys.argv[1])
