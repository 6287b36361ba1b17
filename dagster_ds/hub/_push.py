"""push_to_hub: Parquet shards pre-uploaded, then one commit with the card; skipped if unchanged.

The order of a push:

1. check the arguments and the repository id (no request yet);
2. find the repository (create it if missing, only when pushing to ``main``) and
   the head commit of the target branch (a missing revision is an error, and
   nothing was created);
3. read the card at that commit: if every split's recorded fingerprint (and
   ``data_dir``, shard count and files) is the dataset's, stop: no commit;
4. write each output shard to a temporary file and pre-upload it (LFS), the
   shards of ``num_proc`` jobs in parallel; each file is deleted once uploaded;
5. one ``create_commit`` with the new shards, the updated README.md and the
   deletion of the split's old shards, with ``parent_commit`` set to the head
   read in step 2. If someone committed in between, the card and file list are
   read again and the commit retried with the same, already uploaded, shards.

So readers see the old dataset or the new one, never a mix, whatever the number
of files; a push killed before step 5 leaves the branch as it was, and the next
push finds its blobs already on the Hub (the LFS batch answers "present"), since
the same data gives byte-identical Parquet files.
"""

from __future__ import annotations

import logging
import random
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dagster_ds.errors import InvalidArgumentError, RevisionNotFoundError
from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep
from dagster_ds.hub._card import CARD_FILE, Card, SplitRecord, records_match
from dagster_ds.hub._client import REPO_TYPE, HubClient, check_repo_id
from dagster_ds.hub._shards import SourceReader, plan_jobs
from dagster_ds.hub._upload import Uploaded, UploadPlan, write_and_upload
from dagster_ds.progress import progress_bar

if TYPE_CHECKING:
    pass

logger = logging.getLogger("dagster_ds.hub")

_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_COMMIT_ATTEMPTS = 8


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
        files: The files the commit added (none when skipped).
        unchanged: The splits left as they were (all of them when skipped).

    Example:
        >>> from dagster_ds import Dataset
        >>> from dagster_ds.testing import LocalHubServer
        >>> ds = Dataset.from_dict({"a": [1]})
        >>> with LocalHubServer() as hub:
        ...     result = ds.push_to_hub("user/demo", endpoint=hub.endpoint)
        >>> result.skipped, result.files, len(result.commit_oid)
        (False, ('data/train-00000-of-00001.parquet',), 40)
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
class SplitSource:
    """A split to push, read as ``num_sources`` source shards by ``read(i)``.

    Attributes:
        name: The split name.
        fingerprint: The dataset's fingerprint.
        features: Its features.
        lineage: The transforms that made it.
        num_sources: How many source shards ``read`` accepts.
        read: Yields the Arrow tables of one source shard.
        num_shards: How many output files to write.
        requested_shards: The ``num_shards`` the caller asked for (None: default).
        workers: At most this many jobs at once (``num_proc``).
        processes: Run the jobs in processes (``read`` must pickle with dill)
            rather than threads.
    """

    name: str
    fingerprint: str
    features: Features
    lineage: tuple[LineageStep, ...]
    num_sources: int
    read: SourceReader
    num_shards: int
    requested_shards: int | None = None
    workers: int = 1
    processes: bool = False


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
    with client.errors("push_to_hub", target.repo_id, target.revision, access="write"):
        repo_id = _ensure_repo(client, target)
        head = client.api.repo_info(repo_id, repo_type=REPO_TYPE, revision=branch).sha or ""
        state = _read_state(client, repo_id, head, target.directory)
        unchanged = tuple(source.name for source in sources if _is_unchanged(state, target, source))
        fingerprints = {source.name: source.fingerprint for source in sources}
        if len(unchanged) == len(sources):
            return _skipped(client, repo_id, branch, head, state, target, names, fingerprints)
        changed = [source for source in sources if source.name not in unchanged]
        _check_card_update(state, target, changed, replace_splits)
        with tempfile.TemporaryDirectory(prefix="dagster-ds-push-") as folder:
            uploads = {
                source.name: _write_and_upload(client, repo_id, target, source, folder)
                for source in changed
            }
        info = _commit(
            client, repo_id, target, (head, state), changed, uploads, unchanged, replace_splits
        )
    files = tuple(op.path_in_repo for ops in uploads.values() for _, op in ops)
    num_rows = {name: sum(shard.num_rows for shard, _ in ops) for name, ops in uploads.items()}
    logger.info(
        "push_to_hub: %s config %r split(s) %s committed as %s on %s (%d file(s)%s).",
        repo_id,
        target.config_name,
        list(names),
        info.oid,
        branch,
        len(files),
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


def _shard_paths(data_dir: str, split: str, num_shards: int) -> list[str]:
    return [f"{data_dir}/{split}-{i:05d}-of-{num_shards:05d}.parquet" for i in range(num_shards)]


def _split_files(state: _HubState, data_dir: str, split: str) -> list[str]:
    return [path for path in state.files if path.startswith(f"{data_dir}/{split}-")]


def _is_unchanged(state: _HubState, target: PushTarget, source: SplitSource) -> bool:
    recorded = state.card.pushed(target.config_name).get(source.name)
    directory = target.directory
    if not records_match(recorded, source.fingerprint, directory, source.requested_shards):
        return False
    assert recorded is not None
    expected = _shard_paths(directory, source.name, int(recorded.get("num_shards") or 0))
    listed = state.card.data_files(target.config_name).get(source.name)
    return (
        bool(expected)
        and all(path in state.files for path in expected)
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


def _write_and_upload(
    client: HubClient, repo_id: str, target: PushTarget, source: SplitSource, folder: str
) -> list[Uploaded]:
    """Write the split's shards and pre-upload them; the local files are gone on return."""
    plan = UploadPlan(
        repo_id=repo_id,
        endpoint=client.endpoint,
        token=target.token,
        revision=target.revision,
        create_pr=target.create_pr,
        paths=_shard_paths(target.directory, source.name, source.num_shards),
        schema=source.features.arrow_schema,
        folder=tempfile.mkdtemp(prefix=f"{source.name}-", dir=folder),
        read=source.read,
    )
    jobs = plan_jobs(source.num_sources, source.num_shards)
    with progress_bar(source.num_shards, f"Pushing {source.name}", unit=" shards") as bar:
        return write_and_upload(
            plan,
            jobs,
            source.workers,
            processes=source.processes,
            client=client,
            on_progress=bar.update,
        )


# -- the commit ----------------------------------------------------------------------


def _commit(
    client: HubClient,
    repo_id: str,
    target: PushTarget,
    start: tuple[str, _HubState],
    changed: Sequence[SplitSource],
    uploads: Mapping[str, list[Uploaded]],
    unchanged: Sequence[str],
    replace_splits: bool,
) -> Any:
    """One commit of every upload, the card and the deletions; retried if the branch moved."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    branch = target.revision or "main"
    directory = target.directory
    new_paths = {op.path_in_repo for ops in uploads.values() for _, op in ops}
    head, state = start
    for attempt in _attempts():
        records = [_record(source, uploads[source.name]) for source in changed]
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
            *(op for ops in uploads.values() for _, op in ops),
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


def _record(source: SplitSource, uploaded: Sequence[Uploaded]) -> SplitRecord:
    return SplitRecord(
        name=source.name,
        num_examples=sum(shard.num_rows for shard, _ in uploaded),
        num_bytes=sum(shard.num_bytes for shard, _ in uploaded),
        uploaded_bytes=sum(shard.size for shard, _ in uploaded),
        fingerprint=source.fingerprint,
        lineage=source.lineage,
        num_shards=source.num_shards,
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
