"""Memoryless policies that answer in words: what a system without the memory phases could
reply to any scorable item (regex, exact, canonical or choice), scored with the family's own
scorer.

Each sees only an item's view (``audit_view.item_view``): the visible phases, the last reply
and last call of the memory phases (which a system repeating itself would echo, not read),
and the family's declarations. A policy answers None where it has nothing to say (no earlier
reply to echo, no arm declared); an item it says nothing to is not one of its trials.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..analysis.policies import ABSTAIN_TEXT, oracle
from .audit_view import declared, salient_tokens, substitute_arguments

Item = Mapping[str, Any]
#: A memoryless policy: given the family's sampled views and one of them, its response.
ResponsePolicy = Callable[[Sequence[Item], Item], "str | None"]
#: A memoryless policy over a whole family: its response to each sampled item, by id.
FamilyPolicy = Callable[[Sequence[Item]], "dict[str, str | None]"]


def per_item(policy: ResponsePolicy) -> FamilyPolicy:
    """``policy`` applied to each item of a family."""
    def respond(items: Sequence[Item]) -> dict[str, str | None]:
        return {i["id"]: policy(items, i) for i in items}
    respond.__doc__ = policy.__doc__
    return respond


def declared_prior(items: Sequence[Item], item: Item) -> str | None:
    """The paradigm's or family's declared default answer (``answer.prior``)."""
    return item["answer"].get("prior")


def echo_last_reply(items: Sequence[Item], item: Item) -> str | None:
    """The last assistant reply of the latest memory phase that has one, repeated whatever
    the new request."""
    replies = item["replies"]
    return replies[list(replies)[-1]] if replies else None


def echo_first_reply(items: Sequence[Item], item: Item) -> str | None:
    """The last assistant reply of the first memory phase that has one (with
    ``echo_last_reply``, every earlier phase's reply is tried where there are two)."""
    replies = item["replies"]
    return replies[next(iter(replies))] if len(replies) > 1 else None


def echo_last_call(items: Sequence[Item], item: Item) -> str | None:
    """The last call made in the memory phases, its string arguments replaced by the values
    the probe names (its quoted spans or path-like tokens), in order."""
    if not item["last_call"]:
        return None
    return substitute_arguments(item["last_call"], salient_tokens(_last_request(item)))


def echo_probe(items: Sequence[Item], item: Item) -> str | None:
    """The probe's salient tokens (quoted spans, else path- or name-like tokens) copied back,
    else the probe itself."""
    request = _last_request(item)
    return " ".join(salient_tokens(request)) or request or None


def majority_answer(items: Sequence[Item]) -> dict[str, str | None]:
    """The right response most often given to the family's other sampled items (a default
    learned from the release, not from memory): a constant answer, an always-act policy.
    Counted once for the family; each item's own answer is taken out of the count."""
    answers = {i["id"]: oracle(i, 0) for i in items}
    counts = Counter(answers.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    picks: dict[str, str | None] = {}
    for item_id, own in answers.items():
        # Leave one out: only the top two answers can be the others' most frequent.
        left = sorted(((n - (a == own), a) for a, n in ranked), key=lambda t: (-t[0], t[1]))
        picks[item_id] = left[0][1] if left and left[0][0] > 0 and left[0][1] else None
    return picks


def abstain(items: Sequence[Item], item: Item) -> str | None:
    """Declines to answer (what never acting looks like where the family declares no
    arms)."""
    return ABSTAIN_TEXT


def _candidate_pick(item: Item, scores: Sequence[float]) -> str | None:
    """The candidate with the highest score, if exactly one has it."""
    candidates = item["answer"].get("candidates", ())
    if len(candidates) < 2:
        return None
    top = max(scores)
    tied = [c for c, s in zip(candidates, scores, strict=True) if s == top]
    return tied[0]["value"] if len(tied) == 1 else None


def fewest_violations(items: Sequence[Item], item: Item) -> str | None:
    """The one visible candidate with the fewest declared features (the properties a
    constraint may rule a candidate out by): in a menu where every other dish breaks the same
    restriction, the one that breaks none."""
    candidates = item["answer"].get("candidates", ())
    return _candidate_pick(item, [-len(c["features"]) for c in candidates])


def odd_one_out_candidate(items: Sequence[Item], item: Item) -> str | None:
    """The one visible candidate that lacks a feature every other candidate has."""
    candidates = item["answer"].get("candidates", ())
    if len(candidates) < 3:
        return None
    sets = [set(c["features"]) for c in candidates]
    scores = [0.0] * len(sets)
    for feature in sorted(set().union(*sets)):
        lacking = [k for k, s in enumerate(sets) if feature not in s]
        if len(lacking) == 1:
            scores[lacking[0]] += 1
    return _candidate_pick(item, scores) if max(scores) > 0 else None


def _last_request(item: Item) -> str:
    messages = [m for p in item["phases"] for m in p["messages"] if m["role"] == "user"]
    return messages[-1]["content"] if messages else ""


RESPONSE_POLICIES: dict[str, FamilyPolicy] = {
    "declared_prior": per_item(declared_prior),
    "echo_last_reply": per_item(echo_last_reply),
    "echo_first_reply": per_item(echo_first_reply),
    "echo_last_call": per_item(echo_last_call),
    "echo_probe": per_item(echo_probe),
    "majority_answer": majority_answer,
    "abstain": per_item(abstain),
    "fewest_violations": per_item(fewest_violations),
    "odd_one_out_candidate": per_item(odd_one_out_candidate),
}


def arm_of(item: Item) -> str | None:
    """"act" or "dont" for an item of an arm the family declares (``audit.arms``)."""
    arms = declared(item).get("arms")
    if not arms:
        return None
    value = item.get("axes", {}).get(arms["axis"])
    return "act" if value in arms["act"] else "dont" if value in arms["dont"] else None


class ArmResponses:
    """Per group, what acting (the response right in an act arm) and not acting (right in a
    don't-act arm) look like, collected while a family streams by: the always-act and
    never-act policies answer every item of the group with one of them."""

    def __init__(self) -> None:
        self.responses: dict[tuple[str, int], dict[str, str]] = {}
        self.shares: dict[str, Counter[str]] = {}

    def add(self, inst: Item) -> None:
        arm = arm_of(inst)
        if arm is None:
            return
        self.shares.setdefault(inst["family"], Counter())[arm] += 1
        self.responses.setdefault((inst["family"], inst["group"]), {}).setdefault(
            arm, oracle(inst, 0))

    def policy(self, arm: str) -> ResponsePolicy:
        def respond(items: Sequence[Item], item: Item) -> str | None:
            return self.responses.get((item["family"], item["group"]), {}).get(arm)
        respond.__doc__ = f"Always answers as the group's {arm} arm does."
        return respond

    def larger_share(self, family: str) -> float | None:
        """The share of the family's larger arm (None where it declares no arms): what a
        policy that always answers as one arm does reaches, whatever else it knows."""
        counts = self.shares.get(family)
        return max(self.share(family, arm) for arm in counts) if counts else None

    def share(self, family: str, arm: str) -> float:
        """The share of the family's instances in ``arm``: what always taking that arm's
        response is expected to score."""
        counts = self.shares.get(family, Counter())
        total = sum(counts.values())
        return counts[arm] / total if total else 0.0


def declared_policies(item: Item) -> dict[str, str]:
    """The responses of the reference policies the family declares for this item."""
    return dict(item["answer"].get("policies", {}))


def policy_expectation(item: Item, name: str) -> tuple[float | None, bool]:
    """A declared policy's expected score (None: the family's chance) and whether it is
    memoryless (so the audit runs it)."""
    spec = declared(item).get("policies", {}).get(name, {})
    return spec.get("expected"), spec.get("memoryless", True)
