"""Request payloads: JSON refused past a fixed depth before the parser goes deep."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from dagster_ds.hub.server._errors import HubBadRequestError
from dagster_ds.hub.server._payload import MAX_JSON_DEPTH, parse_json


def _recurse(levels: int) -> int:
    return 0 if levels == 0 else 1 + _recurse(levels - 1)


@pytest.fixture
def finalizer_stack_errors() -> Iterator[list[BaseException]]:
    """Errors of a stand-in finalizer that needs 100 frames, run at every collection."""
    errors: list[BaseException] = []

    def finalizer(phase: str, info: dict[str, int]) -> None:
        try:
            _recurse(100)
        except RecursionError as e:
            errors.append(e)

    thresholds = gc.get_threshold()
    gc.callbacks.append(finalizer)
    gc.set_threshold(50)
    try:
        yield errors
    finally:
        gc.callbacks.remove(finalizer)
        gc.set_threshold(*thresholds)


@pytest.mark.parametrize("body", [b"[" * 50_000, b'{"a":' * 50_000, "[" * 50_000])
def test_a_deep_body_is_refused_without_leaving_collections_short_of_stack(
    body: bytes | str, finalizer_stack_errors: list[BaseException]
):
    with pytest.raises(HubBadRequestError, match=f"at most {MAX_JSON_DEPTH} levels"):
        parse_json(body, "The body")
    assert not finalizer_stack_errors


def test_json_at_the_depth_limit_is_parsed_and_past_it_refused():
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(deepest.encode(), "The body") is not None
    with pytest.raises(HubBadRequestError, match="nested too deeply"):
        parse_json(("[" + deepest + "]").encode(), "The body")


@pytest.mark.parametrize("body", [b"\xff\xfe\x00", b"{", b'"unterminated', b"[1,]"])
def test_a_body_that_is_not_json_is_a_bad_request(body: bytes):
    with pytest.raises(HubBadRequestError, match="is not JSON"):
        parse_json(body, "The body")


def test_utf16_json_is_read_like_utf8():
    assert parse_json('{"paths": ["a"]}'.encode("utf-16"), "The body") == {"paths": ["a"]}
