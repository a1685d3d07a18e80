"""Reference policies: small deterministic stand-ins for a model whose scores are known in
advance, so that a benchmark and its scorer can be tested end to end.

Each works from an instance's answer block alone. Families tell them what memory and evidence
say through the answer's ``remembered``, ``evidence`` and ``prior`` hints, so no policy knows
anything about a particular family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ABSTAIN_TEXT = "I don't know."
#: What a policy answers to a judge-scored item that declares no example response.
JUDGE_PLACEHOLDER = "(a reference policy's response to a judge-scored item)"
Policy = Callable[[Mapping[str, Any], int], str]


def _label(index: int) -> str:
    return chr(ord("A") + index)


def act_on(answer: Mapping[str, Any], value: str) -> str:
    """A response that acts on ``value``: its option label for a choice, else the value."""
    options = answer.get("options")
    if answer["scorer"] == "choice" and options and value in options:
        index = options.index(value)
        return f"{_label(index)}) {value}"
    return value


def _fallback(answer: Mapping[str, Any]) -> str:
    """What a system with neither memory nor evidence does: the prior, else the first option."""
    if "prior" in answer:
        return act_on(answer, answer["prior"])
    if answer.get("options"):
        return act_on(answer, answer["options"][0])
    return ""


def oracle(instance: Mapping[str, Any], seed: int) -> str:
    """Answers the gold (the declared example response where the gold is a pattern)."""
    answer = instance["answer"]
    if "example" in answer:
        return answer["example"]
    if "gold" in answer:
        return act_on(answer, answer["gold"])
    return ""


def memoryless(instance: Mapping[str, Any], seed: int) -> str:
    """Never uses remembered content: follows authoritative evidence where there is some,
    otherwise the prior (or the first option)."""
    answer = instance["answer"]
    if "evidence" in answer:
        return act_on(answer, answer["evidence"])
    return _fallback(answer)


def memory_follower(instance: Mapping[str, Any], seed: int) -> str:
    """Always acts on the stored value, stale or not; without one, behaves like memoryless."""
    answer = instance["answer"]
    if "remembered" in answer:
        return act_on(answer, answer["remembered"])
    return memoryless(instance, seed)


def position_biased(instance: Mapping[str, Any], seed: int) -> str:
    """Always the first option (the prior where there are no options)."""
    answer = instance["answer"]
    if answer.get("options"):
        return act_on(answer, answer["options"][0])
    return _fallback(answer)


def random_policy(instance: Mapping[str, Any], seed: int) -> str:
    """A uniformly random option (or one of gold/distractors), seeded per instance."""
    answer = instance["answer"]
    from ..core.rng import KeyedRandom  # on use: `memspec --help` lists the policies only

    rng = KeyedRandom(seed, ("policy", "random", instance["id"]))
    if answer.get("options"):
        return act_on(answer, rng.choice(answer["options"]))
    candidates = [oracle(instance, seed), *answer.get("distractors", {}).values()]
    return rng.choice([c for c in candidates if c] or [""])


def abstainer(instance: Mapping[str, Any], seed: int) -> str:
    """Always declines to answer."""
    return ABSTAIN_TEXT


def _judged_apart(policy: Policy) -> Policy:
    """Judge-scored items have no programmatic right answer: every answering policy gives the
    family's example response there (or a fixed placeholder), so they count as answered."""

    def respond(instance: Mapping[str, Any], seed: int) -> str:
        answer = instance["answer"]
        if answer["scorer"] == "judge":
            return answer.get("example", JUDGE_PLACEHOLDER)
        return policy(instance, seed)

    respond.__doc__ = policy.__doc__
    return respond


POLICIES: dict[str, Policy] = {
    "oracle": _judged_apart(oracle),
    "memoryless": _judged_apart(memoryless),
    "memory-follower": _judged_apart(memory_follower),
    "position-biased": _judged_apart(position_biased),
    "random": _judged_apart(random_policy),
    "abstainer": abstainer,
}
