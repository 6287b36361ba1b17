"""Malformed requests get a 4xx in the Hub's error shape, and the connection stays usable."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import time
from typing import Any

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError

from tests.hub.server.conftest import RawClient

DS = "/api/datasets/user/fuzz"
SHA = hashlib.sha256(b"x" * 100).hexdigest()


@pytest.fixture
def fuzz_repo(hub_api: HfApi) -> str:
    hub_api.create_repo("user/fuzz", repo_type="dataset")
    hub_api.create_repo("user/fuzzm")
    hub_api.create_commit(
        "user/fuzz",
        [CommitOperationAdd("a.txt", b"a"), CommitOperationAdd("README.md", b"# hi")],
        commit_message="add",
        repo_type="dataset",
    )
    return "user/fuzz"


def _ndjson(*lines: Any) -> bytes:
    return b"\n".join(json.dumps(line).encode() for line in lines)


HEADER = {"key": "header", "value": {"summary": "s"}}
CASES: list[tuple[str, str, Any, str]] = [
    ("POST", f"{DS}/commit/main", _ndjson({"key": "header", "value": "s"}), "ndjson"),
    ("POST", f"{DS}/commit/main", _ndjson({"key": "header", "value": [1]}), "ndjson"),
    ("POST", f"{DS}/commit/main", _ndjson(HEADER, {"key": "file", "value": "x"}), "ndjson"),
    ("POST", f"{DS}/commit/main", _ndjson(HEADER, {"key": "file", "value": [1, 2]}), "ndjson"),
    (
        "POST",
        f"{DS}/commit/main",
        _ndjson(HEADER, {"key": "lfsFile", "value": {"path": "b", "oid": SHA, "size": "big"}}),
        "ndjson",
    ),
    (
        "POST",
        f"{DS}/commit/main",
        _ndjson(HEADER, {"key": "file", "value": {"path": "b", "content": 5}}),
        "ndjson",
    ),
    ("POST", f"{DS}/commit/main", b"[" * 100_000, "ndjson"),
    ("POST", f"{DS}/commit/main", b'{"key": "header", "value": ' + b"[" * 5000, "ndjson"),
    ("POST", f"{DS}/paths-info/main", [1, 2], "json"),
    ("POST", f"{DS}/paths-info/main", {"paths": 5}, "json"),
    ("POST", f"{DS}/paths-info/main", {"paths": [1, None]}, "json"),
    ("POST", f"{DS}/paths-info/main", b"[" * 100_000, "json"),
    ("POST", f"{DS}/preupload/main", {"files": [{"path": "a", "size": "big"}]}, "json"),
    ("POST", f"{DS}/preupload/main", {"files": [{"path": "a", "size": 1, "sample": 3}]}, "json"),
    (
        "POST",
        "/datasets/user/fuzz.git/info/lfs/objects/batch",
        {"operation": "upload", "transfers": 5, "objects": [{"oid": SHA, "size": 100}]},
        "json",
    ),
    ("POST", "/datasets/user/fuzz.git/info/lfs/objects/batch", [1], "json"),
    ("POST", f"{DS}/branch/dev", {"startingPoint": 5}, "json"),
    ("POST", f"{DS}/branch/dev", {"startingPoint": ["main"]}, "json"),
    ("POST", f"{DS}/tag/main", {"tag": 5}, "json"),
    ("POST", "/api/repos/create", {"name": 5, "type": "dataset"}, "json"),
    ("POST", "/api/repos/create", {"name": "x", "type": ["dataset"]}, "json"),
    ("POST", "/api/repos/create", {"name": "x", "organization": ["o"]}, "json"),
    ("PUT", f"{DS}/settings", {"private": "maybe"}, "json"),
    ("PUT", f"{DS}/settings", [1], "json"),
    ("POST", "/api/validate-yaml", {"content": 5}, "json"),
    ("POST", "/api/validate-yaml", {"content": "---\n" + "- " * 3000 + "x\n---\n"}, "json"),
    ("POST", "/lfs-verify", [1], "json"),
    ("POST", "/lfs-verify", {"oid": ["x"], "size": {}}, "json"),
    ("GET", f"{DS}/tree/main/%FF%FE", b"", "json"),
]
_TYPES = {"json": "application/json", "ndjson": "application/x-ndjson"}


@pytest.mark.usefixtures("fuzz_repo")
def test_each_known_malformed_input_is_a_4xx_and_the_connection_stays(raw: RawClient):
    for method, path, body, kind in CASES:
        answer = raw.request(method, path, body, content_type=_TYPES[kind])
        assert 400 <= answer.status < 500, (method, path, str(body)[:100], answer.body[:300])
        if answer.status not in (404, 405) or method != "GET":
            assert "error" in answer.json(), answer.body
            assert answer.headers.get("x-error-message")
        assert raw.request("GET", DS).status == 200


def test_multipart_completion_with_a_list_body_is_a_4xx(raw: RawClient, fuzz_repo: str):
    batch = raw.request(
        "POST",
        "/datasets/user/fuzz.git/info/lfs/objects/batch",
        {
            "operation": "upload",
            "transfers": ["basic", "multipart"],
            "objects": [{"oid": "b" * 64, "size": 100 * 2**20}],
        },
    ).json()
    href = batch["objects"][0]["actions"]["upload"]["href"]
    path = "/" + href.split("/", 3)[3]
    oid = "b" * 64
    for body in ([1, 2], {"oid": oid, "parts": "x"}, {"oid": oid, "parts": [{"partNumber": "1"}]}):
        answer = raw.request("POST", path, body)
        assert answer.status == 400, answer.body
    assert raw.request("GET", DS).status == 200


def test_a_deeply_nested_readme_is_refused_and_cannot_break_repo_info(
    hub_api: HfApi, raw: RawClient, fuzz_repo: str
):
    flow = "---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# deep\n"
    block = "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(5000)) + "---\n"
    for card in (flow, block):
        with pytest.raises((HfHubHTTPError, ValueError)):  # the client validates README.md first
            hub_api.upload_file(
                path_or_fileobj=card.encode(),
                path_in_repo="README.md",
                repo_id=fuzz_repo,
                repo_type="dataset",
            )
        content = base64.b64encode(card.encode()).decode()
        add = {"key": "file", "value": {"path": "README.md", "content": content}}
        answer = raw.request(
            "POST", f"{DS}/commit/main", _ndjson(HEADER, add), content_type="application/x-ndjson"
        )
        assert answer.status == 200, answer.body  # a client that skips validation
        info = hub_api.dataset_info(fuzz_repo)
        assert info.card_data is None or not info.card_data.to_dict()
        assert "README.md" in [s.rfilename for s in info.siblings or []]


# ------------------------------------------------------------------ the fuzz


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["int", "str", "float", "none", "bool", "list", "dict", "bigint", "hex"]
    kind = rng.choice(kinds if depth < 3 else kinds[:5])
    match kind:
        case "int":
            return rng.randint(-5, 5)
        case "bigint":
            return rng.choice([2**63, -(2**70), 10**30])
        case "str":
            return rng.choice(["", "main", "a/b", "/", "..", "refs/pr/1", "\n", "x" * 300, "é\0"])
        case "hex":
            return rng.choice([SHA, "0" * 40, "g" * 64])
        case "float":
            return rng.choice([0.5, -1.0, 1e308])
        case "none":
            return None
        case "bool":
            return rng.random() < 0.5
        case "list":
            return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        case _:
            keys = ["path", "oid", "size", "name", "type", "files", "objects", "paths", "value"]
            return {
                rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))
            }


TEMPLATES: dict[str, Any] = {
    "create": {"name": "n", "type": "dataset", "organization": "user", "private": False},
    "settings": {"private": False, "gated": False},
    "preupload": {"files": [{"path": "a.txt", "size": 1, "sample": "YQ=="}]},
    "batch": {
        "operation": "upload",
        "transfers": ["basic", "multipart"],
        "objects": [{"oid": SHA, "size": 100}],
        "hash_algo": "sha256",
    },
    "verify": {"oid": SHA, "size": 100},
    "paths": {"paths": ["a.txt"], "expand": True},
    "branch": {"startingPoint": "main"},
    "tag": {"tag": "t1", "message": "m"},
    "complete": {"oid": SHA, "parts": [{"partNumber": 1, "etag": "x"}]},
    "yaml": {"content": "---\na: 1\n---\n", "repoType": "dataset"},
    "squash": {"message": "m"},
    "move": {"fromRepo": "user/zz", "toRepo": "user/zz2", "type": "dataset"},
    "duplicate": {"repository": "user/fuzz", "private": False},
}
COMMIT_OPS = [
    HEADER,
    {"key": "file", "value": {"path": "f.txt", "content": "YQ==", "encoding": "base64"}},
    {"key": "lfsFile", "value": {"path": "g.bin", "oid": SHA, "algo": "sha256", "size": 100}},
    {"key": "deletedFile", "value": {"path": "f.txt"}},
    {"key": "deletedFolder", "value": {"path": "dir"}},
]


def _mutate(rng: random.Random, template: Any) -> Any:
    if not isinstance(template, dict | list) or rng.random() < 0.15:
        return _random_value(rng)
    copy: Any = json.loads(json.dumps(template))
    keys = list(range(len(copy))) if isinstance(copy, list) else list(copy)
    if not keys:
        return _random_value(rng)
    key = rng.choice(keys)
    roll = rng.random()
    if roll < 0.2 and isinstance(copy, dict):
        del copy[key]
    elif roll < 0.6:
        copy[key] = _mutate(rng, copy[key])
    else:
        copy[key] = _random_value(rng)
    return copy


def _body(rng: random.Random, template: str | None) -> bytes:
    roll = rng.random()
    if roll < 0.05:
        return rng.randbytes(rng.randint(0, 64))
    if roll < 0.08:
        return rng.choice([b"[" * 50_000, b'{"a":' * 50_000, b"\xff\xfe", b"null", b"1e9999"])
    if template == "commit":
        lines = [_mutate(rng, op) if rng.random() < 0.4 else op for op in COMMIT_OPS]
        rng.shuffle(lines)
        return b"\n".join(json.dumps(line).encode() for line in lines)
    if template is None:
        return json.dumps(_random_value(rng)).encode()
    return json.dumps(_mutate(rng, TEMPLATES[template])).encode()


def _targets(session: str) -> list[tuple[str, str, str | None]]:
    targets: list[tuple[str, str, str | None]] = [
        ("POST", "/api/validate-yaml", "yaml"),
        ("POST", "/api/repos/create", "create"),
        ("DELETE", "/api/repos/delete", "create"),
        ("POST", "/api/repos/move", "move"),
        ("GET", "/api/whoami-v2", None),
        ("GET", "/api/auth-check", None),
        ("GET", "/api/datasets", None),
        ("GET", "/api/models", None),
        ("POST", "/lfs-verify", "verify"),
        ("POST", f"/lfs-uploads/{session}", "complete"),
        ("PUT", f"/lfs-uploads/{session}/1", None),
        ("PUT", f"/lfs-uploads/{session}", None),
    ]
    for prefix, repo, git in (
        ("/api/datasets", "user/fuzz", "/datasets/user/fuzz.git"),
        ("/api/models", "user/fuzzm", "/user/fuzzm.git"),
    ):
        api = f"{prefix}/{repo}"
        targets += [
            ("GET", api, None),
            ("GET", f"{api}/revision/main", None),
            ("PUT", f"{api}/settings", "settings"),
            ("GET", f"{api}/refs", None),
            ("GET", f"{api}/commits/main", None),
            ("POST", f"{api}/branch/fz", "branch"),
            ("DELETE", f"{api}/branch/fz", None),
            ("POST", f"{api}/tag/main", "tag"),
            ("DELETE", f"{api}/tag/t1", None),
            ("POST", f"{api}/preupload/main", "preupload"),
            ("POST", f"{api}/commit/main", "commit"),
            ("POST", f"{api}/paths-info/main", "paths"),
            ("GET", f"{api}/tree/main", None),
            ("POST", f"{api}/super-squash/main", "squash"),
            ("POST", f"{git}/info/lfs/objects/batch", "batch"),
            ("POST", f"{prefix}/{repo}/duplicate", "duplicate"),
        ]
    return targets


_QUERIES = ["", "?expand=true", "?recursive=1&expand=1", "?limit=-1", "?limit=x", "?create_pr=1"]


@pytest.mark.usefixtures("fuzz_repo")
def test_fuzz_every_route_with_malformed_bodies(raw: RawClient):
    batch = raw.request(
        "POST", "/datasets/user/fuzz.git/info/lfs/objects/batch", TEMPLATES["batch"]
    )
    session = batch.json()["objects"][0]["actions"]["upload"]["href"].rsplit("/", 1)[1]
    targets = _targets(session)
    rng = random.Random(11)
    deadline = time.monotonic() + 15
    statuses: dict[int, int] = {}
    failures = []
    sent = 0
    while sent < 3000 and time.monotonic() < deadline:
        method, path, template = rng.choice(targets)
        body = b"" if method in ("GET", "DELETE") and rng.random() < 0.7 else _body(rng, template)
        content_type = "application/x-ndjson" if template == "commit" else "application/json"
        if rng.random() < 0.05:
            content_type = rng.choice(["text/plain", "application/octet-stream", ""])
        query = rng.choice(_QUERIES) if method == "GET" else ""
        answer = raw.request(method, path + query, body, content_type=content_type or None)
        sent += 1
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        if answer.status >= 500:
            failures.append((method, path, body[:200], answer.body[:300]))
    assert sent >= 500, f"only {sent} requests in the time budget"
    assert not failures, failures[:5]
    assert statuses, statuses
