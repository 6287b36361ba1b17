"""Repository cards: the YAML front matter of ``README.md``.

The Hub returns it as ``cardData`` in repo info and validates it before a commit
(``/api/validate-yaml``). This server parses it with PyYAML's safe loader,
hardened against hostile cards: aliases are refused (no "billion laughs"
expansion), nesting is capped at `MAX_DEPTH` levels and the front matter at
`MAX_FRONT_MATTER_BYTES`. Parsed cards are cached by the README's sha256, so a
card is parsed once per content, not once per request.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent
from yaml.nodes import Node

MAX_DEPTH = 32
MAX_FRONT_MATTER_BYTES = 256 * 1024
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class _CardLoader(yaml.SafeLoader):
    """The safe loader without aliases and with bounded nesting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: object) -> Node | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        if self.check_event(AliasEvent):
            event = self.peek_event()
            raise ComposerError(
                None, None, "YAML aliases (*name) are not accepted in cards", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"the card is nested more than {MAX_DEPTH} levels deep",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)  # pyright: ignore[reportArgumentType]
        finally:
            self._depth -= 1


def _parse(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(front matter as a JSON-ready dict or None, the error or None)."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return None, None
    source = found.group(1) or ""
    if len(source.encode()) > MAX_FRONT_MATTER_BYTES:
        return None, (
            f"README.md front matter is larger than {MAX_FRONT_MATTER_BYTES} bytes: keep the"
            " card's YAML metadata small."
        )
    loader = _CardLoader(source)
    try:
        data = loader.get_single_data()
    except (yaml.YAMLError, RecursionError) as e:
        return None, f"Invalid YAML in README.md front matter: {e}"
    finally:
        loader.dispose()
    if data is None:
        return None, None
    if not isinstance(data, dict):
        return None, f"README.md front matter must be a YAML mapping, got {type(data).__name__}"
    return json.loads(json.dumps(data, default=str)), None


def split_front_matter(text: str) -> tuple[str, str]:
    """``(front matter YAML, Markdown body)`` of a card; the YAML is ``""`` without one."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return "", text
    return found.group(1) or "", text[found.end() :]


def front_matter_errors(text: str) -> list[str]:
    """Problems with the card's YAML front matter (empty when there is none or it is valid)."""
    _, error = _parse(text)
    return [error] if error else []


def card_data(text: str) -> dict[str, Any] | None:
    """The card's front matter as a JSON-ready dict (dates as strings); None if absent/invalid."""
    data, _ = _parse(text)
    return data


class CardCache:
    """Parsed cards by README sha256 (content-addressed, so valid across commits and repos)."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries

    def card(self, sha256: str, read: Callable[[], bytes]) -> dict[str, Any] | None:
        """The card data of the README with content ``sha256`` (``read`` gives its bytes)."""
        with self._lock:
            if sha256 in self._entries:
                self._entries.move_to_end(sha256)
                return self._entries[sha256]
        data = card_data(read().decode("utf-8", errors="replace"))
        with self._lock:
            self._entries[sha256] = data
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return data
