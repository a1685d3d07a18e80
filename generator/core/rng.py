"""Counter-based randomness keyed by the release seed and a path.

Every random choice is a pure function of (seed, path, counter): ``path`` names what is being
drawn (``family / group / slot / draw``), hashed with XXH3-64. Nothing depends on global state,
on the order in which items are generated, or on how many processes generate them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

import xxhash

T = TypeVar("T")

_U64 = 1 << 64
_digest = xxhash.xxh3_64_intdigest
#: A draw's counter as the eight little-endian bytes its key ends with.
_counter_bytes = struct.Struct("<Q").pack
_SEP = b"\x1f"


#: The encoding of the string parts met lately (slot names, families): looked up, not redone.
_ENCODED: dict[str, bytes] = {}


def _encode_part(part: str | int) -> bytes:
    # Type-tag each part so that the int 1 and the string "1" are different keys.
    kind = type(part)
    if kind is str:
        encoded = _ENCODED.get(part)  # type: ignore[arg-type]
        if encoded is None:
            if len(_ENCODED) >= 4096:
                _ENCODED.clear()
            encoded = _ENCODED[part] = b"s" + part.encode("utf-8")  # type: ignore[union-attr,index]
        return encoded
    # Every random stream's path is encoded here: the exact types skip the checks.
    if kind is not str and kind is not int and (
            isinstance(part, bool) or not isinstance(part, (str, int))):
        raise TypeError(f"random path parts must be str or int, not {kind.__name__}")
    if isinstance(part, int):
        return b"i" + str(part).encode("ascii")
    return b"s" + part.encode("utf-8")


class KeyedRandom:
    """A stream of random numbers for one path under one seed.

    ``child(...)`` derives the stream of a longer path; draws on one stream never affect another.
    """

    __slots__ = ("_seed", "_key", "_counter")

    def __init__(self, seed: int, path: Sequence[str | int] = ()) -> None:
        if not 0 <= seed < _U64:
            raise ValueError("seed must be in [0, 2**64)")
        self._seed = seed
        self._key = stream_key(path)
        self._counter = 0

    @classmethod
    def keyed(cls, seed: int, key: bytes) -> KeyedRandom:
        """The stream whose key (``stream_key`` of its path) is ``key``."""
        if not 0 <= seed < _U64:
            raise ValueError("seed must be in [0, 2**64)")
        new = cls.__new__(cls)
        new._seed, new._key, new._counter = seed, key, 0
        return new

    def child(self, *parts: str | int) -> KeyedRandom:
        """The independent stream for this path extended by ``parts``."""
        new = KeyedRandom.__new__(KeyedRandom)
        new._seed = self._seed
        new._key = self._key + stream_key(parts)
        new._counter = 0
        return new

    def next_u64(self) -> int:
        """The next 64-bit unsigned value of this stream."""
        value = _digest(self._key + _counter_bytes(self._counter), self._seed)
        self._counter += 1
        return value

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n), without modulo bias (n at most 2**64)."""
        if not 0 < n <= _U64:
            raise ValueError("n must be in [1, 2**64]")
        values, self._counter = _below(self._key, self._seed, self._counter, n, 1)
        return values[0]

    def randint(self, low: int, high: int) -> int:
        """A uniform integer in [low, high] inclusive."""
        return low + self.randbelow(high - low + 1)

    def choice(self, items: Sequence[T]) -> T:
        """One element of ``items``, uniformly."""
        return items[self.randbelow(len(items))]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A uniformly shuffled copy of ``items`` (Fisher-Yates, from the last position down:
        position i swaps with one drawn below i + 1)."""
        out = list(items)
        if len(out) < 2:
            return out
        draws, self._counter = _below(self._key, self._seed, self._counter, len(out),
                                      len(out) - 1)
        for i, j in zip(range(len(out) - 1, 0, -1), draws, strict=True):
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct positions of ``items`` drawn without replacement, in draw order."""
        out, self._counter = _sample(self._key, self._seed, self._counter, items, k)
        return out


def first_sample(seed: int, key: bytes, items: Sequence[T], k: int) -> list[T]:
    """``KeyedRandom.keyed(seed, key).sample(items, k)``: ``k`` distinct items, the first
    draws of the stream ``key``, without a stream object made for them (a slot drawn for every
    group takes a few)."""
    if not 0 <= seed < _U64:
        raise ValueError("seed must be in [0, 2**64)")
    return _sample(key, seed, 0, items, k)[0]


def stream_key(path: Sequence[str | int]) -> bytes:
    """The key of the stream of ``path``; a child stream's key is its parent's followed by
    the key of the parts it adds."""
    return _SEP.join(map(_encode_part, path)) + _SEP


def number_keys(before: Sequence[str | int], after: Sequence[str | int]
                ) -> Callable[[int], bytes]:
    """What gives ``stream_key((*before, n, *after))`` for a number ``n``, with the parts
    around it encoded once (a family's groups: one key a group)."""
    head = stream_key(before) if before else b""
    tail = _SEP + (stream_key(after) if after else b"")

    def key(number: int) -> bytes:
        return head + _encode_part(number) + tail

    return key


def _sample(key: bytes, seed: int, counter: int, items: Sequence[T], k: int
            ) -> tuple[list[T], int]:
    """``k`` distinct items drawn from the stream ``key`` from ``counter`` on (a Fisher-Yates
    shuffle stopped after k steps: position i swaps with one drawn from i on), with the
    counter after them."""
    if k > len(items):
        raise ValueError("sample larger than population")
    pool = list(items)
    offsets, counter = _below(key, seed, counter, len(pool), k)
    for i, offset in enumerate(offsets):
        j = i + offset
        pool[i], pool[j] = pool[j], pool[i]
    # Step i settles position i and later steps swap only positions after it: the first k
    # positions are the draws, in order.
    return pool[:k], counter


#: Bounds up to _SAFE_BOUND keep every value below _SAFE without working out their limit.
_SAFE_BOUND = 1 << 32
_SAFE = _U64 - _SAFE_BOUND
#: The bytes of the counters every stream starts with, made once.
_FIRST_COUNTERS = [_counter_bytes(counter) for counter in range(64)]


def _below(key: bytes, seed: int, counter: int, n: int, count: int) -> tuple[list[int], int]:
    """``count`` uniform integers, in [0, n), then [0, n - 1) and so on down (the draws of a
    shuffle), drawn from the stream ``key`` from ``counter`` on, with the counter after them.
    Values from the top part of 2**64 that a bound does not divide are drawn again, so every
    result is equally likely."""
    values = []
    for bound in range(n, n - count, -1):
        # Every value below ``safe`` is under the limit (2**64 less 2**64 mod bound, which is
        # above 2**64 - bound): the limit is worked out only for the rare value past it.
        safe = _SAFE if bound <= _SAFE_BOUND else 0
        while True:
            value = _digest(key + (_FIRST_COUNTERS[counter] if counter < 64 else
                                   _counter_bytes(counter)), seed)
            counter += 1
            if value < safe or value < _U64 - _U64 % bound:
                values.append(value % bound)
                break
    return values, counter
