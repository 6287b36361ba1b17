"""Writing a split's shards and pre-uploading them: in threads, or in processes for streams.

The jobs (`plan_jobs`) are cut into ``workers`` contiguous chunks, run in
parallel. A chunk writes its shards one by one to temporary files and
pre-uploads them in groups (fewer requests for many small shards; at most
`GROUP_BYTES` on disk per chunk), deleting each file once it is on the Hub.

Map-style datasets use threads: reading Arrow slices, Parquet encoding and
uploads release the GIL, and nothing is copied to another process. Streaming
datasets whose pipeline runs Python functions use processes (``spawn``, as the
anchor does): the dataset and its functions travel with dill, and the token in
the pickled task only, never in an argument list or the environment. With a
`DaskExecutor` current, those chunks are tasks on its cluster instead (each
worker writes its temporary files to a folder of its own); the commit stays
with the caller.

Files named by their content (``present_keys`` set: a stream's shards) are
hashed once written; one whose key the split already has on the Hub is
deleted there and then, not uploaded. The others are pre-uploaded under a
provisional path and `rename`-d once every key, hence every name, is known.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dill
import pyarrow as pa

from dagster_ds.hub._client import REPO_TYPE, HubClient
from dagster_ds.hub._layout import content_key
from dagster_ds.hub._shards import ShardJob, SourceReader, WrittenShard, split_evenly, write_job
from dagster_ds.parallel import Sealed, remote_executor, run_sealed

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

#: A written shard and its pre-uploaded file (None: not uploaded, already on the Hub).
Uploaded = tuple[WrittenShard, "CommitOperationAdd | None"]

GROUP_BYTES = 256 << 20
GROUP_FILES = 32


@dataclass(frozen=True)
class UploadPlan:
    """Everything a worker needs to write and pre-upload shards of one split.

    Attributes:
        repo_id: The repository.
        endpoint: The Hub endpoint.
        token: The token (never shown by ``repr``).
        revision: The branch the commit will go to (None: main).
        create_pr: Whether the commit will open a pull request.
        paths: The path in the repository of each output shard.
        schema: The shards' Arrow schema (with the features in its metadata).
        folder: Where temporary files go.
        read: Yields the Arrow tables of one source shard.
        present_keys: When set, the files are named by their content
            (`content_key`), ``paths`` are provisional, and a file whose key is
            in this set is already on the Hub: it is not uploaded.
    """

    repo_id: str
    endpoint: str
    token: str | None = field(repr=False)
    revision: str | None
    create_pr: bool | None
    paths: Sequence[str]
    schema: pa.Schema
    folder: str
    read: SourceReader
    present_keys: frozenset[str] | None = None


def write_and_upload(
    plan: UploadPlan,
    jobs: Sequence[ShardJob],
    workers: int,
    *,
    processes: bool,
    client: HubClient,
    on_progress: Callable[[int], object],
) -> list[Uploaded]:
    """Write and pre-upload the shards of ``jobs``; return them in output order."""
    workers = max(1, min(workers, len(jobs)))
    chunks = [jobs[slice(*split_evenly(len(jobs), workers, w))] for w in range(workers)]
    if workers == 1:
        results = [upload_chunk(plan, chunks[0], client, on_progress)]
    elif processes and (executor := remote_executor()) is not None:
        calls = [Sealed.of(_describe_chunk(plan, chunk), _chunk, (plan, chunk)) for chunk in chunks]
        results = executor.run_calls(
            run_sealed,
            calls,
            what=lambda call: call.label,
            on_done=lambda done: on_progress(len(done)),
        )
    elif processes:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            payloads = [dill.dumps((plan, chunk), recurse=True) for chunk in chunks]
            results = _gather(pool, _chunk_in_process, payloads, on_progress)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = _gather(
                pool, lambda chunk: upload_chunk(plan, chunk, client, on_progress), chunks, None
            )
    return sorted((pair for pairs in results for pair in pairs), key=lambda pair: pair[0].index)


def _gather(
    pool: Executor,
    function: Callable[[Any], list[Uploaded]],
    items: Sequence[Any],
    on_progress: Callable[[int], object] | None,
) -> list[list[Uploaded]]:
    futures = [pool.submit(function, item) for item in items]
    try:
        for future in as_completed(futures):
            done = future.result()
            if on_progress is not None:
                on_progress(len(done))
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _chunk_in_process(payload: bytes) -> list[Uploaded]:
    """A chunk in a worker process; Hub errors come back as our (picklable) errors."""
    plan, chunk = dill.loads(payload)
    client = HubClient(plan.endpoint, plan.token)
    with client.errors("push_to_hub", plan.repo_id, plan.revision, access="write"):
        return upload_chunk(plan, chunk, client, None)


def _describe_chunk(plan: UploadPlan, chunk: Sequence[ShardJob]) -> str:
    outputs = [index for job in chunk for index in job.outputs]
    return f"the shards {plan.paths[outputs[0]]!r} to {plan.paths[outputs[-1]]!r}"


def _chunk(work: tuple[UploadPlan, Sequence[ShardJob]]) -> list[Uploaded]:
    """A chunk on a cluster worker, whose temporary files go to a folder of its own machine."""
    plan, chunk = work
    with tempfile.TemporaryDirectory(prefix="dagster_ds-push-") as folder:
        here = dataclasses.replace(plan, folder=folder)
        client = HubClient(plan.endpoint, plan.token)
        with client.errors("push_to_hub", plan.repo_id, plan.revision, access="write"):
            return upload_chunk(here, chunk, client, None)


def upload_chunk(
    plan: UploadPlan,
    chunk: Sequence[ShardJob],
    client: HubClient,
    on_progress: Callable[[int], object] | None,
) -> list[Uploaded]:
    """Write ``chunk``'s shards one by one and pre-upload them in groups."""
    done: list[Uploaded] = []
    pending: list[WrittenShard] = []
    try:
        for job in chunk:
            written = write_job(
                job,
                plan.read,
                plan.schema,
                plan.folder,
                file_name=lambda i: posixpath.basename(plan.paths[i]),
            )
            if plan.present_keys is not None:
                written = [_keyed(shard, plan.present_keys, done) for shard in written]
            new = [shard for shard in written if shard.key not in (plan.present_keys or ())]
            if on_progress is not None and len(new) < len(written):
                on_progress(len(written) - len(new))  # already on the Hub: done
            pending += new
            if sum(s.size for s in pending) >= GROUP_BYTES or len(pending) >= GROUP_FILES:
                done += _upload(plan, pending, client)
                if on_progress is not None:
                    on_progress(len(pending))
                pending = []
        if pending:
            done += _upload(plan, pending, client)
            if on_progress is not None:
                on_progress(len(pending))
            pending = []
    finally:
        for shard in pending:
            if os.path.exists(shard.path):
                os.remove(shard.path)
    return done


def _keyed(shard: WrittenShard, present: frozenset[str], done: list[Uploaded]) -> WrittenShard:
    """``shard`` with its content key; deleted and added to ``done`` if the Hub has the key."""
    keyed = dataclasses.replace(shard, key=content_key(shard.path))
    if keyed.key in present:
        os.remove(keyed.path)
        done.append((keyed, None))
    return keyed


def rename(operation: CommitOperationAdd, path_in_repo: str) -> None:
    """Commit a pre-uploaded file under ``path_in_repo`` instead of its provisional path.

    A pre-upload is addressed by content (its sha256), so the path it was sent
    with does not bind it; the operation cannot be rebuilt, its file being gone.
    """
    operation.path_in_repo = path_in_repo


def _upload(plan: UploadPlan, written: list[WrittenShard], client: HubClient) -> list[Uploaded]:
    from huggingface_hub import CommitOperationAdd

    try:
        ops = [CommitOperationAdd(plan.paths[shard.index], shard.path) for shard in written]
        client.api.preupload_lfs_files(
            plan.repo_id,
            additions=ops,
            repo_type=REPO_TYPE,
            revision=plan.revision,
            create_pr=plan.create_pr,
        )
        for op, shard in zip(ops, written, strict=True):
            if not getattr(op, "_is_uploaded", False):  # a regular (non-LFS) file
                op.path_or_fileobj = Path(shard.path).read_bytes()
    finally:
        for shard in written:
            if os.path.exists(shard.path):
                os.remove(shard.path)
    return list(zip(written, ops, strict=True))
