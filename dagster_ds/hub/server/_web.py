"""The web pages a Hub URL opens, as simple HTML: repo, file tree, file, commit, column lineage.

The repo page shows its card; the column-lineage page, what a dagster_ds push
records in the card (each column and the upstream columns it came from).

Materializations record ``<endpoint>/datasets/<repo>`` and ``.../commit/<sha>``
links; these pages make them open in a browser. Everything shown is escaped;
Markdown is rendered with raw HTML disabled, and a strict Content-Security-Policy
forbids scripts. Browsers send no token, so private repos show as missing.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from starlette.responses import HTMLResponse, Response

from dagster_ds.fingerprint import LineageStep, asset_names, lineage_origins
from dagster_ds.hub import Card
from dagster_ds.hub.server._cards import card_data, split_front_matter
from dagster_ds.hub.server._errors import HubNotFoundError, LocalHubError
from dagster_ds.hub.server._http import Call, Route, error_status, route
from dagster_ds.hub.server._objects import COMMIT_ID, Commit, FileEntry, RepoId
from dagster_ds.hub.server._tree import list_folder

_PREVIEW_BYTES = 256 * 1024
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
    "table{border-collapse:collapse}td,th{padding:.2rem .8rem;text-align:left}"
    "pre{background:#f6f8fa;padding:1rem;overflow:auto}nav a{margin-right:1rem}"
)
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def _repo_base(repo: RepoId) -> str:
    return f"/{repo.url_prefix}{repo.id}"


def _link(href: str, text: str) -> str:
    return f"<a href='{_e(href)}'>{_e(text)}</a>"


def _nav(repo: RepoId, rev: str) -> str:
    base = _repo_base(repo)
    rev_part = quote(rev, safe="")
    return (
        f"<h1>{_e(repo.type)}: {_link(base, repo.id)}</h1><nav>"
        f"{_link(f'{base}/tree/{rev_part}', 'Files')}"
        f"{_link(f'{base}/commits/{rev_part}', 'History')}"
        f"{_link(f'{base}/lineage', 'Column lineage')}</nav>"
    )


def _resolve(call: Call, rev: str) -> tuple[RepoId, Commit]:
    repo, _ = call.readable_repo()
    _, commit = call.store.resolve(repo, rev)
    return repo, commit


def _guard(render: Any) -> Any:
    def handler(call: Call) -> Response:
        try:
            return render(call)
        except LocalHubError as e:
            status = error_status(e)
            return _page("Not available", f"<h1>{status}</h1><p>{_e(e)}</p>", status)

    return handler


def _read_text(call: Call, entry: FileEntry) -> str | None:
    with open(call.store.blob_path(entry.sha256), "rb") as f:
        data = f.read(_PREVIEW_BYTES)
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


@_guard
def repo_page(call: Call) -> Response:
    repo, commit = _resolve(call, "main")
    body = _nav(repo, "main")
    body += f"<p>Last commit: {_link(f'{_repo_base(repo)}/commit/{commit.id}', commit.title)}"
    body += f" ({_e(commit.date)})</p>"
    readme = commit.files.get("README.md")
    if readme is not None:
        text = _read_text(call, readme) or ""
        metadata, markdown = split_front_matter(text)
        if metadata:
            body += f"<details><summary>Card metadata</summary><pre>{_e(metadata)}</pre></details>"
        body += f"<article class='card'>{_MARKDOWN.render(markdown)}</article>"
    else:
        body += "<p>No dataset card (README.md).</p>"
    body += _files_table(repo, "main", list_folder(commit, "", recursive=False))
    return _page(repo.id, body)


def _files_table(repo: RepoId, rev: str, entries: list[dict[str, Any]]) -> str:
    base, rev_part = _repo_base(repo), quote(rev, safe="")
    rows = []
    for entry in entries:
        path = entry["path"]
        name = path.rsplit("/", 1)[-1]
        if entry["type"] == "directory":
            cell = _link(f"{base}/tree/{rev_part}/{quote(path)}", name + "/")
            size = ""
        else:
            cell = _link(f"{base}/blob/{rev_part}/{quote(path)}", name)
            size = f"{entry['size']:,} B" + (" (LFS)" if "lfs" in entry else "")
        rows.append(f"<tr><td>{cell}</td><td>{_e(size)}</td></tr>")
    return f"<table class='files'><tr><th>Name</th><th>Size</th></tr>{''.join(rows)}</table>"


@_guard
def tree_page(call: Call) -> Response:
    rev, folder = call.params["rev"], call.params["path"].strip("/")
    repo, commit = _resolve(call, rev)
    body = _nav(repo, rev) + f"<h2>{_e(folder or '/')} at {_e(rev)}</h2>"
    body += _files_table(repo, rev, list_folder(commit, folder, recursive=False))
    return _page(f"{repo.id}: {folder or '/'}", body)


@_guard
def blob_page(call: Call) -> Response:
    rev, path = call.params["rev"], call.params["path"]
    repo, commit = _resolve(call, rev)
    entry = commit.files.get(path)
    if entry is None:
        raise HubNotFoundError(f"{path!r} is not a file at {rev!r}.")
    download = f"{_repo_base(repo)}/resolve/{quote(rev, safe='')}/{quote(path)}"
    body = _nav(repo, rev) + f"<h2>{_e(path)}</h2>"
    kind = " (LFS)" if entry.lfs else ""
    body += f"<p>{entry.size:,} bytes{kind} · {_link(download, 'download')}</p>"
    text = _read_text(call, entry)
    if text is None:
        body += "<p>Binary file: no preview.</p>"
    else:
        cut = " (first 256 KiB)" if entry.size > _PREVIEW_BYTES else ""
        body += f"<pre class='file'>{_e(text)}</pre>{_e(cut)}"
    return _page(f"{repo.id}: {path}", body)


@_guard
def commit_page(call: Call) -> Response:
    sha = call.params["sha"]
    repo, _ = call.readable_repo()
    if not COMMIT_ID.match(sha):
        raise HubNotFoundError(f"{sha!r} is not a commit id.")
    commit = call.store.read_commit(repo, sha)
    base = _repo_base(repo)
    body = _nav(repo, "main")
    body += f"<h2 class='commit-title'>{_e(commit.title)}</h2>"
    if commit.message:
        body += f"<pre>{_e(commit.message)}</pre>"
    body += f"<p>{_e(commit.author)} · {_e(commit.date)} · <code>{_e(commit.id)}</code></p>"
    for parent in commit.parents:
        body += f"<p>Parent: {_link(f'{base}/commit/{parent}', parent)}</p>"
    touched = call.store.changed_files(repo, commit)
    rows = []
    for path in sorted(touched):
        entry = touched[path]
        if entry is None:
            rows.append(f"<tr><td>deleted</td><td>{_e(path)}</td></tr>")
        else:
            link = _link(f"{base}/blob/{commit.id}/{quote(path)}", path)
            rows.append(f"<tr><td>{'LFS' if entry.lfs else 'file'}</td><td>{link}</td></tr>")
    body += f"<h3>{len(touched)} changed files</h3><table class='changes'>{''.join(rows)}</table>"
    return _page(f"{repo.id}: {commit.title}", body)


@_guard
def history_page(call: Call) -> Response:
    rev = call.params["rev"]
    repo, head = _resolve(call, rev)
    base = _repo_base(repo)
    rows = []
    for i, commit in enumerate(call.store.history(repo, head)):
        if i >= 200:
            rows.append("<tr><td colspan=2>…</td></tr>")
            break
        rows.append(
            f"<tr><td>{_link(f'{base}/commit/{commit.id}', commit.title)}</td>"
            f"<td>{_e(commit.date)}</td></tr>"
        )
    return _page(f"{repo.id}: history", _nav(repo, rev) + f"<table>{''.join(rows)}</table>")


@_guard
def lineage_page(call: Call) -> Response:
    """Each pushed split's columns: the upstream asset columns behind each, and what made it."""
    repo, commit = _resolve(call, "main")
    body = _nav(repo, "main") + "<h2>Column lineage</h2>"
    readme = commit.files.get("README.md")
    data = card_data(_read_text(call, readme) or "") if readme is not None else None
    lineages = Card(data or {}).lineages()
    if not lineages:
        body += "<p>The card records no dagster_ds lineage (push with dagster_ds).</p>"
    for (config, split), steps in sorted(lineages.items()):
        body += f"<h3 class='split'>{_e(config)} / {_e(split)}</h3>{_lineage_table(steps)}"
    return _page(f"{repo.id}: column lineage", body)


def _lineage_table(steps: tuple[LineageStep, ...]) -> str:
    """One row per column: column, the upstream ``asset.column`` pairs, the transforms."""
    try:
        origins = lineage_origins(steps)
    except (ValueError, IndexError):  # a card edited by hand: sources it cannot resolve
        origins = None
    if origins is None:
        return "<p>Column lineage not recorded for this split.</p>"
    names = asset_names(steps)
    rows = []
    for origin in origins:
        upstream = ", ".join(
            f"{names.get(root, root[:12])}.{column}" for root, column in origin.sources
        )
        rows.append(
            f"<tr><td>{_e(origin.column)}</td><td>← {_e(upstream or '(no upstream column)')}</td>"
            f"<td>{_e(', '.join(origin.transforms) or '(passed through)')}</td></tr>"
        )
    return (
        "<table class='lineage'><tr><th>Column</th><th>From (upstream asset.column)</th>"
        f"<th>Made by</th></tr>{''.join(rows)}</table>"
    )


ROUTES: list[Route] = []
for _prefix in ("{types}/{namespace}/{name}", "{namespace}/{name}"):
    ROUTES += [
        route("GET", _prefix, repo_page),
        route("GET", f"{_prefix}/tree/{{rev}}/{{path*}}", tree_page),
        route("GET", f"{_prefix}/blob/{{rev}}/{{path*}}", blob_page),
        route("GET", f"{_prefix}/commit/{{sha}}", commit_page),
        route("GET", f"{_prefix}/commits/{{rev}}", history_page),
        route("GET", f"{_prefix}/lineage", lineage_page),
    ]
