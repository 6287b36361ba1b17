"""A function over items in forked worker processes, results in the items' order.

Our own small pool rather than `concurrent.futures.ProcessPoolExecutor`: that
pool can deadlock forever when a worker is killed while work is queued (its
manager thread joins the queue's feeder thread while holding the lock the
feeder needs: CPython gh-125451, fixed only in 3.12.8 and 3.13.1). Here each
worker has its own pipe and is handed the index of its next item; items and
the function are inherited through ``fork``, never pickled. A worker that dies
is seen on its process sentinel, so the caller gets `WorkerDiedError` naming
what the worker was computing, whatever the interpreter's patch level.

On any failure (a worker's exception, a dead worker, the caller closing the
iterator) no new item is handed out; workers still busy finish the item they
hold, so whatever they complete is kept, and every worker is joined before
the error reaches the caller.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import traceback
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from dagster_ds.errors import WorkerDiedError

Item = TypeVar("Item")
Result = TypeVar("Result")


def in_processes(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    *,
    what: Callable[[Item], str],
) -> Generator[Result, None, None]:
    """``function`` over ``items`` in ``workers`` forked processes, results in order.

    Raises:
        WorkerDiedError: A worker process died; ``what(item)`` names its work.
        Exception: What ``function`` raised in a worker, with the worker's
            traceback as a note.
    """
    if not items:
        return
    context = multiprocessing.get_context("fork")
    pool: list[_Worker] = []
    waiting = iter(range(len(items)))
    done: dict[int, Result] = {}
    try:
        for _ in range(max(1, min(workers, len(items)))):
            pool.append(_Worker.fork(context, function, items, pool))
            pool[-1].hand(next(waiting))
        for position in range(len(items)):
            while position not in done:
                for worker in _ready(pool):
                    index, result = worker.collect(lambda index: what(items[index]))
                    done[index] = result
                    worker.hand(next(waiting, None))
            yield done.pop(position)
    finally:
        _drain(pool)


@dataclass(eq=False)
class _Worker:
    """One forked process, the parent's end of its pipe, and the item it computes."""

    process: BaseProcess
    connection: Connection
    busy_with: int | None = None

    @classmethod
    def fork(
        cls,
        context: Any,
        function: Callable[[Any], Any],
        items: Sequence[Any],
        siblings: Sequence[_Worker],
    ) -> _Worker:
        ours, theirs = context.Pipe(duplex=True)
        inherited = [ours, *(sibling.connection for sibling in siblings)]
        process = context.Process(target=_serve, args=(function, items, theirs, inherited))
        process.start()
        theirs.close()
        return cls(process, ours)

    def hand(self, index: int | None) -> None:
        """Give the worker item ``index`` to compute, or tell it to stop (``None``).

        A worker that died cannot be told: its sentinel reports it to `_ready`.
        """
        self.busy_with = index
        with contextlib.suppress(OSError):
            self.connection.send_bytes(pickle.dumps(index))

    def collect(self, what: Callable[[int], str]) -> tuple[int, Any]:
        """The index and result of the item this worker was busy with.

        Raises:
            WorkerDiedError: The worker died before it answered; ``what(index)``
                names what it was computing.
        """
        assert self.busy_with is not None
        index, self.busy_with = self.busy_with, None
        try:
            succeeded, value = pickle.loads(self.connection.recv_bytes())
        except (EOFError, OSError) as error:
            raise WorkerDiedError(
                f"A worker process died while computing {what(index)} (killed, crashed or out of "
                "memory); nothing of its work was cached. Rerun it, with fewer processes "
                "(num_proc=...) if memory is short."
            ) from error
        if not succeeded:
            raise value
        return index, value


def _ready(pool: Sequence[_Worker]) -> list[_Worker]:
    """The busy workers that answered or died, waiting until there is one."""
    busy = [worker for worker in pool if worker.busy_with is not None]
    waiters: dict[Any, _Worker] = {worker.connection: worker for worker in busy}
    waiters |= {worker.process.sentinel: worker for worker in busy}
    return list(dict.fromkeys(waiters[ready] for ready in wait(list(waiters))))


def _drain(pool: Sequence[_Worker]) -> None:
    """Let busy workers finish their item, stop every worker and reap it."""
    for worker in pool:
        if worker.busy_with is not None:
            with contextlib.suppress(EOFError, OSError):
                worker.connection.recv_bytes()
        worker.hand(None)
        worker.process.join()
        worker.connection.close()


def _serve(
    function: Callable[[Any], Any],
    items: Sequence[Any],
    connection: Connection,
    inherited: Sequence[Connection],
) -> None:
    """A worker's loop: compute the items it is handed until it is told to stop.

    It first closes the parent's pipe ends it inherited, so that it sees the
    end of its own pipe (and exits) if the parent dies.
    """
    for parent_end in inherited:
        parent_end.close()
    while (index := pickle.loads(connection.recv_bytes())) is not None:
        try:
            reply = _reply(True, function(items[index]))
        except Exception as error:
            error.add_note("In a worker process:\n" + "".join(traceback.format_exception(error)))
            reply = _reply(False, error)
        connection.send_bytes(reply)


def _reply(succeeded: bool, value: Any) -> bytes:
    """``(succeeded, value)`` pickled, or a `TypeError` saying why it cannot be."""
    try:
        data = pickle.dumps((succeeded, value))
        if not succeeded:
            pickle.loads(data)  # an exception that pickles may still fail to unpickle
    except Exception as error:
        what = "result" if succeeded else f"exception ({type(value).__name__}: {value})"
        return pickle.dumps(
            (
                False,
                TypeError(
                    f"A worker process could not send its {what} back "
                    f"({type(error).__name__}: {error}). Return or raise only values that pickle."
                ),
            )
        )
    return data
