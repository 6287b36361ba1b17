"""Dataset cards: hostile YAML (aliases, depth, size) is refused and cannot slow repo_info."""

from __future__ import annotations

import base64
import json

import pytest
from huggingface_hub import HfApi

from dagster_ds.hub.server._cards import MAX_FRONT_MATTER_BYTES, CardCache, card_data
from tests.hub.server.conftest import RawClient

REPO = "user/cards"


def _alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "---\n" + "\n".join(lines) + "\n---\n# bomb\n"


def _commit_readme(raw: RawClient, text: str) -> None:
    header = {"key": "header", "value": {"summary": "card"}}
    content = base64.b64encode(text.encode()).decode()
    add = {"key": "file", "value": {"path": "README.md", "content": content}}
    body = "\n".join(json.dumps(line) for line in (header, add))
    answer = raw.request(
        "POST", f"/api/datasets/{REPO}/commit/main", body, content_type="application/x-ndjson"
    )
    assert answer.status == 200, answer.body


@pytest.mark.parametrize(
    "card",
    [
        _alias_bomb(5),
        "---\nx: " + "[" * 100 + "]" * 100 + "\n---\n",
        "---\nx: '" + "y" * (MAX_FRONT_MATTER_BYTES + 10) + "'\n---\n",
    ],
    ids=["aliases", "nesting", "size"],
)
def test_hostile_cards_are_refused_and_repo_info_stays_small(
    card: str, hub_api: HfApi, raw: RawClient
):
    hub_api.create_repo(REPO, repo_type="dataset")
    answer = raw.request("POST", "/api/validate-yaml", {"content": card, "repoType": "dataset"})
    assert answer.status == 400
    assert answer.json()["errors"]
    _commit_readme(raw, card)
    info = raw.request("GET", f"/api/datasets/{REPO}")
    assert info.status == 200
    assert "cardData" not in info.json()
    assert len(info.body) < 10_000


def test_plain_cards_still_parse_and_are_cached():
    text = "---\nlicense: mit\ndate: 2024-01-01\ntags: [a, b]\n---\n# card\n"
    assert card_data(text) == {"license": "mit", "date": "2024-01-01", "tags": ["a", "b"]}
    cache = CardCache(max_entries=2)
    reads = []

    def read() -> bytes:
        reads.append(1)
        return text.encode()

    assert cache.card("s1", read) == cache.card("s1", read)
    assert len(reads) == 1
