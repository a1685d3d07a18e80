"""A family may declare `streams: <id>`: every draw is keyed by that id instead of its own, so
a new version of a family under a new id draws (and renders) what the old version drew,
while its instances carry their own id. Checked on the bundled implicitmem-v5 families, which
draw their implicitmem-v4 twins' streams, against `memspec generate` of both."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

SEED = "80641"  # implicitmem-v4's and -v5's release seed


def _generate(family: str) -> list[dict]:
    result = run_cli("generate", family, "--seed", SEED, "--groups", "3")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("old, new", [
    ("implicitmem.procedural.date_style", "implicitmem.procedural5.date_style"),
    ("implicitmem.conditioning.jargon", "implicitmem.conditioning5.jargon"),
])
def test_a_family_drawing_another_ids_streams_renders_what_it_rendered(old: str, new: str
                                                                      ) -> None:
    before, after = _generate(old), _generate(new)
    assert [i["id"].replace(old, new) for i in before] == [i["id"] for i in after]
    assert all(i["family"] == new for i in after)
    assert [i["phases"] for i in before] == [i["phases"] for i in after]
    assert [i["fields"] for i in before] == [i["fields"] for i in after]
    # The draws differ between groups, so the equality above is not that of constants.
    assert len({json.dumps(i["phases"]) for i in after}) > 1
