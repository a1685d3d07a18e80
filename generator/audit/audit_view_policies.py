"""Memoryless policies of rules 2 that read what the view shows beyond the request: the tool
results (the memory phases' included, which the view counts as read when they return) and,
in a family with act/don't-act arms, whatever in the view tells the arms apart.

Each answers open items from an item's view alone (``audit_view.item_view``), so that what
the view calls visible is what some adversary reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .audit_responses import ArmResponses, FamilyPolicy, arm_of

Item = Mapping[str, Any]
_WORD = re.compile(r"[^\W\d_]{3,}")
#: Folds of a family's sampled groups for the arm classifier (each sampled item is one group).
ARM_FOLDS = 5


def echo_tool_result(items: Sequence[Item], item: Item) -> str | None:
    """The last tool result the view shows, repeated as the answer (a conditioning design
    whose earlier tool output already is the answer is passed by reading it)."""
    tools = [m["content"] for p in item["phases"] for m in p["messages"] if m["role"] == "tool"]
    return tools[-1] if tools else None


def _view_words(item: Item) -> dict[str, float]:
    text = "\n".join(m["content"] for p in item["phases"] for m in p["messages"])
    return {f"word={w.lower()}": 1.0 for w in sorted(set(_WORD.findall(text)))}


def arm_classifier(arms: ArmResponses) -> FamilyPolicy:
    """Which arm an item is in, told by a naive Bayes classifier over the words of its view
    (Bernoulli: which words occur) trained on the family's other folds of groups, then
    answered as that arm's response is:
    a word that only one arm's items say (a marker of the don't-act arm) is learnt, and the
    policy beats the larger arm's share that always taking one arm reaches."""
    def respond(items: Sequence[Item]) -> dict[str, str | None]:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.naive_bayes import BernoulliNB

        labelled = [i for i in items if arm_of(i) is not None]
        picks: dict[str, str | None] = {i["id"]: None for i in items}
        for fold in range(ARM_FOLDS):
            held = labelled[fold::ARM_FOLDS]
            train = [i for k, i in enumerate(labelled) if k % ARM_FOLDS != fold]
            if not held or len({arm_of(i) for i in train}) < 2:
                continue
            vectorizer = DictVectorizer()
            # Closed-form and fast: the audit fits it five times per family at every seed.
            model = BernoulliNB()
            model.fit(vectorizer.fit_transform([_view_words(i) for i in train]),
                      [arm_of(i) for i in train])
            guessed = model.predict(vectorizer.transform([_view_words(i) for i in held]))
            for item, arm in zip(held, guessed, strict=True):
                picks[item["id"]] = arms.policy(str(arm))(items, item)
        return picks
    return respond
