"""Repository cards: the YAML front matter of ``README.md``.

The Hub returns it as ``cardData`` in repo info and validates it before a commit
(``/api/validate-yaml``); this server does both with PyYAML's safe loader.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def front_matter_errors(text: str) -> list[str]:
    """Problems with the card's YAML front matter (empty when there is none or it is valid)."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return []
    try:
        data = yaml.safe_load(found.group(1) or "")
    except yaml.YAMLError as e:
        return [f"Invalid YAML in README.md front matter: {e}"]
    if data is not None and not isinstance(data, dict):
        return [f"README.md front matter must be a YAML mapping, got {type(data).__name__}"]
    return []


def card_data(text: str) -> dict[str, Any] | None:
    """The card's front matter as a JSON-ready dict (dates as strings); None if absent/invalid."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return None
    try:
        data = yaml.safe_load(found.group(1) or "")
    except yaml.YAMLError:
        return None
    return json.loads(json.dumps(data, default=str)) if isinstance(data, dict) else None
