"""Seeds and random generator states that survive ``json.dumps``."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
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


_DRAW_BLOCK = 1000  # the anchor draws sources 1000 at a time


class SourceDraws:
    """The source of each interleaved example, drawn as the anchor draws it.

    numpy's ``default_rng(seed).choice(len(probabilities), size=1000, p=...)``, block
    after block, so a seeded pipeline picks the anchor's sequence. `state` (JSON data:
    the generator's state before the current block and the draws taken from it)
    resumes at any draw. Probabilities that do not sum to 1 are normalised.

    Example:
        >>> draws = SourceDraws(0, [0.5, 0.5])
        >>> first = [draws.draw() for _ in range(3)]
        >>> again = SourceDraws(0, [0.5, 0.5], state=draws.state())
        >>> [draws.draw() for _ in range(3)] == [again.draw() for _ in range(3)]
        True
    """

    def __init__(self, seed: int | None, probabilities: Sequence[float], state: Any = None) -> None:
        import numpy as np

        total = math.fsum(probabilities)
        self._p = (
            list(probabilities) if abs(total - 1) < 1e-9 else [p / total for p in probabilities]
        )
        self._rng = np.random.default_rng(seed)
        self._block: list[int] | None = None
        self._offset = 0
        if state is not None:
            try:
                self._rng.bit_generator.state = state["start"]
                self._offset = int(state["offset"])
                if not 0 <= self._offset <= _DRAW_BLOCK:
                    raise ValueError(f"offset {self._offset} is not in 0..{_DRAW_BLOCK}")
            except (KeyError, TypeError, ValueError) as error:
                raise InvalidStateError(
                    f"interleave: the random generator state {state!r:.80} in the state_dict is "
                    f"malformed ({error}); pass a state_dict() saved from the same pipeline."
                ) from error
        self._start: Mapping[str, Any] = self._rng.bit_generator.state

    def draw(self) -> int:
        """The next source's index."""
        if self._block is None:  # the block the state's draws were taken from
            self._block = self._next_block()
        if self._offset >= _DRAW_BLOCK:
            self._start, self._offset = self._rng.bit_generator.state, 0
            self._block = self._next_block()
        source = self._block[self._offset]
        self._offset += 1
        return source

    def _next_block(self) -> list[int]:
        drawn = self._rng.choice(len(self._p), size=_DRAW_BLOCK, p=self._p)
        return [int(source) for source in drawn]

    def state(self) -> dict[str, Any]:
        """Where the draws are, as JSON data (pass it back as ``state=``)."""
        return {"start": self._start, "offset": self._offset}
