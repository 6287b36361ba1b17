"""Names of new branches and tags: git's ``check-ref-format`` rules, and ref conflicts.

The Hub is git underneath: a branch or tag name must be a valid git ref name
(``git check-ref-format --branch``), and names with ``/`` are accepted there
(``dev/experiment``), as on huggingface.co. Beyond git's own rules, names that
would make a revision ambiguous are refused: ``HEAD``, a full ``refs/...`` name
and a 40-hex commit id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dagster_ds.hub.server._errors import HubBadRequestError
from dagster_ds.hub.server._objects import COMMIT_ID

_FORBIDDEN_CHARACTERS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_MAX_BYTES = 255


def _problem(name: str) -> str | None:
    """What makes ``name`` an invalid branch or tag name, or None if it is valid."""
    components = name.split("/")
    forbidden = _FORBIDDEN_CHARACTERS.search(name)
    checks = (
        (not name, "it is empty"),
        (
            forbidden is not None,
            f"it contains {forbidden.group()!r}" if forbidden else "",
        ),
        (name.startswith("/") or name.endswith("/"), "it starts or ends with '/'"),
        ("//" in name, "it contains '//'"),
        (".." in name, "it contains '..'"),
        ("@{" in name, "it contains '@{'"),
        (name == "@", "it is '@'"),
        (name.endswith("."), "it ends with '.'"),
        (any(part.startswith(".") for part in components), "a component starts with '.'"),
        (any(part.endswith(".lock") for part in components), "a component ends with '.lock'"),
        (name.startswith("-"), "it starts with '-'"),
        (name == "HEAD", "'HEAD' names the current revision"),
        (name.startswith("refs/"), "it is a full ref name"),
        (COMMIT_ID.match(name) is not None, "it looks like a commit id"),
        (len(name.encode("utf-8", errors="surrogatepass")) > _MAX_BYTES, "it is too long"),
    )
    return next((reason for bad, reason in checks if bad), None)


def validate_ref_name(name: str, what: str) -> str:
    """Check the name of a new branch or tag (``what``) and return it.

    Raises:
        HubBadRequestError: ``name`` breaks a rule of git's ``check-ref-format``,
            or is ``HEAD``, a full ``refs/...`` name or a commit id.
    """
    problem = _problem(name)
    if problem is not None:
        raise HubBadRequestError(
            f"Invalid {what} name {name[:200]!r}: {problem}. Use letters, digits, '-', '_', '.'"
            " and '/' between components, like 'v1.0' or 'dev/experiment' (git's ref-name"
            " rules: no spaces or control characters, none of ~ ^ : ? * [ \\, no '..', '@{' or"
            " '//', no component starting with '.' or ending with '.lock'; not 'HEAD')."
        )
    return name


def conflicting_ref(ref: str, existing: Iterable[str]) -> str | None:
    """An existing ref that ``ref`` cannot live beside, as in git: ``a`` and ``a/b``."""
    for other in sorted(existing):
        if other.startswith(f"{ref}/") or ref.startswith(f"{other}/"):
            return other
    return None
