"""The LFS side of uploads: batch answers, single-part and multipart uploads, verification.

The batch endpoint answers, per object, either nothing (this repository already
holds that content) or an ``upload`` action whose ``href`` names an upload
session, plus a ``verify`` action. Objects above the multipart threshold get a
``chunk_size`` and one URL per part, like S3 presigned part URLs; the client then
POSTs the parts' ETags to the ``href``.

The session id in those URLs is random (128 bits) and acts as the presigned
URL's signature: upload URLs carry no Authorization header, as on the real Hub.
A session belongs to one repository and one token (kept as a hash, never the
token), expires after ``upload_session_ttl`` and counts towards that token's
``max_upload_sessions``. Content already stored for *another* repository is not
reused: the client uploads it again (it is stored once), so a batch request never
reveals what other repositories hold.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubEntryNotFoundError,
    HubPayloadTooLargeError,
    HubTooManyRequestsError,
)
from dagster_ds.hub.server._objects import SHA256, RepoId
from dagster_ds.hub.server._settings import HubSettings, MiB
from dagster_ds.hub.server._store import HubStore

_SESSION_ID_LENGTH = 32


def token_owner(token: str | None) -> str:
    """A stable, non-reversible name for the holder of ``token`` (never the token itself)."""
    return hashlib.sha256(f"dagster-ds-hub:{token}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class UploadSession:
    id: str
    oid: str
    size: int
    chunk_size: int | None
    folder: Path
    repo: RepoId
    owner: str
    created: float

    @property
    def parts(self) -> int:
        return max(1, math.ceil(self.size / self.chunk_size)) if self.chunk_size else 1

    def part_limit(self, part: int) -> int:
        """How many bytes part ``part`` (1-based) holds."""
        assert self.chunk_size is not None
        return min(self.chunk_size, self.size - (part - 1) * self.chunk_size)


class LfsUploads:
    """Upload sessions in ``uploads/`` and their completion into the blob store."""

    def __init__(self, store: HubStore, settings: HubSettings) -> None:
        if settings.multipart_chunk_size <= 0 or settings.multipart_threshold < 0:
            raise ValueError(
                "LFS multipart settings must be positive, got"
                f" threshold={settings.multipart_threshold!r}"
                f" chunk_size={settings.multipart_chunk_size!r}."
            )
        self.store = store
        self.settings = settings
        self._lock = threading.Lock()
        self._by_owner: dict[str, dict[str, float]] = {}
        self.sweep()

    # ------------------------------------------------------------------ batch

    def batch(
        self, payload: Mapping[str, Any], base_url: str, repo: RepoId, owner: str
    ) -> dict[str, Any]:
        """The answer to ``POST <repo>.git/info/lfs/objects/batch`` (upload operation)."""
        operation = payload.get("operation")
        objects = payload.get("objects")
        if operation != "upload" or not isinstance(objects, list):
            raise HubBadRequestError(
                "LFS batch request needs operation 'upload' and a list of objects, got"
                f" operation={operation!r:.50}; downloads go through the resolve URLs."
            )
        if len(objects) > self.settings.max_lfs_objects_per_batch:
            raise HubPayloadTooLargeError(
                f"LFS batch request lists {len(objects)} objects; at most"
                f" {self.settings.max_lfs_objects_per_batch} per request are accepted."
            )
        transfers = payload.get("transfers") or ["basic"]
        if not isinstance(transfers, list):
            raise HubBadRequestError(
                "LFS batch 'transfers' must be a list like ['basic', 'multipart'], got"
                f" {transfers!r:.80}."
            )
        allow_multipart = "multipart" in transfers
        answers: list[dict[str, Any]] = []
        used_multipart = False
        parts_left = self.settings.max_lfs_parts
        for obj in objects:
            answer, parts = self._answer(obj, base_url, repo, owner, allow_multipart, parts_left)
            parts_left -= parts
            used_multipart |= "chunk_size" in answer.get("actions", {}).get("upload", {}).get(
                "header", {}
            )
            answers.append(answer)
        return {"transfer": "multipart" if used_multipart else "basic", "objects": answers}

    def _answer(
        self,
        obj: Any,
        base_url: str,
        repo: RepoId,
        owner: str,
        allow_multipart: bool,
        parts_left: int,
    ) -> tuple[dict[str, Any], int]:
        oid = obj.get("oid") if isinstance(obj, dict) else None
        size = obj.get("size") if isinstance(obj, dict) else None
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or size < 0
            or not isinstance(oid, str)
            or not SHA256.match(oid)
        ):
            message = "oid must be a sha256 hex digest, size a non-negative int"
            return {"oid": str(oid)[:100], "size": 0, "error": {"code": 422, "message": message}}, 0
        if size > self.settings.max_lfs_file_size:
            message = f"file is larger than this Hub accepts ({self.settings.max_lfs_file_size} B)"
            return {"oid": oid, "size": size, "error": {"code": 422, "message": message}}, 0
        if self.store.has_blob(oid, size) and self.store.repo_has_object(repo, oid):
            return {"oid": oid, "size": size}, 0
        chunk_size = None
        if allow_multipart and size > self.settings.multipart_threshold:
            chunk_size = self.settings.multipart_chunk_size
            if math.ceil(size / chunk_size) > self.settings.max_lfs_parts:
                chunk_size = math.ceil(size / self.settings.max_lfs_parts / MiB) * MiB
        parts = max(1, math.ceil(size / chunk_size)) if chunk_size else 1
        if parts > parts_left:
            message = "too many upload parts in one batch request: send fewer objects at once"
            return {"oid": oid, "size": size, "error": {"code": 422, "message": message}}, 0
        session = self._start(oid, size, chunk_size, repo, owner)
        href = f"{base_url}/lfs-uploads/{session.id}"
        upload: dict[str, Any] = {"href": href}
        if chunk_size is not None:
            header = {str(n): f"{href}/{n}" for n in range(1, parts + 1)}
            upload["header"] = {"chunk_size": str(chunk_size), **header}
        verify = f"{base_url}/lfs-verify/{repo.type}/{repo.namespace}/{repo.name}"
        answer = {
            "oid": oid,
            "size": size,
            "authenticated": True,
            "actions": {"upload": upload, "verify": {"href": verify}},
        }
        return answer, parts

    # --------------------------------------------------------------- sessions

    def _start(
        self, oid: str, size: int, chunk_size: int | None, repo: RepoId, owner: str
    ) -> UploadSession:
        now = time.time()
        with self._lock:
            mine = self._by_owner.setdefault(owner, {})
            for session_id, created in list(mine.items()):
                if created + self.settings.upload_session_ttl < now:
                    del mine[session_id]
            if len(mine) >= self.settings.max_upload_sessions:
                raise HubTooManyRequestsError(
                    f"This token has {len(mine)} LFS uploads in flight, the most this Hub"
                    " allows: finish or abandon them (they expire after"
                    f" {self.settings.upload_session_ttl:.0f} s) before starting more."
                )
            session_id = uuid.uuid4().hex
            mine[session_id] = now
        folder = self.store.uploads_dir / session_id
        folder.mkdir(parents=True)
        meta = {
            "oid": oid,
            "size": size,
            "chunk_size": chunk_size,
            "repo": [repo.type, repo.namespace, repo.name],
            "owner": owner,
            "created": now,
        }
        (folder / "session.json").write_text(json.dumps(meta))
        return UploadSession(session_id, oid, size, chunk_size, folder, repo, owner, now)

    def session(self, session_id: str) -> UploadSession:
        """The live session ``session_id``; expired or unknown ones are a 404."""
        folder = self.store.uploads_dir / session_id
        try:
            if len(session_id) != _SESSION_ID_LENGTH or not session_id.isalnum():
                raise FileNotFoundError(session_id)
            meta = json.loads((folder / "session.json").read_text())
            repo = RepoId(*meta["repo"])
            created = float(meta["created"])
            if created + self.settings.upload_session_ttl < time.time():
                self._finish(session_id, meta["owner"], folder)
                raise FileNotFoundError(session_id)
        except (FileNotFoundError, KeyError, TypeError, ValueError) as e:
            raise HubEntryNotFoundError(
                "No LFS upload session with that id (finished, expired or never started):"
                " ask the LFS batch endpoint for new upload URLs."
            ) from e
        return UploadSession(
            session_id,
            meta["oid"],
            meta["size"],
            meta["chunk_size"],
            folder,
            repo,
            meta["owner"],
            created,
        )

    def _finish(self, session_id: str, owner: str, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        with self._lock:
            self._by_owner.get(owner, {}).pop(session_id, None)

    def sweep(self) -> None:
        """Drop expired sessions and rebuild the per-token counts from ``uploads/``."""
        now = time.time()
        counts: dict[str, dict[str, float]] = {}
        for folder in self.store.uploads_dir.iterdir():
            try:
                meta = json.loads((folder / "session.json").read_text())
                created, owner = float(meta["created"]), str(meta["owner"])
            except (OSError, ValueError, KeyError, TypeError):
                # A session of an older version or cut by a crash: drop it once it is idle.
                if _idle_for(folder) > self.settings.stale_after:
                    shutil.rmtree(folder, ignore_errors=True)
                continue
            if created + self.settings.upload_session_ttl < now:
                shutil.rmtree(folder, ignore_errors=True)
                continue
            counts.setdefault(owner, {})[folder.name] = created
        with self._lock:
            self._by_owner = counts

    # ---------------------------------------------------------------- uploads

    def part_file(self, session: UploadSession, part: int) -> tuple[Path, int]:
        """A temporary path to receive part ``part`` into, and the part's exact size."""
        if session.chunk_size is None:
            raise HubBadRequestError(
                "This LFS upload is single-part: PUT the whole file to the upload href."
            )
        if not 1 <= part <= session.parts:
            raise HubBadRequestError(
                f"Part number {part!r} is out of range: this upload has parts 1..{session.parts}."
            )
        return self.store.new_temp_path(), session.part_limit(part)

    def finish_part(self, session: UploadSession, part: int, tmp: Path) -> str:
        """Publish an uploaded part and return its ETag (md5, as S3 does)."""
        md5 = hashlib.md5(usedforsecurity=False)
        with open(tmp, "rb") as f:
            while chunk := f.read(1 << 20):
                md5.update(chunk)
        tmp.replace(session.folder / f"part-{part:05d}")
        return md5.hexdigest()

    def complete_single(self, session: UploadSession, tmp: Path) -> None:
        """Check the whole uploaded file against the session's oid and size, then store it."""
        self._adopt(session, tmp)

    def complete_multipart(self, session: UploadSession, payload: Mapping[str, Any]) -> None:
        """Join the parts listed in the completion payload and store the result."""
        if session.chunk_size is None:
            raise HubBadRequestError(
                "This LFS upload is single-part: PUT the file to the href instead of POSTing parts."
            )
        expected = session.parts
        parts = payload.get("parts")
        if payload.get("oid") != session.oid or not isinstance(parts, list):
            raise HubBadRequestError(
                f"Multipart completion needs oid {session.oid!r} and a list of parts, got"
                f" oid={payload.get('oid')!r:.100}."
            )
        numbers = [p.get("partNumber") for p in parts if isinstance(p, dict)]
        if sorted(n for n in numbers if isinstance(n, int)) != list(range(1, expected + 1)):
            raise HubBadRequestError(
                f"Multipart completion lists parts {numbers!r:.200}, expected 1..{expected}:"
                " upload every part, then complete."
            )
        tmp = self.store.new_temp_path()
        try:
            with open(tmp, "wb") as out:
                for number in range(1, expected + 1):
                    part_file = session.folder / f"part-{number:05d}"
                    if not part_file.is_file():
                        raise HubBadRequestError(
                            f"Part {number} of the LFS upload of {session.oid!r} was never"
                            " received: upload it again, then complete."
                        )
                    with open(part_file, "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 20)
            self._adopt(session, tmp)
        finally:
            tmp.unlink(missing_ok=True)

    def _adopt(self, session: UploadSession, tmp: Path) -> None:
        sha = hashlib.sha256()
        size = 0
        with open(tmp, "rb") as f:
            while chunk := f.read(1 << 20):
                sha.update(chunk)
                size += len(chunk)
        if sha.hexdigest() != session.oid or size != session.size:
            tmp.unlink(missing_ok=True)
            raise HubBadRequestError(
                f"Uploaded content has sha256 {sha.hexdigest()!r} and {size} bytes, but the"
                f" batch request announced {session.oid!r} and {session.size} bytes: the file"
                " changed or was cut during upload; retry the upload."
            )
        self.store.adopt_blob(tmp, session.oid, session.repo)
        self._finish(session.id, session.owner, session.folder)

    def verify(self, payload: Mapping[str, Any], repo: RepoId) -> None:
        oid, size = payload.get("oid"), payload.get("size")
        valid = (
            isinstance(oid, str)
            and SHA256.match(oid)
            and isinstance(size, int)
            and not isinstance(size, bool)
        )
        if (
            not valid
            or not self.store.has_blob(str(oid), size)
            or not self.store.repo_has_object(repo, str(oid))
        ):
            raise HubEntryNotFoundError(
                f"LFS object {oid!r:.80} of size {size!r:.40} is not stored: the upload did not"
                " complete; retry it."
            )


def _idle_for(path: Path) -> float:
    """Seconds since ``path`` (or anything directly in it) last changed."""
    try:
        newest = path.stat().st_mtime
        if path.is_dir():
            for child in path.iterdir():
                newest = max(newest, child.stat().st_mtime)
    except OSError:
        return 0.0
    return time.time() - newest
