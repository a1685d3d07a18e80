"""The scores a frozen release gets, digested: every instance of it answered by each
reference policy and by replies in the styles chat models write (the forms the reading
stage reads differently), each outcome (answered, correct, acting on a distractor) folded
into one hash per kind of reply. The digests of the releases frozen before the reading
stage are committed (tests/data/frozen_scoring.json), computed by the code of that time."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memspec.analysis.policies import POLICIES
from memspec.analysis.score_outcome import outcome

#: The newest releases frozen before the reading stage: their scores must never change.
FROZEN = ("example-v3", "feedback-v4", "implicitmem-v4", "memorychecks-v4", "trustgap-v4")
#: Instances of each release digested (the first, by id): every family of the small ones,
#: a spread of the large one.
LIMIT = 2000


def _letter(answer: Mapping[str, Any], value: str) -> str:
    return chr(65 + answer["options"].index(value))


def _styled(name: str) -> Callable[[Mapping[str, Any]], str]:
    """A reply to an instance in a chat style, built on the oracle's and the memoryless
    policy's replies."""
    def respond(instance: Mapping[str, Any]) -> str:
        answer = instance["answer"]
        right = POLICIES["oracle"](instance, 0)
        other = POLICIES["memoryless"](instance, 0)
        if answer["scorer"] == "choice" and "gold" in answer:
            gold = answer["gold"]
            stale = next((o for o in answer["options"] if o != gold), gold)
            right, other = f"{_letter(answer, gold)}", f"{_letter(answer, stale)}"
            ask = f"Do you mean {gold} or {stale}? Tell me which and I'll send it."
        else:
            ask = f"Do you mean {right} or {other}?"
        return {
            "answer_form": f"Let me check the note.\n\nANSWER: {right}",
            "markdown": f"Sure! Here it is:\n\n**{right}**\n\nHope this helps!",
            "fenced": f"```\n{right}\n```",
            "question": ask,
            "rejected": f"Not {other}, but {right}.",
            "hedge": f"Probably {right}, but I'm not certain.",
        }[name]
    return respond


KINDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    **{name: (lambda i, p=policy: p(i, 0)) for name, policy in sorted(POLICIES.items())},
    **{name: _styled(name) for name in ("answer_form", "markdown", "fenced", "question",
                                         "rejected", "hedge")},
}


def digest(instances: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per kind of reply: a hash of every instance's outcome, in id order."""
    chosen = sorted(instances, key=lambda i: i["id"])[:LIMIT]
    found = {}
    for kind, respond in KINDS.items():
        rows = []
        for instance in chosen:
            o = outcome(instance, respond(instance))
            rows.append([instance["id"], o.answered, o.correct, o.relied])
        text = json.dumps(rows, separators=(",", ":"))
        found[kind] = hashlib.sha256(text.encode()).hexdigest()
    return found
