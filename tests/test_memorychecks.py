"""The bundled validity kit: counterfeit, no-memory and symmetric-binding controls, asserted on
the built files and scored with the reference policies (statistics checked against scipy)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from scipy.stats import binomtest

from conftest import run_cli

RELEASE = "memorychecks-v1"
RECOGNITION = "memorychecks.recognition.altered_detail"
BINDING = "memorychecks.binding.topic_partner"
COUNTERFEITS = ("foreign_1", "foreign_2", "foreign_3", "scrambled_1", "scrambled_2",
                "scrambled_3")


def _document(inst: dict) -> str:
    return "\n".join(m["content"] for phase in inst["phases"] if phase["phase"] == "document"
                     for m in phase["messages"])


def _records(text: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The records of a dump: every line made of exactly len(columns) '|'-separated fields."""
    rows = [line.split("|") for line in text.splitlines() if line.count("|") ==
            len(columns) - 1 and re.match(r"\d{4}-\d\d-\d\d", line)]
    return [dict(zip(columns, row, strict=True)) for row in rows]


LIFE = ("date", "time", "kind", "person", "place", "topic")


def _by_corpus(instances: list[dict], family: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        if inst["family"] == family:
            out[inst["fields"]["corpus"]].append(inst)
    return out


def _documents(insts: list[dict]) -> dict[str, str]:
    """The one document of each condition in a corpus (the same for every probe)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for inst in insts:
        seen[inst["axes"]["document"]].add(_document(inst))
    assert all(len(texts) == 1 for texts in seen.values()), "a corpus shares its documents"
    return {condition: texts.pop() for condition, texts in seen.items()}


def test_two_corpora_of_24_probes_in_every_condition(instances: list[dict]) -> None:
    counts = Counter((i["family"], i["fields"]["corpus"], i["axes"]["document"])
                     for i in instances)
    for corpus in ("A", "B"):
        for condition in ("veridical", *COUNTERFEITS, "none"):
            assert counts[(RECOGNITION, corpus, condition)] == 24
        for condition in ("veridical", "corrupted", "none"):
            assert counts[(BINDING, corpus, condition)] == 24
    assert len(instances) == 2 * 24 * 8 + 2 * 24 * 3


def test_corpora_are_independent_agents(instances: list[dict]) -> None:
    docs = {c: _documents(insts) for c, insts in _by_corpus(instances, RECOGNITION).items()}
    people = {c: {r["person"] for r in _records(d["veridical"], LIFE)} for c, d in docs.items()}
    assert people["A"] != people["B"]
    assert docs["A"]["veridical"] != docs["B"]["veridical"]


def test_veridical_document_is_a_dated_dump_of_thirty_days(instances: list[dict]) -> None:
    for insts in _by_corpus(instances, RECOGNITION).values():
        rows = _records(_documents(insts)["veridical"], LIFE)
        assert len(rows) == 72
        assert len({r["date"] for r in rows}) == 30
        assert len({r["person"] for r in rows}) >= 6 and len({r["place"] for r in rows}) >= 4
        assert [(r["date"], r["time"]) for r in rows] == sorted((r["date"], r["time"])
                                                                for r in rows)


def test_counterfeits_are_matched_in_length_within_five_percent(instances: list[dict]) -> None:
    for insts in _by_corpus(instances, RECOGNITION).values():
        docs = _documents(insts)
        reference = len(docs["veridical"])
        for condition in COUNTERFEITS:
            assert abs(len(docs[condition]) / reference - 1) <= 0.05, condition
        assert docs["none"] == ""


def test_foreign_lives_share_no_named_entity_with_the_real_one(instances: list[dict]) -> None:
    for insts in _by_corpus(instances, RECOGNITION).values():
        docs = _documents(insts)
        real = _records(docs["veridical"], LIFE)
        entities = {r["person"] for r in real} | {r["place"] for r in real}
        name_tokens = {token for r in real for token in r["person"].split()}
        foreign_docs = [docs[f"foreign_{k}"] for k in (1, 2, 3)]
        assert len(set(foreign_docs)) == 3, "three seeds, three different forgeries"
        for doc in foreign_docs:
            fake = _records(doc, LIFE)
            assert len(fake) == len(real)
            assert not entities & ({r["person"] for r in fake} | {r["place"] for r in fake})
            assert not any(re.search(rf"\b{re.escape(t)}\b", doc) for t in name_tokens)
            assert not any(e in doc for e in entities)
            assert not {r["topic"] for r in real} & {r["topic"] for r in fake}


def test_scrambles_keep_the_entries_but_no_original_triple(instances: list[dict]) -> None:
    for insts in _by_corpus(instances, RECOGNITION).values():
        docs = _documents(insts)
        real = _records(docs["veridical"], LIFE)
        triples = {(r["date"], r["person"], r["place"]) for r in real}
        scrambles = [docs[f"scrambled_{k}"] for k in (1, 2, 3)]
        assert len(set(scrambles)) == 3
        for doc in scrambles:
            rows = _records(doc, LIFE)
            assert not triples & {(r["date"], r["person"], r["place"]) for r in rows}
            for column in ("person", "place", "date", "topic"):
                assert Counter(r[column] for r in rows) == Counter(r[column] for r in real)


def test_recognition_probes_one_altered_detail_dates_masked(instances: list[dict]) -> None:
    for insts in _by_corpus(instances, RECOGNITION).values():
        veridical = [i for i in insts if i["axes"]["document"] == "veridical"]
        document = _documents(insts)["veridical"]
        rows = _records(document, LIFE)
        people, places = {r["person"] for r in rows}, {r["place"] for r in rows}
        altered = Counter()
        for inst in veridical:
            answer = inst["answer"]
            gold, other = answer["gold"], answer["distractors"]["altered"]
            assert sorted(answer["options"]) == sorted([gold, other])
            assert gold not in document
            assert gold.startswith("[date masked]") and not re.search(r"\d{4}-\d\d", gold)
            # One named entity of the real life is swapped for another: nothing else changes.
            in_gold = {e for e in people | places if e in gold}
            in_other = {e for e in people | places if e in other}
            (removed,), (added,) = in_gold - in_other, in_other - in_gold
            assert gold.replace(removed, added) == other
            kind = "person" if removed in people else "place"
            assert (added in people) == (kind == "person")
            assert kind == inst["fields"]["altered_field"]
            # The real line matches a record of the document; the altered one matches none.
            topic = next(r for r in rows if r["topic"] in gold)
            assert topic["person"] in gold and topic["place"] in gold
            altered[kind] += 1
        assert altered == {"person": 12, "place": 12}
        assert Counter(i["answer"]["gold_index"] for i in veridical) == {0: 12, 1: 12}


def test_no_probe_text_is_inside_any_injected_document(instances: list[dict]) -> None:
    for inst in instances:
        document = _document(inst)
        for option in inst["answer"]["options"]:
            if inst["family"] == RECOGNITION:
                assert option not in document


def test_binding_corpus_is_symmetric(instances: list[dict]) -> None:
    columns = ("date", "time", "partner", "topic", "length")
    for insts in _by_corpus(instances, BINDING).values():
        first = insts[0]["fields"]
        partners = (first["partner_a"], first["partner_b"])
        history = _records(first["history"], columns)
        assert len(history) == 144 and len({r["topic"] for r in history}) == 144
        assert Counter(r["partner"] for r in history) == {partners[0]: 72, partners[1]: 72}
        docs = _documents(insts)
        veridical = _records(docs["veridical"], columns)
        corrupted = _records(docs["corrupted"], columns)
        assert len(veridical) == 30 and len({r["date"] for r in veridical}) == 30
        assert all(r in history for r in veridical)
        swap = {partners[0]: partners[1], partners[1]: partners[0]}
        assert corrupted == [{**r, "partner": swap[r["partner"]]} for r in veridical]
        assert docs["none"] == ""
        probes = [i for i in insts if i["axes"]["document"] == "veridical"]
        topics = {r["topic"]: r["partner"] for r in veridical}
        gold = Counter()
        for inst in probes:
            topic = re.search(r"about (.+?) this month", _probe(inst)).group(1)
            assert topics[topic] == inst["answer"]["gold"]
            gold[inst["answer"]["gold"]] += 1
        assert gold == {partners[0]: 12, partners[1]: 12}
        assert Counter(i["answer"]["gold_index"] for i in probes) == {0: 12, 1: 12}


def _probe(inst: dict) -> str:
    return next(m["content"] for p in inst["phases"] if p["phase"] == "probe"
                for m in p["messages"])


def _score(release: Path, policy: str, tmp_path: Path) -> dict:
    responses = tmp_path / f"{policy}.jsonl"
    assert run_cli("respond", str(release), "--policy", policy, "--out",
                   str(responses)).returncode == 0
    result = run_cli("score", str(release), str(responses), "--by", "family,corpus,document",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    cells = {(g["key"]["family"], g["key"]["corpus"], g["key"]["document"]): g["metrics"]
             for g in json.loads(result.stdout)["groups"]}
    per_corpus = run_cli("score", str(release), str(responses), "--by", "family,corpus",
                         "--format", "json")
    tests = {(g["key"]["family"], g["key"]["corpus"]): g["metrics"]["tests"]
             for g in json.loads(per_corpus.stdout)["groups"]}
    return {"cells": cells, "tests": tests}


def test_memory_follower_tracks_the_document_not_the_past(release: Path,
                                                          tmp_path: Path) -> None:
    scored = _score(release, "memory-follower", tmp_path)
    for corpus in ("A", "B"):
        cells = {d: m for (f, c, d), m in scored["cells"].items() if (f, c) == (BINDING, corpus)}
        assert cells["veridical"]["accuracy"] == 1.0
        assert cells["corrupted"]["accuracy"] == 0.0
        assert cells["corrupted"]["reliance"] == 1.0
        low, high = cells["none"]["accuracy_ci"]
        assert low <= 0.5 <= high
        tests = scored["tests"][(BINDING, corpus)]
        mcnemar = next(t for t in tests if t["test"] == "mcnemar_exact")
        assert (mcnemar["a"], mcnemar["b"], mcnemar["only_a"], mcnemar["only_b"]) == \
            ("veridical", "corrupted", 24, 0)
        # Exact McNemar on 24 discordant pairs is a two-sided binomial test at one half.
        assert mcnemar["p_value"] == pytest.approx(binomtest(24, 24, 0.5).pvalue)
        assert mcnemar["p_adjusted"] < 0.001
        arms = {t["arm"]["document"]: t for t in tests if t["test"] == "sign_flip_vs_chance"}
        # One item a group and chance 1/2: the sign-flip test of the group means is the
        # exact binomial test of the items.
        assert arms["none"]["p_value"] == pytest.approx(binomtest(12, 24, 0.5).pvalue)
        assert arms["none"]["p_adjusted"] >= arms["none"]["p_value"]
        recognition = {d: m for (f, c, d), m in scored["cells"].items()
                       if (f, c) == (RECOGNITION, corpus)}
        assert recognition["veridical"]["accuracy"] == 1.0
        for condition in ("foreign_1", "foreign_2", "foreign_3", "none"):
            low, high = recognition[condition]["accuracy_ci"]
            assert low <= 0.5 <= high


def test_score_table_names_the_arm_of_each_test_against_chance(release: Path,
                                                               tmp_path: Path) -> None:
    responses = tmp_path / "follower.jsonl"
    assert run_cli("respond", str(release), "--policy", "memory-follower", "--out",
                   str(responses)).returncode == 0
    table = run_cli("score", str(release), str(responses), "--by", "family,corpus").stdout
    rows = [line for line in table.splitlines()
            if "sign_flip_vs_chance" in line and f"{BINDING}, corpus=A" in line]
    # The follower is always wrong with the corrupted document and always right with the
    # veridical one: a reader must see which row is which.
    assert any("document=corrupted: mean 0.000 over 24 groups" in row for row in rows), table
    assert any("document=veridical: mean 1.000 over 24 groups" in row for row in rows), table


def test_a_memoryless_system_is_at_chance_in_every_arm(release: Path, tmp_path: Path) -> None:
    scored = _score(release, "memoryless", tmp_path)
    assert len(scored["cells"]) == 2 * 8 + 2 * 3
    for metrics in scored["cells"].values():
        low, high = metrics["accuracy_ci"]
        assert low <= 0.5 <= high
    for tests in scored["tests"].values():
        for test in tests:
            if test["test"] == "sign_flip_vs_chance":
                assert test["p_value"] > 0.05
