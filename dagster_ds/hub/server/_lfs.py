"""The LFS side of uploads: batch answers, single-part and multipart uploads, verification.

The batch endpoint answers, per object, either nothing (the blob is already
stored: an earlier, possibly interrupted push uploaded it) or an ``upload``
action whose ``href`` names an upload session, plus a ``verify`` action. Objects
above the multipart threshold get a ``chunk_size`` and one URL per part, like
S3 presigned part URLs; the client then POSTs the parts' ETags to the ``href``.

The session id in those URLs is random (128 bits) and acts as the presigned
URL's signature: upload URLs carry no Authorization header, as on the real Hub.
Completed uploads land in the blob store whether or not a commit follows, so a
retried push finds them there.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster_ds.hub.server._errors import HubBadRequestError, HubEntryNotFoundError
from dagster_ds.hub.server._objects import SHA256
from dagster_ds.hub.server._store import HubStore

_STALE_SESSION_SECONDS = 24 * 3600
_SESSION_ID_LENGTH = 32


@dataclass(frozen=True)
class UploadSession:
    id: str
    oid: str
    size: int
    chunk_size: int | None
    folder: Path


class LfsUploads:
    """Upload sessions in ``uploads/`` and their completion into the blob store."""

    def __init__(self, store: HubStore, *, multipart_threshold: int, chunk_size: int) -> None:
        if chunk_size <= 0 or multipart_threshold < 0:
            raise ValueError(
                f"LFS multipart settings must be positive, got threshold={multipart_threshold!r}"
                f" chunk_size={chunk_size!r}."
            )
        self.store = store
        self.multipart_threshold = multipart_threshold
        self.chunk_size = chunk_size
        self._drop_stale_sessions()

    def _drop_stale_sessions(self) -> None:
        cutoff = time.time() - _STALE_SESSION_SECONDS
        for folder in self.store.uploads_dir.iterdir():
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)

    # ------------------------------------------------------------------ batch

    def batch(self, payload: Mapping[str, Any], base_url: str) -> dict[str, Any]:
        """The answer to ``POST <repo>.git/info/lfs/objects/batch`` (upload operation)."""
        operation = payload.get("operation")
        objects = payload.get("objects")
        if operation != "upload" or not isinstance(objects, list):
            raise HubBadRequestError(
                f"LFS batch request needs operation 'upload' and a list of objects, got"
                f" operation={operation!r}; downloads go through the resolve URLs."
            )
        transfers = payload.get("transfers") or ["basic"]
        if not isinstance(transfers, list):
            raise HubBadRequestError(
                f"LFS batch 'transfers' must be a list like ['basic', 'multipart'], got"
                f" {transfers!r:.80}."
            )
        allow_multipart = "multipart" in transfers
        answers: list[dict[str, Any]] = []
        used_multipart = False
        for obj in objects:
            answer = self._answer(obj, base_url, allow_multipart)
            used_multipart |= "chunk_size" in answer.get("actions", {}).get("upload", {}).get(
                "header", {}
            )
            answers.append(answer)
        return {"transfer": "multipart" if used_multipart else "basic", "objects": answers}

    def _answer(self, obj: Any, base_url: str, allow_multipart: bool) -> dict[str, Any]:
        oid = obj.get("oid") if isinstance(obj, dict) else None
        size = obj.get("size") if isinstance(obj, dict) else None
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or size < 0
            or not isinstance(oid, str)
            or not SHA256.match(oid)
        ):
            return {
                "oid": str(oid)[:100],
                "size": 0,
                "error": {"code": 422, "message": "oid must be a sha256 hex digest, size an int"},
            }
        if self.store.has_blob(oid, size):
            return {"oid": oid, "size": size}
        multipart = allow_multipart and size > self.multipart_threshold
        session = self._start(oid, size, self.chunk_size if multipart else None)
        href = f"{base_url}/lfs-uploads/{session.id}"
        upload: dict[str, Any] = {"href": href}
        if session.chunk_size is not None:
            parts = max(1, math.ceil(size / session.chunk_size))
            header = {str(n): f"{href}/{n}" for n in range(1, parts + 1)}
            upload["header"] = {"chunk_size": str(session.chunk_size), **header}
        return {
            "oid": oid,
            "size": size,
            "authenticated": True,
            "actions": {"upload": upload, "verify": {"href": self._verify_href(base_url)}},
        }

    @staticmethod
    def _verify_href(base_url: str) -> str:
        return f"{base_url}/lfs-verify"

    # --------------------------------------------------------------- sessions

    def _start(self, oid: str, size: int, chunk_size: int | None) -> UploadSession:
        session_id = uuid.uuid4().hex
        folder = self.store.uploads_dir / session_id
        folder.mkdir(parents=True)
        meta = {"oid": oid, "size": size, "chunk_size": chunk_size}
        (folder / "session.json").write_text(json.dumps(meta))
        return UploadSession(session_id, oid, size, chunk_size, folder)

    def session(self, session_id: str) -> UploadSession:
        folder = self.store.uploads_dir / session_id
        try:
            if len(session_id) != _SESSION_ID_LENGTH or not session_id.isalnum():
                raise FileNotFoundError(session_id)
            meta = json.loads((folder / "session.json").read_text())
        except FileNotFoundError as e:
            raise HubEntryNotFoundError(
                "No LFS upload session with that id (finished, expired or never started):"
                " ask the LFS batch endpoint for new upload URLs."
            ) from e
        return UploadSession(session_id, meta["oid"], meta["size"], meta["chunk_size"], folder)

    def new_part_file(self, session: UploadSession, part: int) -> Path:
        """A temporary path to receive one part into; `finish_part` publishes it."""
        if session.chunk_size is None:
            raise HubBadRequestError(
                "This LFS upload is single-part: PUT the whole file to the upload href."
            )
        parts = max(1, math.ceil(session.size / session.chunk_size))
        if not 1 <= part <= parts:
            raise HubBadRequestError(
                f"Part number {part!r} is out of range: this upload has parts 1..{parts}."
            )
        return self.store.new_temp_path()

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
        if self.store.has_blob(session.oid, session.size):
            shutil.rmtree(session.folder, ignore_errors=True)
            return
        if session.chunk_size is None:
            raise HubBadRequestError(
                "This LFS upload is single-part: PUT the file to the href instead of POSTing parts."
            )
        expected = max(1, math.ceil(session.size / session.chunk_size))
        parts = payload.get("parts")
        if payload.get("oid") != session.oid or not isinstance(parts, list):
            raise HubBadRequestError(
                f"Multipart completion needs oid {session.oid!r} and a list of parts, got"
                f" oid={payload.get('oid')!r:.100}."
            )
        numbers = [p.get("partNumber") for p in parts if isinstance(p, dict)]
        if sorted(n for n in numbers if isinstance(n, int)) != list(range(1, expected + 1)):
            raise HubBadRequestError(
                f"Multipart completion lists parts {numbers!r:.200}, expected 1..{expected}: upload"
                " every part, then complete."
            )
        tmp = self.store.new_temp_path()
        with open(tmp, "wb") as out:
            for number in range(1, expected + 1):
                part_file = session.folder / f"part-{number:05d}"
                if not part_file.is_file():
                    tmp.unlink(missing_ok=True)
                    raise HubBadRequestError(
                        f"Part {number} of the LFS upload of {session.oid!r} was never received:"
                        " upload it again, then complete."
                    )
                with open(part_file, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        self._adopt(session, tmp)

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
        self.store.adopt_blob(tmp, session.oid)
        shutil.rmtree(session.folder, ignore_errors=True)

    def verify(self, payload: Mapping[str, Any]) -> None:
        oid, size = payload.get("oid"), payload.get("size")
        valid = (
            isinstance(oid, str)
            and SHA256.match(oid)
            and isinstance(size, int)
            and not isinstance(size, bool)
        )
        if not valid or not self.store.has_blob(str(oid), size):
            raise HubEntryNotFoundError(
                f"LFS object {oid!r} of size {size!r} is not stored: the upload did not"
                " complete; retry it."
            )
