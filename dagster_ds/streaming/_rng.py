"""Seeds and random generator states that survive ``json.dumps``."""

from __future__ import annotations

import random
from typing import Any

import xxhash

from dagster_ds.errors import InvalidStateError


def derive_seed(seed: int, *salt: int | str) -> int:
    """A new 64-bit seed from ``seed`` and a salt (an epoch, a worker id), stable everywhere."""
    return xxhash.xxh3_64_intdigest(repr((seed, *salt)).encode())


def random_seed() -> int:
    """A fresh 64-bit seed from the operating system's randomness."""
    return random.SystemRandom().getrandbits(64)


def rng_state(rng: random.Random) -> list[Any]:
    """The generator's state as JSON data (a list of ints)."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def restore_rng(state: Any, node: str) -> random.Random:
    """A generator in the state `rng_state` returned."""
    try:
        version, internal, gauss = state
        rng = random.Random()
        rng.setstate((version, tuple(internal), gauss))
    except (TypeError, ValueError) as error:
        raise InvalidStateError(
            f"{node}: the random generator state in the state_dict is malformed ({error}); pass "
            "a state_dict() saved from the same pipeline."
        ) from error
    return rng
