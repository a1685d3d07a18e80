"""The random streams at their edges, against their definition: the n-th draw of the stream
of (seed, path) is XXH3-64 of the path's key and n as eight little-endian bytes, under the
seed; bounds and seeds at their limits are drawn or refused, never wrapped."""

from __future__ import annotations

import struct

import pytest
import xxhash

from memspec.core.rng import KeyedRandom, first_sample, stream_key


def _draw(seed: int, path: tuple, counter: int) -> int:
    return xxhash.xxh3_64_intdigest(stream_key(path) + struct.pack("<Q", counter), seed)


@pytest.mark.parametrize("seed", [0, 1, 2**64 - 1])
def test_every_draw_is_the_hash_of_its_key_and_counter(seed: int) -> None:
    path = ("fam", 3, "slot")
    rng = KeyedRandom(seed, path)
    assert [rng.next_u64() for _ in range(70)] == [_draw(seed, path, n) for n in range(70)]
    bounded = KeyedRandom(seed, path)
    assert [bounded.randbelow(2**64) for _ in range(70)] == \
        [_draw(seed, path, n) for n in range(70)]
    # Draws past the first 64 counters go on the same way, bounded or not.
    assert rng.randbelow(2**32) == _draw(seed, path, 70) % 2**32
    assert rng.randbelow(2**64) == _draw(seed, path, 71)
    child = KeyedRandom(seed, path).child("x", 1)
    assert child.next_u64() == _draw(seed, (*path, "x", 1), 0)
    keyed = KeyedRandom.keyed(seed, stream_key(path))
    assert keyed.next_u64() == _draw(seed, path, 0)


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_a_seed_outside_64_bits_is_refused(seed: int) -> None:
    for make in (lambda: KeyedRandom(seed), lambda: KeyedRandom.keyed(seed, b"k"),
                 lambda: first_sample(seed, b"k", [1, 2], 1)):
        with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\)"):
            make()


def test_bounds_at_their_limits() -> None:
    rng = KeyedRandom(3, ("bounds",))
    assert {rng.randbelow(1) for _ in range(5)} == {0}
    with pytest.raises(ValueError, match=r"n must be in \[1, 2\*\*64\]"):
        rng.randbelow(0)
    assert {rng.randint(4, 6) for _ in range(200)} == {4, 5, 6}
    assert {rng.randint(-2, -2) for _ in range(5)} == {-2}
    assert {rng.choice("xyz") for _ in range(200)} == set("xyz")


def test_a_sample_of_every_item_and_of_one_too_many() -> None:
    rng = KeyedRandom(3, ("sample",))
    assert sorted(rng.sample(range(6), 6)) == list(range(6))
    assert rng.sample(range(6), 0) == []
    with pytest.raises(ValueError, match="sample larger than population"):
        rng.sample(range(6), 7)
    items = list(range(40))
    assert first_sample(9, stream_key(("s",)), items, 5) == \
        KeyedRandom(9, ("s",)).sample(items, 5)
    positions = {tuple(KeyedRandom(9, ("s", k)).sample("abc", 3)) for k in range(120)}
    assert len(positions) == 6  # every order of three is drawn


def test_path_parts_are_typed_and_a_bool_or_float_is_refused() -> None:
    assert stream_key(("a", 1)) == b"sa\x1fi1\x1f"
    assert stream_key(()) == b"\x1f"
    for bad in (True, 1.0, None, b"x"):
        with pytest.raises(TypeError, match="random path parts must be str or int"):
            stream_key(("a", bad))


def test_a_part_of_a_str_subclass_is_keyed_as_its_text() -> None:
    class Text(str):
        pass

    assert stream_key((Text("fam"), 2)) == stream_key(("fam", 2))


def test_the_first_sample_takes_every_seed_of_64_bits_and_no_other() -> None:
    key = stream_key(["slot", 3])
    for seed in (0, 1, 2**64 - 1):
        assert first_sample(seed, key, list(range(10)), 3) == \
            KeyedRandom.keyed(seed, key).sample(list(range(10)), 3)
    for seed in (-1, 2**64):
        with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\)"):
            first_sample(seed, key, list(range(10)), 3)
