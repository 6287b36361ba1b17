"""push_to_hub: Parquet shards pre-uploaded, then one commit with the card; skipped if unchanged.

The order of a push:

1. check the arguments and the repository id (no request yet);
2. find the repository (create it if missing, only when pushing to ``main``) and
   the head commit of the target branch (a missing revision is an error, and
   nothing was created);
3. read the card at that commit: if every split's recorded fingerprint (and
   ``data_dir``, shard count and files) is the dataset's, stop: no commit;
4. plan each changed split's files and name them by content (`_layout`): a file
   already in the repository under its name is kept, neither written nor
   uploaded; the others are written to temporary files and pre-uploaded (LFS),
   the files of ``num_proc`` jobs in parallel; each is deleted once uploaded.
   A stream's files are named by the bytes written (nothing names a stream
   shard's rows before they are read): each is written and hashed, and
   uploaded only if the split does not have it yet;
5. one ``create_commit`` with the new files, the updated README.md and the
   deletion of the split's files the new version does not use, with
   ``parent_commit`` set to the head read in step 2. If someone committed in
   between, the card and file list are read again and the commit retried with
   the same, already uploaded, files (planned again if it deleted files kept).

So readers see the old dataset or the new one, never a mix, whatever the number
of files; a push killed before step 5 leaves the branch as it was, and the next
push finds its blobs already on the Hub (the LFS batch answers "present"), since
the same data gives byte-identical Parquet files. Appending one file to a dataset
of many (or to a stream of them, or to a selection of them in row order) uploads
one Parquet file, plus README.md.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dagster_ds.errors import HubRequestError, InvalidArgumentError, RevisionNotFoundError
from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep
from dagster_ds.hub._card import CARD_FILE, Card, SplitRecord, records_match
from dagster_ds.hub._client import REPO_TYPE, HubClient, check_repo_id
from dagster_ds.hub._layout import Placement, place, ranked_keys
from dagster_ds.hub._shards import ShardJob, SourceReader, WrittenShard, plan_jobs
from dagster_ds.hub._upload import Uploaded, UploadPlan, rename, write_and_upload
from dagster_ds.progress import progress_bar

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

logger = logging.getLogger("dagster_ds.hub")

_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_COMMIT_ATTEMPTS = 8
_REPLANS = 3


@dataclass(frozen=True)
class PushResult:
    """What `push_to_hub` did: one commit, or nothing because the data was already there.

    Attributes:
        repo_id: The dataset repository (with its namespace).
        config_name: The config pushed.
        splits: The splits pushed (or found unchanged).
        revision: The branch pushed to.
        skipped: True when every split's fingerprint was already recorded on the
            Hub with its files: no commit was made.
        commit_oid: The new commit, or the branch's head when skipped.
        commit_url: The web address of that commit.
        pr_url: The pull request's address with ``create_pr=True``.
        fingerprints: Each split's fingerprint.
        num_rows: Each split's number of rows, where known.
        files: The files the commit uploaded (none when skipped); files already on
            the Hub under their content-named path are kept, not uploaded again.
        unchanged: The splits left as they were (all of them when skipped).

    Example:
        >>> from dagster_ds import Dataset
        >>> from dagster_ds.testing import LocalHubServer
        >>> ds = Dataset.from_dict({"a": [1]})
        >>> with LocalHubServer() as hub:
        ...     result = ds.push_to_hub("user/demo", endpoint=hub.endpoint)
        >>> result.skipped, result.files, len(result.commit_oid)
        (False, ('data/train-0000010000-....parquet',), 40)
    """

    repo_id: str
    config_name: str
    splits: tuple[str, ...]
    revision: str
    skipped: bool
    commit_oid: str
    commit_url: str
    pr_url: str | None = None
    fingerprints: Mapping[str, str] = field(default_factory=lambda: {})
    num_rows: Mapping[str, int] = field(default_factory=lambda: {})
    files: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.skipped:
            return (
                f"{self.repo_id} ({self.config_name}: {', '.join(self.splits)}) unchanged at "
                f"{self.commit_oid[:12]}: no commit"
            )
        return f"{self.repo_id} ({self.config_name}: {', '.join(self.splits)}) -> {self.commit_url}"


@dataclass(frozen=True)
class OutputFile:
    """One Parquet file of a split to push, as planned before writing it.

    Attributes:
        key: Names the file's content (see `dagster_ds.hub._layout.file_key`);
            None: named by the bytes written (`dagster_ds.hub._layout.content_key`).
        num_rows: Its rows, when known before writing (then a file already on
            the Hub is not written again).
        num_bytes: Its rows' Arrow size, when known before writing.
    """

    key: str | None
    num_rows: int | None = None
    num_bytes: int | None = None


@dataclass(frozen=True)
class SplitLayout:
    """A split's output files and how to read them.

    Attributes:
        files: The output files, in row order.
        ranked: They follow the dataset's shards (ranked names), not a cut.
        num_sources: How many source shards ``read`` accepts (`plan_jobs`).
        read: Yields the Arrow tables of one source shard.
    """

    files: tuple[OutputFile, ...]
    ranked: bool
    num_sources: int
    read: SourceReader

    @property
    def named_by_content(self) -> bool:
        """Whether the files are named by the bytes written (no key known before)."""
        return any(planned.key is None for planned in self.files)


@dataclass(frozen=True)
class SplitSource:
    """A split to push; its files are planned (``layout()``) only if it changed.

    Attributes:
        name: The split name.
        fingerprint: The dataset's fingerprint.
        features: Its features.
        lineage: The transforms that made it.
        layout: Plans the output files.
        requested_shards: The ``num_shards`` the caller asked for (None: default).
        workers: At most this many jobs at once (``num_proc``).
        processes: Run the jobs in processes (``read`` must pickle with dill)
            rather than threads.
    """

    name: str
    fingerprint: str
    features: Features
    lineage: tuple[LineageStep, ...]
    layout: Callable[[], SplitLayout]
    requested_shards: int | None = None
    workers: int = 1
    processes: bool = False


@dataclass(frozen=True)
class _SplitPush:
    """A changed split made ready to commit: its files named, the missing ones uploaded."""

    source: SplitSource
    layout: SplitLayout
    placement: Placement
    written: Mapping[int, WrittenShard]
    uploads: Mapping[int, Uploaded]

    @property
    def operations(self) -> list[CommitOperationAdd]:
        return [op for _, op in self.uploads.values() if op is not None]

    def kept_paths(self) -> list[str]:
        return [self.placement.paths[index] for index in sorted(self.placement.kept)]


@dataclass(frozen=True)
class PushTarget:
    """Where and how to push (the arguments common to every split)."""

    repo_id: str
    config_name: str = "default"
    set_default: bool | None = None
    data_dir: str | None = None
    commit_message: str | None = None
    commit_description: str | None = None
    private: bool | None = None
    token: str | None = None
    revision: str | None = None
    create_pr: bool | None = False
    endpoint: str | None = None

    @property
    def directory(self) -> str:
        """The folder of the data files: ``data_dir``, else the config name, else ``data``."""
        if self.data_dir:
            return self.data_dir.strip("/")
        return self.config_name if self.config_name != "default" else "data"


def check_push_arguments(
    target: PushTarget,
    splits: Sequence[str],
    max_shard_size: int | str | None,
    num_shards: Mapping[str, int | None],
) -> None:
    """Raise for arguments that cannot work, before any request is made."""
    check_repo_id(target.repo_id)
    if target.config_name == "data":
        raise InvalidArgumentError(
            "push_to_hub: config_name='data' is reserved (it is the default data folder); "
            "choose another config name."
        )
    for split in splits:
        if not _SPLIT_NAME.match(split):
            raise InvalidArgumentError(
                f"push_to_hub: split name {split!r} must match {_SPLIT_NAME.pattern!r} "
                "(letters, digits, '_', dot-separated); rename the split."
            )
    requested = {name: n for name, n in num_shards.items() if n is not None}
    if max_shard_size is not None and requested:
        raise InvalidArgumentError(
            "push_to_hub: give either max_shard_size or num_shards, not both "
            f"(got max_shard_size={max_shard_size!r}, num_shards={requested!r})."
        )
    bad = {name: n for name, n in requested.items() if not isinstance(n, int) or n < 1}
    if bad:
        raise InvalidArgumentError(f"push_to_hub: num_shards must be positive, got {bad!r}.")


def push_splits(
    target: PushTarget, sources: Sequence[SplitSource], *, replace_splits: bool
) -> PushResult:
    """Push ``sources`` as splits of ``target.config_name`` in one commit (see the module doc).

    With ``replace_splits`` (a `DatasetDict` push) the config's splits become
    exactly these and its data folder holds only their files; otherwise the
    config's other splits are kept.
    """
    client = HubClient(target.endpoint, target.token)
    branch = target.revision or "main"
    names = tuple(source.name for source in sources)
    fingerprints = {source.name: source.fingerprint for source in sources}
    with client.errors("push_to_hub", target.repo_id, target.revision, access="write"):
        repo_id = _ensure_repo(client, target)
        for replan in range(_REPLANS):
            head = client.api.repo_info(repo_id, repo_type=REPO_TYPE, revision=branch).sha or ""
            state = _read_state(client, repo_id, head, target.directory)
            unchanged = tuple(s.name for s in sources if _is_unchanged(state, target, s))
            if len(unchanged) == len(sources):
                return _skipped(client, repo_id, branch, head, state, target, names, fingerprints)
            changed = [source for source in sources if source.name not in unchanged]
            _check_card_update(state, target, changed, replace_splits)
            with tempfile.TemporaryDirectory(prefix="dagster-ds-push-") as folder:
                pushes = [
                    _prepare(client, repo_id, target, source, state, folder) for source in changed
                ]
            try:
                info = _commit(
                    client, repo_id, target, (head, state), pushes, unchanged, replace_splits
                )
                break
            except _KeptFilesGone as gone:
                if replan == _REPLANS - 1:
                    raise HubRequestError(
                        f"push_to_hub: {repo_id!r} kept changing during the push: files it "
                        f"meant to keep, {gone.paths[:3]!r}, were deleted by other commits "
                        f"{_REPLANS} times. Push again when other pushes are done."
                    ) from gone
                logger.info("push_to_hub: %s; planning the push again.", gone)
        else:  # pragma: no cover
            raise AssertionError("unreachable")
    files = tuple(op.path_in_repo for push in pushes for op in push.operations)
    num_rows = {push.source.name: _record(push, state.files).num_examples for push in pushes}
    kept = sum(len(push.placement.kept) for push in pushes)
    logger.info(
        "push_to_hub: %s config %r split(s) %s committed as %s on %s (%d file(s) uploaded, %d "
        "kept%s).",
        repo_id,
        target.config_name,
        list(names),
        info.oid,
        branch,
        len(files),
        kept,
        f"; unchanged: {list(unchanged)}" if unchanged else "",
    )
    return PushResult(
        repo_id=repo_id,
        config_name=target.config_name,
        splits=names,
        revision=branch,
        skipped=False,
        commit_oid=info.oid,
        commit_url=info.commit_url,
        pr_url=info.pr_url,
        fingerprints=fingerprints,
        num_rows=num_rows,
        files=files,
        unchanged=unchanged,
    )


class _KeptFilesGone(Exception):
    """Files the push meant to keep were deleted by a commit that landed first."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(f"{len(paths)} file(s) to keep were deleted meanwhile")
        self.paths = paths


# -- repository and state ---------------------------------------------------------


def _ensure_repo(client: HubClient, target: PushTarget) -> str:
    """The repository's full id; created (private if asked) when missing and pushing to main."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        return client.api.repo_info(target.repo_id, repo_type=REPO_TYPE).id
    except RepositoryNotFoundError as error:
        if target.revision not in (None, "main"):
            raise RevisionNotFoundError(
                f"push_to_hub: the dataset repository {target.repo_id!r} does not exist on "
                f"{client.endpoint}, so neither does revision {target.revision!r}; nothing was "
                "created. Push to main first, or create the repository and the branch."
            ) from error
    url = client.api.create_repo(
        target.repo_id, repo_type=REPO_TYPE, private=target.private, exist_ok=True
    )
    logger.info("push_to_hub: created the dataset repository %s.", url.repo_id)
    return url.repo_id


@dataclass(frozen=True)
class _HubState:
    """The card and the data folder's files (path to size) at one commit."""

    card: Card
    files: Mapping[str, int]
    repo_files: tuple[str, ...]


def _read_state(client: HubClient, repo_id: str, commit: str, data_dir: str) -> _HubState:
    from huggingface_hub import RepoFile

    entries = list(
        client.api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=commit, recursive=True)
    )
    files = {entry.path: entry.size for entry in entries if isinstance(entry, RepoFile)}
    text = None
    if CARD_FILE in files:
        text = client.read_text(repo_id, commit, CARD_FILE)
    in_data_dir = {path: size for path, size in files.items() if path.startswith(f"{data_dir}/")}
    return _HubState(Card.parse(text), in_data_dir, tuple(files))


def _check_card_update(
    state: _HubState, target: PushTarget, changed: Sequence[SplitSource], replace_splits: bool
) -> None:
    """Raise now, before any upload, what updating the card would raise (features, default)."""
    placeholders = [
        SplitRecord(source.name, 0, 0, 0, source.fingerprint, source.lineage) for source in changed
    ]
    state.card.updated(
        config_name=target.config_name,
        data_dir=target.directory,
        features=changed[-1].features,
        splits=placeholders,
        deleted_bytes=0,
        replace_splits=replace_splits,
        set_default=target.set_default,
        repo_files=state.repo_files,
    )


def _split_files(state: _HubState, data_dir: str, split: str) -> list[str]:
    return [path for path in state.files if path.startswith(f"{data_dir}/{split}-")]


def _is_unchanged(state: _HubState, target: PushTarget, source: SplitSource) -> bool:
    """Whether the card records the split's fingerprint with its files all there (no data read)."""
    recorded = state.card.pushed(target.config_name).get(source.name)
    directory = target.directory
    if not records_match(recorded, source.fingerprint, directory, source.requested_shards):
        return False
    assert recorded is not None
    count = int(recorded.get("num_shards") or 0)
    listed = state.card.data_files(target.config_name).get(source.name)
    return (
        count > 0
        and len(_split_files(state, directory, source.name)) == count
        and listed == [f"{directory}/{source.name}-*"]
    )


def _skipped(
    client: HubClient,
    repo_id: str,
    branch: str,
    head: str,
    state: _HubState,
    target: PushTarget,
    names: tuple[str, ...],
    fingerprints: Mapping[str, str],
) -> PushResult:
    info = state.card.infos().get(target.config_name, {})
    rows = {
        str(entry.get("name")): int(entry.get("num_examples") or 0)
        for entry in info.get("splits") or []
        if isinstance(entry, dict) and entry.get("name") in names
    }
    logger.info(
        "push_to_hub: %s config %r split(s) %s unchanged (fingerprint(s) %s already on %s at "
        "%s): no commit.",
        repo_id,
        target.config_name,
        list(names),
        sorted(set(fingerprints.values())),
        branch,
        head,
    )
    return PushResult(
        repo_id=repo_id,
        config_name=target.config_name,
        splits=names,
        revision=branch,
        skipped=True,
        commit_oid=head,
        commit_url=f"{client.url(repo_id)}/commit/{head}",
        fingerprints=fingerprints,
        num_rows=rows,
        unchanged=names,
    )


# -- shards -------------------------------------------------------------------------


def _prepare(
    client: HubClient,
    repo_id: str,
    target: PushTarget,
    source: SplitSource,
    state: _HubState,
    folder: str,
) -> _SplitPush:
    """Plan and name the split's files; write and pre-upload those not on the Hub yet."""
    layout = source.layout()
    directory = target.directory
    plan = UploadPlan(
        repo_id=repo_id,
        endpoint=client.endpoint,
        token=target.token,
        revision=target.revision,
        create_pr=target.create_pr,
        paths=(),
        schema=source.features.arrow_schema,
        folder=tempfile.mkdtemp(prefix=f"{source.name}-", dir=folder),
        read=layout.read,
    )
    jobs = plan_jobs(layout.num_sources, len(layout.files))
    if layout.named_by_content:
        return _prepare_by_content(client, source, state, directory, layout, plan, jobs)
    keys = [planned.key or "" for planned in layout.files]
    placement = place(state.files, directory, source.name, keys, ranked=layout.ranked)
    plan = dataclasses.replace(plan, paths=placement.paths)
    jobs = [
        job
        for job in jobs
        if not all(
            index in placement.kept and layout.files[index].num_rows is not None
            for index in job.outputs
        )
    ]
    written = _write(client, source, plan, jobs)
    uploads = {index: pair for index, pair in written.items() if index not in placement.kept}
    return _SplitPush(source, layout, placement, _shards_of(written), uploads)


def _prepare_by_content(
    client: HubClient,
    source: SplitSource,
    state: _HubState,
    directory: str,
    layout: SplitLayout,
    plan: UploadPlan,
    jobs: list[ShardJob],
) -> _SplitPush:
    """Write every file, name it by its bytes, and upload those the split does not have yet.

    A file whose key the split has, but out of order (the stream's shards were
    reordered), gets a new rank: it is written again and uploaded under it.
    """
    provisional = tuple(
        f"{directory}/{source.name}-pending-{index:05d}.parquet"
        for index in range(len(layout.files))
    )
    present = ranked_keys(state.files, directory, source.name)
    plan = dataclasses.replace(plan, paths=provisional, present_keys=present)
    written = _write(client, source, plan, jobs)
    keys = [written[index][0].key or "" for index in range(len(layout.files))]
    placement = place(state.files, directory, source.name, keys, ranked=True)
    moved = {index for index, (_, op) in written.items() if op is None} - placement.kept
    if moved:
        again = [job for job in jobs if moved.intersection(job.outputs)]
        final = dataclasses.replace(plan, paths=placement.paths, present_keys=None)
        written.update(_write(client, source, final, again))
    for index, (_, op) in written.items():
        if op is not None:
            rename(op, placement.paths[index])
    uploads = {index: pair for index, pair in written.items() if index not in placement.kept}
    return _SplitPush(source, layout, placement, _shards_of(written), uploads)


def _write(
    client: HubClient, source: SplitSource, plan: UploadPlan, jobs: Sequence[ShardJob]
) -> dict[int, Uploaded]:
    """Run ``jobs``: each output shard written, and uploaded unless already on the Hub."""
    total = sum(len(job.outputs) for job in jobs)
    with progress_bar(total, f"Pushing {source.name}", unit=" shards") as bar:
        uploaded = write_and_upload(
            plan,
            jobs,
            source.workers,
            processes=source.processes,
            client=client,
            on_progress=bar.update,
        )
    return {shard.index: (shard, op) for shard, op in uploaded}


def _shards_of(written: Mapping[int, Uploaded]) -> dict[int, WrittenShard]:
    return {index: shard for index, (shard, _) in written.items()}


# -- the commit ----------------------------------------------------------------------


def _commit(
    client: HubClient,
    repo_id: str,
    target: PushTarget,
    start: tuple[str, _HubState],
    pushes: Sequence[_SplitPush],
    unchanged: Sequence[str],
    replace_splits: bool,
) -> Any:
    """One commit of every upload, the card and the deletions; retried if the branch moved.

    Raises:
        _KeptFilesGone: a commit that landed first deleted files this one keeps.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    branch = target.revision or "main"
    directory = target.directory
    changed = [push.source for push in pushes]
    new_paths = {path for push in pushes for path in push.placement.paths}
    head, state = start
    for attempt in _attempts():
        gone = [path for push in pushes for path in push.kept_paths() if path not in state.files]
        if gone:
            raise _KeptFilesGone(gone)
        records = [_record(push, state.files) for push in pushes]
        if replace_splits:
            kept = [path for name in unchanged for path in _split_files(state, directory, name)]
            records += [_carried(state, target.config_name, directory, name) for name in unchanged]
            depth = directory.count("/") + 1
            stale = [
                path
                for path in state.files
                if path.count("/") == depth and path not in new_paths and path not in kept
            ]
        else:
            stale = [
                path
                for source in changed
                for path in _split_files(state, directory, source.name)
                if path not in new_paths
            ]
        card = state.card.updated(
            config_name=target.config_name,
            data_dir=directory,
            features=changed[-1].features,
            splits=records,
            deleted_bytes=sum(state.files[path] for path in stale),
            replace_splits=replace_splits,
            set_default=target.set_default,
            repo_files=state.repo_files,
        )
        operations = [
            *(op for push in pushes for op in push.operations),
            CommitOperationAdd(CARD_FILE, card.render().encode("utf-8")),
            *(CommitOperationDelete(path) for path in stale),
        ]
        try:
            return client.api.create_commit(
                repo_id,
                operations=operations,
                commit_message=target.commit_message or "Upload dataset",
                commit_description=target.commit_description
                or default_description(target.config_name, changed, unchanged),
                repo_type=REPO_TYPE,
                revision=target.revision,
                create_pr=target.create_pr,
                parent_commit=head,
            )
        except Exception as error:
            if not _branch_moved(error) or attempt == _COMMIT_ATTEMPTS - 1:
                raise
            logger.info(
                "push_to_hub: %s moved since %s; retrying the commit (%d/%d).",
                branch,
                head,
                attempt + 1,
                _COMMIT_ATTEMPTS,
            )
            head = client.api.repo_info(repo_id, repo_type=REPO_TYPE, revision=branch).sha or ""
            state = _read_state(client, repo_id, head, directory)
    raise AssertionError("unreachable")  # pragma: no cover


def default_description(
    config_name: str, changed: Sequence[SplitSource], unchanged: Sequence[str]
) -> str:
    """What a commit without a description says: each split pushed and its fingerprint."""
    lines = [
        f"- config `{config_name}`, split `{source.name}`: fingerprint {source.fingerprint}"
        for source in changed
    ]
    if unchanged:
        lines.append(f"Unchanged: {', '.join(unchanged)}.")
    return "\n".join(lines)


def _attempts() -> Iterator[int]:
    for attempt in range(_COMMIT_ATTEMPTS):
        if attempt:
            time.sleep(min(0.2 * 2**attempt, 5.0) * (1 + random.random()))
        yield attempt


def _branch_moved(error: Exception) -> bool:
    """Whether the commit failed because another commit landed first (HTTP 412 or 409)."""
    for candidate in (error, error.__context__, error.__cause__):
        response = getattr(candidate, "response", None)
        if getattr(response, "status_code", None) in (409, 412):
            return True
    return False


def _record(push: _SplitPush, sizes: Mapping[str, int]) -> SplitRecord:
    """The split's card record: rows and Arrow bytes as planned (or written), files' sizes."""
    num_rows = num_bytes = uploaded = 0
    for index, planned in enumerate(push.layout.files):
        written = push.written.get(index)
        if written is None:  # kept, not written: planned sizes are known
            assert planned.num_rows is not None
            num_rows += planned.num_rows
            num_bytes += planned.num_bytes or 0
            uploaded += sizes[push.placement.paths[index]]
            continue
        num_rows += planned.num_rows if planned.num_rows is not None else written.num_rows
        num_bytes += planned.num_bytes if planned.num_bytes is not None else written.num_bytes
        uploaded += written.size
    return SplitRecord(
        name=push.source.name,
        num_examples=num_rows,
        num_bytes=num_bytes,
        uploaded_bytes=uploaded,
        fingerprint=push.source.fingerprint,
        lineage=push.source.lineage,
        num_shards=len(push.layout.files),
    )


def _carried(state: _HubState, config_name: str, directory: str, split: str) -> SplitRecord:
    """The record of a split whose data is unchanged, rebuilt from the card."""
    recorded = state.card.pushed(config_name)[split]
    info = state.card.infos().get(config_name, {})
    entry = next(
        (e for e in info.get("splits") or [] if isinstance(e, dict) and e.get("name") == split),
        {},
    )
    return SplitRecord(
        name=split,
        num_examples=int(entry.get("num_examples") or 0),
        num_bytes=int(entry.get("num_bytes") or 0),
        uploaded_bytes=sum(state.files[path] for path in _split_files(state, directory, split)),
        fingerprint=str(recorded["fingerprint"]),
        lineage=tuple(LineageStep.from_dict(step) for step in recorded.get("lineage") or []),
        num_shards=int(recorded.get("num_shards") or 1),
    )
