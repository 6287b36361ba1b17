"""Endpoints about whole repositories, plus ``whoami`` and README validation.

List, create, delete, settings, info (at a revision), refs, history, branches and tags.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from dagster_ds.hub.server._cards import front_matter_errors
from dagster_ds.hub.server._errors import (
    HubBadRequestError,
    HubConflictError,
    HubNotFoundError,
    HubRevisionNotFoundError,
    HubUnauthorizedError,
)
from dagster_ds.hub.server._http import INVALID_CREDENTIALS, Call, Route, logger, route
from dagster_ds.hub.server._lfs_rules import DEFAULT_GITATTRIBUTES
from dagster_ds.hub.server._objects import (
    DEFAULT_REF,
    Commit,
    RepoId,
    ref_in_namespace,
)
from dagster_ds.hub.server._payload import boolean, json_object, text
from dagster_ds.hub.server._ref_names import conflicting_ref, validate_ref_name
from dagster_ds.hub.server._store import new_initial_commit

_CARD_MAX_BYTES = 1 << 20


def json_body(call: Call) -> dict[str, Any]:
    """The request's JSON object body ({} when empty)."""
    return json_object(call.body, f"The body of {call.request.method} {call.request.url.path}")


def repo_url(call: Call, repo: RepoId) -> str:
    return f"{call.base_url}/{repo.url_prefix}{repo.id}"


# ---------------------------------------------------------------- account


def whoami(call: Call) -> Response:
    if not call.authenticated:
        raise HubUnauthorizedError(
            f"{INVALID_CREDENTIALS}: whoami needs a token; any token works on this local Hub"
            " unless it was started with one."
        )
    user = call.hub.settings.user
    return JSONResponse(
        {
            "type": "user",
            "id": user,
            "name": user,
            "fullname": user,
            "isPro": False,
            "canPay": False,
            "orgs": [],
            "auth": {
                "type": "access_token",
                "accessToken": {"displayName": "local-hub", "role": "write"},
            },
        }
    )


def validate_yaml(call: Call) -> Response:
    content = text(json_body(call), "content", "validate-yaml", default="") or ""
    errors = front_matter_errors(content)
    body = {"errors": [{"message": m} for m in errors], "warnings": []}
    if errors:
        body["error"] = errors[0]
    if not errors:
        return JSONResponse(body)
    return JSONResponse(body, status_code=400, headers={"X-Error-Message": "Invalid YAML"})


# ------------------------------------------------------------- repositories


def _repo_from_payload(call: Call, payload: dict[str, Any]) -> RepoId:
    what = "Repository request"
    name = text(payload, "name", what)
    if not name:
        raise HubBadRequestError(
            f"Missing repo 'name' in {payload!r:.200}: pass repo_id='user/name'."
        )
    namespace = text(payload, "organization", what) or call.hub.settings.user
    return RepoId.parse(text(payload, "type", what), namespace, name)


def create_repo(call: Call) -> Response:
    payload = json_body(call)
    repo = _repo_from_payload(call, payload)
    private = _private(payload, "create_repo")
    url = repo_url(call, repo)
    initial = new_initial_commit(call.hub.settings.user, DEFAULT_GITATTRIBUTES, call.store)
    try:
        meta = call.store.create_repo(
            repo, private=private, initial=initial, contents=[DEFAULT_GITATTRIBUTES]
        )
    except HubConflictError as e:
        return JSONResponse(
            {"error": f"You already created this {repo.type} repo: {e}", "url": url},
            status_code=409,
            headers={"X-Error-Message": "Conflict"},
        )
    logger.info("%s: created (%s)", repo.describe(), "private" if private else "public")
    return JSONResponse({"url": url, "name": repo.id, "id": meta["_id"]})


def delete_repo(call: Call) -> Response:
    repo = _repo_from_payload(call, json_body(call))
    call.store.delete_repo(repo)
    logger.info("%s: deleted", repo.describe())
    return Response(status_code=200)


def _private(payload: dict[str, Any], what: str) -> bool:
    visibility = text(payload, "visibility", what)
    if visibility is not None:
        if visibility not in ("private", "public"):
            raise HubBadRequestError(
                f"{what}: 'visibility' must be 'private' or 'public', got {visibility!r:.80}."
            )
        return visibility == "private"
    return boolean(payload, "private", what)


def update_settings(call: Call) -> Response:
    repo, _ = call.readable_repo()
    payload = json_body(call)
    changes: dict[str, Any] = {}
    if "visibility" in payload or "private" in payload:
        changes["private"] = _private(payload, "update_repo_settings")
    if "gated" in payload:
        gated = payload["gated"]
        if gated not in (False, "auto", "manual"):
            raise HubBadRequestError(
                "update_repo_settings: 'gated' must be false, 'auto' or 'manual', got"
                f" {gated!r:.80}."
            )
        changes["gated"] = gated
    call.store.update_repo_meta(repo, changes)
    return JSONResponse({})


def _summary(repo: RepoId, meta: dict[str, Any], commit: Commit) -> dict[str, Any]:
    """What both listings and repo info say about a repository."""
    out: dict[str, Any] = {
        "_id": meta["_id"],
        "id": repo.id,
        "author": repo.namespace,
        "sha": commit.id,
        "lastModified": commit.date,
        "createdAt": meta["createdAt"],
        "private": bool(meta.get("private")),
        "gated": meta.get("gated", False),
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": [],
    }
    if repo.type == "model":
        out["modelId"] = repo.id
    return out


def list_repos(call: Call) -> Response:
    query = call.request.query_params
    author = query.get("author")
    searches = [s.lower() for s in query.getlist("search")]
    limit_text = query.get("limit", "")
    limit = int(limit_text) if limit_text.isdigit() and len(limit_text) < 10 else None
    out = []
    for repo in call.store.list_repos(call.params["type"]):
        if (author and repo.namespace != author) or any(s not in repo.id.lower() for s in searches):
            continue
        try:
            meta = call.store.repo_meta(repo)
            if meta.get("private") and not call.authenticated:
                continue
            _, head = call.store.resolve(repo, "main")
        except HubNotFoundError:
            continue  # deleted meanwhile, or damaged: one repo never breaks the listing
        out.append(_summary(repo, meta, head))
        if limit is not None and len(out) >= limit:
            break
    return JSONResponse(out)


def repo_info(call: Call) -> Response:
    repo, meta = call.readable_repo()
    _, commit = call.store.resolve(repo, call.params.get("rev", "main"))
    blobs = call.flag("blobs")
    siblings = []
    for path in sorted(commit.files):
        sibling: dict[str, Any] = {"rfilename": path}
        if blobs:
            entry = commit.files[path]
            sibling.update(size=entry.size, blobId=entry.oid)
            if entry.lfs:
                sibling["lfs"] = entry.api_json(path)["lfs"] | {"sha256": entry.sha256}
        siblings.append(sibling)
    info = _summary(repo, meta, commit)
    info["siblings"] = siblings
    info["usedStorage"] = sum(entry.size for entry in commit.files.values())
    readme = commit.files.get("README.md")
    if readme is not None and readme.size <= _CARD_MAX_BYTES:
        blob = call.store.blob_path(readme.sha256)
        card = call.hub.cards.card(readme.sha256, blob.read_bytes)
        if card is not None:
            info["cardData"] = card
    expand = call.request.query_params.getlist("expand") + call.request.query_params.getlist(
        "expand[]"
    )
    if expand:
        info = {key: value for key, value in info.items() if key in {*expand, "_id", "id"}}
    return JSONResponse(info)


# ------------------------------------------------------------ refs, history


def _ref_json(ref: str, prefix: str, commit_id: str) -> dict[str, str]:
    return {"name": ref[len(prefix) :], "ref": ref, "targetCommit": commit_id}


def list_refs(call: Call) -> Response:
    repo, _ = call.readable_repo()
    refs = call.store.refs(repo)
    groups: dict[str, list[dict[str, str]]] = {
        "branches": [],
        "converts": [],
        "tags": [],
        "pullRequests": [],
    }
    prefixes = {
        "refs/heads/": "branches",
        "refs/convert/": "converts",
        "refs/tags/": "tags",
        "refs/pr/": "pullRequests",
    }
    for ref in sorted(refs):
        for prefix, group in prefixes.items():
            if ref.startswith(prefix):
                groups[group].append(_ref_json(ref, prefix, refs[ref]))
    if not call.flag("include_prs"):
        del groups["pullRequests"]
    return JSONResponse(groups)


def list_commits(call: Call) -> Response:
    repo, _ = call.readable_repo()
    _, head = call.store.resolve(repo, call.params["rev"])
    formatted = "formatted" in call.request.query_params.getlist("expand[]")
    out = []
    for commit in call.store.history(repo, head):
        item = commit.api_json()
        if formatted:
            item["formatted"] = {"title": commit.title, "message": commit.message}
        out.append(item)
    return JSONResponse(out)


def _resolve_start(call: Call, repo: RepoId, revision: str | None) -> Commit:
    _, commit = call.store.resolve(repo, revision or "main")
    return commit


def create_branch(call: Call) -> Response:
    repo, _ = call.readable_repo()
    branch = validate_ref_name(call.params["path"], "branch")
    payload = json_body(call)
    if boolean(payload, "emptyBranch", "create_branch"):
        raise HubBadRequestError(
            "Empty branches are not supported by this local Hub: create the branch from a"
            " revision instead."
        )
    start = _resolve_start(call, repo, text(payload, "startingPoint", "create_branch"))
    _set_new_ref(call, repo, f"refs/heads/{branch}", start.id, f"Branch {branch!r}")
    return JSONResponse({})


def delete_branch(call: Call) -> Response:
    repo, _ = call.readable_repo()
    ref = ref_in_namespace(call.params["path"], "refs/heads/", "branch")
    if ref == DEFAULT_REF:
        raise HubBadRequestError(
            f"Cannot delete the default branch {call.params['path']!r}: delete the repo instead."
        )
    _delete_ref(call, repo, ref, f"Branch {call.params['path']!r}")
    return JSONResponse({})


def create_tag(call: Call) -> Response:
    repo, _ = call.readable_repo()
    payload = json_body(call)
    tag = validate_ref_name(text(payload, "tag", "create_tag", default="") or "", "tag")
    start = _resolve_start(call, repo, call.params["rev"])
    _set_new_ref(call, repo, f"refs/tags/{tag}", start.id, f"Tag {tag!r}")
    return JSONResponse({})


def delete_tag(call: Call) -> Response:
    repo, _ = call.readable_repo()
    tag = call.params["path"]
    _delete_ref(call, repo, ref_in_namespace(tag, "refs/tags/", "tag"), f"Tag {tag!r}")
    return JSONResponse({})


def _set_new_ref(call: Call, repo: RepoId, ref: str, commit_id: str, what: str) -> None:
    def add(refs: dict[str, str]) -> dict[str, str]:
        if ref in refs:
            raise HubConflictError(
                f"{what} already exists in the {repo.describe()}: pass exist_ok=True or pick"
                " another name."
            )
        conflict = conflicting_ref(ref, refs)
        if conflict is not None:
            raise HubConflictError(
                f"{what} cannot be created in the {repo.describe()}: {conflict!r} exists, and"
                " git cannot hold a ref beside refs below it ('a' and 'a/b'); pick another"
                " name, like one with '-' instead of '/'."
            )
        return {**refs, ref: commit_id}

    call.store.update_refs(repo, add)


def _delete_ref(call: Call, repo: RepoId, ref: str, what: str) -> None:
    def remove(refs: dict[str, str]) -> dict[str, str]:
        if ref not in refs:
            raise HubRevisionNotFoundError(
                f"{what} does not exist in the {repo.describe()}: list refs with list_repo_refs."
            )
        return {name: target for name, target in refs.items() if name != ref}

    call.store.update_refs(repo, remove)


# ------------------------------------------ move, squash, duplicate, auth-check


def move_repo(call: Call) -> Response:
    payload = json_body(call)
    what = "move_repo"
    repo_type = text(payload, "type", what)
    source = _full_repo_id(repo_type, text(payload, "fromRepo", what), "fromRepo")
    target = _full_repo_id(repo_type, text(payload, "toRepo", what), "toRepo")
    call.store.move_repo(source, target)
    logger.info("%s: moved to %r", source.describe(), target.id)
    return JSONResponse({"url": repo_url(call, target)})


def _full_repo_id(repo_type: str | None, repo_id: str | None, key: str) -> RepoId:
    namespace, _, name = (repo_id or "").partition("/")
    if not namespace or not name:
        raise HubBadRequestError(f"move_repo: {key!r} must be 'namespace/name', got {repo_id!r}.")
    return RepoId.parse(repo_type, namespace, name)


def super_squash(call: Call) -> Response:
    """Replace a branch's history with one commit holding its current files."""
    repo, _ = call.readable_repo()
    ref = ref_in_namespace(call.params["rev"], "refs/heads/", "branch")
    message = text(json_body(call), "message", "super_squash_history") or "Super-squash"
    with call.store.locked(repo):
        refs = call.store.refs(repo)
        if ref not in refs:
            raise HubRevisionNotFoundError(
                f"Branch {call.params['rev']!r} does not exist in the {repo.describe()}: squash"
                " an existing branch (list them with list_repo_refs)."
            )
        head = call.store.read_commit(repo, refs[ref])
        squashed = Commit.create(
            parent=None,
            changes=dict(head.files),
            title=message.split("\n", 1)[0],
            message=message.partition("\n")[2],
            author=call.hub.settings.user,
        )
        call.store.write_commit(repo, squashed)
        call.store.update_refs(repo, lambda current: {**current, ref: squashed.id})
    return JSONResponse({"commitId": squashed.id})


def duplicate_repo(call: Call) -> Response:
    """Copy a repository's main branch (files, not history) to a new repository."""
    source, meta = call.readable_repo()
    payload = json_body(call)
    target_id = text(payload, "repository", "duplicate_repo") or ""
    namespace, _, name = target_id.partition("/")
    if not name:
        namespace, name = call.hub.settings.user, namespace
    target = RepoId.parse(source.type, namespace, name)
    private = (
        _private(payload, "duplicate_repo")
        if "visibility" in payload
        else bool(meta.get("private"))
    )
    _, head = call.store.resolve(source, "main")
    initial = Commit.create(
        parent=None,
        changes=dict(head.files),
        title=f"Duplicate from {source.id}",
        message="",
        author=call.hub.settings.user,
    )
    url = repo_url(call, target)
    try:
        call.store.create_repo(
            target, private=private, initial=initial, contents=[], shared_from=source
        )
    except HubConflictError as e:
        return JSONResponse(
            {"error": f"You already created this {target.type} repo: {e}", "url": url},
            status_code=409,
            headers={"X-Error-Message": "Conflict"},
        )
    logger.info("%s: duplicated to %r", source.describe(), target.id)
    return JSONResponse({"url": url, "filesCopyPending": False})


def auth_check(call: Call) -> Response:
    """200 when the caller may read (``/auth-check``) or write (``/auth-check/write``) the repo."""
    call.readable_repo()
    return JSONResponse({})


API = "api/{types}/{namespace}/{name}"

ROUTES: list[Route] = [
    route("POST", "api/repos/move", move_repo),
    route("GET", f"{API}/auth-check", auth_check),
    route("GET", f"{API}/auth-check/write", auth_check, write=True),
    route("POST", f"{API}/super-squash/{{rev}}", super_squash),
    route("POST", f"{API}/duplicate", duplicate_repo),
    route("GET", "api/whoami-v2", whoami),
    route("POST", "api/validate-yaml", validate_yaml, write=False),
    route("POST", "api/repos/create", create_repo),
    route("DELETE", "api/repos/delete", delete_repo),
    route("GET", "api/{types}", list_repos),
    route("GET", API, repo_info),
    route("GET", f"{API}/revision/{{rev}}", repo_info),
    route("PUT", f"{API}/settings", update_settings),
    route("GET", f"{API}/refs", list_refs),
    route("GET", f"{API}/commits/{{rev}}", list_commits),
    route("POST", f"{API}/branch/{{path*}}", create_branch),
    route("DELETE", f"{API}/branch/{{path*}}", delete_branch),
    route("POST", f"{API}/tag/{{rev}}", create_tag),
    route("DELETE", f"{API}/tag/{{path*}}", delete_tag),
]
