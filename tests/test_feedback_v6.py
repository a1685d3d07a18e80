"""feedback-v6: each class of issue #52's feedback findings, fixed in the specs: the implicit
feedback written into the logged messages; declarative datasets whose test needs what the
feedback taught (the relayed reading the user liked or copied, not the one they disliked or
ignored); long documents that do not hold the sentence the user relayed; metric requests
whose metric answer is not in the request; quote_first logs that never repeat a request;
a random feedback order balanced by design, with `none` actions; the audit passing the
release and refusing it with a planted leak; and a dataset's judge scores normalised over
the run's own results, checked against a hand computation."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import judged_run, release_instances, run_cli
from memspec.analysis.policies import POLICIES
from memspec.analysis.scoring import is_correct
from memspec.audit.run import audit_instances, describe_failure

RELEASE = "feedback-v6"
NOTE = re.compile(r"^\[Implicit feedback: (like|dislike|copy|none)\]")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """feedback-v6 frozen on its own (and verified against its committed manifest), so this
    module needs no build of every release."""
    out = tmp_path_factory.mktemp("v6")
    result = run_cli("freeze", RELEASE, "--out", str(out), "--workers", "2", timeout=1200)
    assert result.returncode == 0, result.stderr
    return out / RELEASE


@pytest.fixture(scope="module")
def instances(release: Path) -> list[dict]:
    return release_instances(release)


def _history(inst: dict) -> list[dict]:
    return next(p["messages"] for p in inst["phases"] if p["phase"] == "history")


def _task(inst: dict) -> str:
    return next(p["messages"] for p in inst["phases"] if p["phase"] == "task")[0]["content"]


def _kind(inst: dict) -> str:
    return inst["family"].split(".")[2]


def _sessions(inst: dict) -> list[list[dict]]:
    """The logged sessions of a record, each its messages after the session's header."""
    out: list[list[dict]] = []
    for message in _history(inst):
        if message["role"] == "system":
            out.append([])
        else:
            out[-1].append(message)
    return out


def _rounds(session: list[dict]) -> list[tuple[str, str, str]]:
    """(request, reply, action) per round of a logged session."""
    rounds, request = [], None
    for index, message in enumerate(session):
        if message["role"] == "assistant":
            note = NOTE.match(session[index + 1]["content"])
            assert session[index + 1]["role"] == "user" and note, session[index + 1]
            rounds.append((request, message["content"], note.group(1)))
        elif message["role"] == "user" and not NOTE.match(message["content"]):
            request = message["content"]
    return rounds


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _longest_shared_run(a: str, b: str) -> int:
    """The longest run of consecutive words of ``a`` that ``b`` holds word for word."""
    words, other = _words(a), " " + " ".join(_words(b)) + " "
    best = 0
    for start in range(len(words)):
        length = best + 1
        while start + length <= len(words) and \
                " " + " ".join(words[start:start + length]) + " " in other:
            best, length = length, length + 1
    return best


def test_feedback_is_written_into_the_logged_messages(instances: list[dict]) -> None:
    """Every reply of the logs is followed by the user's turn naming its implicit action,
    the same sequence the record's `feedback` field holds (v4 and v5 kept the declarative
    datasets' actions out of the messages)."""
    assert len(instances) == 480
    for inst in instances:
        shown = [action for session in _sessions(inst) for _, _, action in _rounds(session)]
        assert shown == [f["action"] for f in inst["feedback"]], inst["id"]


def test_declarative_tests_need_what_the_feedback_taught(instances: list[dict]) -> None:
    """A declarative record's answer is the reading the user liked or copied in the session
    it depends on; the other reading they relayed drew a dislike or no reaction and is in the
    document too, so remembering the session without its feedback answers wrongly, and the
    relay's order tells nothing."""
    declarative = [i for i in instances if _kind(i) == "declarative"]
    assert len(declarative) == 280
    right_first = Counter()
    for inst in declarative:
        answer = inst["answer"]
        assert is_correct(answer, POLICIES["oracle"](inst, 0))
        assert not is_correct(answer, answer["policies"]["unconfirmed_reading"])
        record = inst["fields"]["depends_on"]
        sessions = _history(inst)
        headers = [m["content"] for m in sessions if m["role"] == "system"]
        index = next(k for k, h in enumerate(headers) if record in h) if record != "none" else 0
        rounds = _rounds(_sessions(inst)[index])
        relayed = re.findall(r'"([^"]+)"', rounds[0][0])
        assert len(relayed) == 2, rounds[0][0]
        taught = {re.findall(r'"([^"]+)"', reply)[0] for _, reply, action in rounds
                  if action in ("like", "copy")}
        ruled_out = {re.findall(r'"([^"]+)"', reply)[0] for _, reply, action in rounds
                     if action in ("dislike", "none")}
        assert len(taught) == 1 and not taught & ruled_out, inst["id"]
        right_first[relayed[0] in taught] += 1
    # Which of the two the user relays first is a coin: a system that takes the first (or
    # the second) reading without the feedback is right about half the time.
    assert 0.35 <= right_first[True] / len(declarative) <= 0.65


def test_long_documents_do_not_copy_the_relayed_sentence(instances: list[dict]) -> None:
    """No sentence the user wrote in the logs appears in the test document: the longest run
    of words the two share stays short (v4 and v5 copied the whole sentence, 40 of 40)."""
    runs: dict[str, int] = {}
    for inst in instances:
        if _kind(inst) != "declarative":
            continue
        said = " ".join(m["content"] for m in _history(inst)
                        if m["role"] == "user" and not NOTE.match(m["content"]))
        runs[inst["id"]] = _longest_shared_run(said, _task(inst))
    assert len(runs) == 280
    # What the two still share is a topic's name ("balance and walking confidence in adults
    # with mild arthritis", nine words, the longest): the study's subject, which a paraphrase
    # keeps; never a sentence.
    assert max(runs.values()) <= 9, max(runs.items(), key=lambda kv: kv[1])


def test_metric_requests_do_not_contain_their_answer(instances: list[dict]) -> None:
    """A metric request names an imperial quantity only: the request itself, echoed, fails,
    and the metric value the gold wants is not in it, so what passes is the convention the
    feedback taught applied to a conversion."""
    items = [i for i in instances if i["family"].endswith("metric_replies")]
    assert len(items) == 40
    for inst in items:
        task, answer = _task(inst), inst["answer"]
        assert not is_correct(answer, task)
        metric = re.search(r"\d+(?:\.\d+)?", answer["example"]).group(0)
        assert metric not in re.findall(r"\d+(?:\.\d+)?", task), (task, answer["example"])
        assert not is_correct(answer, answer["policies"]["chat_default"])


def test_quote_first_logs_never_repeat_a_request(instances: list[dict]) -> None:
    for inst in instances:
        if not inst["family"].endswith("quote_first"):
            continue
        requests = [m["content"] for m in _history(inst)
                    if m["role"] == "user" and not NOTE.match(m["content"])]
        assert len(requests) == len(set(requests)), inst["id"]


def test_feedback_order_is_random_and_balanced_by_design(instances: list[dict]) -> None:
    """Every session number ends with the wanted reply for exactly five of the ten users of a
    dataset (so imitating the last reply is right for half of the records), while the
    sessions' patterns are drawn at random, not a cycle of six: the patterns of a user's
    three sessions vary beyond what a cycle gives."""
    for family in sorted({i["family"] for i in instances}):
        items = [i for i in instances if i["family"] == family]
        tests = [i for i in items if i["fields"]["split"] == "test"]
        patterns = []
        for inst in tests:
            by_session: dict[int, list[str]] = defaultdict(list)
            for record in inst["feedback"]:
                by_session[record["session"]].append(record["action"])
            patterns.append(tuple(tuple(by_session[s]) for s in (1, 2, 3)))
            assert all(set(v) & {"like", "copy"} for v in by_session.values())
        ends_liked = Counter()
        for triple in patterns:
            for session, actions in enumerate(triple):
                ends_liked[session] += actions[-1] in ("like", "copy")
        assert ends_liked == {0: 5, 1: 5, 2: 5}, family
        assert len(set(patterns)) >= 8, family
        actions = Counter(r["action"] for i in tests for r in i["feedback"])
        assert actions["none"] > 0 and actions["dislike"] > 0, family


def test_recency_is_right_for_exactly_half(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "recency.jsonl"
    assert run_cli("respond", str(release), "--policy", "recency_form", "--out",
                   str(out)).returncode == 0
    result = run_cli("score", str(release), str(out), "--by", "family,split", "--format",
                     "json")
    assert result.returncode == 0, result.stderr
    rows = {(g["key"]["family"], g["key"]["split"]): g["metrics"]
            for g in json.loads(result.stdout)["groups"]}
    procedural = {f for f, _ in rows if ".procedural." in f}
    assert len(procedural) == 5
    for family in procedural:
        assert rows[(family, "train")]["accuracy"] == 0.5
        assert rows[(family, "test")]["accuracy"] == 0.5


def test_audit_passes_the_release(release: Path) -> None:
    result = run_cli("audit", str(release), "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["exempt"] == {} and report["skipped"] == []
    assert len({r["family"] for r in report["rows"]}) == 12
    for row in report["rows"]:
        if row["check"].startswith(("echo_", "declared:")):
            assert row["accuracy"] <= row["chance"], row


@pytest.mark.parametrize("family", ["declarative.study_titles", "procedural.metric_replies"])
def test_audit_finds_a_planted_leak(instances: list[dict], family: str) -> None:
    """The answer planted at the head of the request of every record of a dataset is found
    (the same records without it pass: test_audit_passes_the_release)."""
    items = [i for i in instances if i["family"].endswith(family)]
    planted = json.loads(json.dumps(items))
    for inst in planted:
        task = next(p for p in inst["phases"] if p["phase"] == "task")["messages"][0]
        task["content"] = f"(For reference: {inst['answer']['example']})\n\n{task['content']}"
    refusals = [describe_failure(f) for f in audit_instances(planted, 0).failures()]
    assert any(family in line for line in refusals), refusals


def test_judge_scores_normalised_over_the_run_match_a_hand_computation(
        release: Path, instances: list[dict], tmp_path: Path) -> None:
    """MemoryBench's normalisation, min-max over a dataset's own results, beside the fixed
    1-10 reference the release declares."""
    responses = tmp_path / "oracle.jsonl"
    assert run_cli("respond", str(release), "--policy", "oracle", "--out",
                   str(responses)).returncode == 0
    scores, unblind, judgments = judged_run(release, responses, tmp_path,
                                            lambda index: 2 + (index * 5) % 7)
    by_id = {i["id"]: i for i in instances}
    per_family: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for request_id, score in scores.items():
        inst = by_id[unblind[request_id]["response"]]
        per_family[inst["family"]].append((inst["fields"]["domain"], score))

    def report(*extra: str) -> dict:
        result = run_cli("score", str(release), str(responses), "--judgments", str(judgments),
                         "--unblind", str(tmp_path / "requests.jsonl.unblind.json"),
                         "--normalize", "minmax", "--dataset-key", "family", "--by",
                         "domain", "--format", "json", *extra)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    within, declared = defaultdict(list), defaultdict(list)
    for values in per_family.values():
        low, high = min(s for _, s in values), max(s for _, s in values)
        assert (low, high) != (1, 10)  # the run's extremes differ from the declared ones
        for domain, score in values:
            within[domain].append((score - low) / (high - low))
            declared[domain].append((score - 1) / 9)
    for extra, expected, used in ((("--normalize-within-run",), within, "within-run"),
                                  ((), declared, "declared")):
        scored = report(*extra)
        rows = {g["key"]["domain"]: g["metrics"] for g in scored["groups"]}
        for domain, values in expected.items():
            assert rows[domain]["judge_score_norm"] == pytest.approx(sum(values) / len(values))
        assert set(scored["normalisation"]["reference"].values()) == {used}


def test_memorybench_export_loads_as_upstream_reads_it(release: Path, tmp_path: Path) -> None:
    from upstream_checks import memorybench_problems

    out = tmp_path / "export"
    result = run_cli("export", str(release), "--format", "memorybench", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert memorybench_problems(out) == []
    assert len(list(out.glob("*/train.json"))) == 12
    def column(value: object) -> list:  # a nested column, as JSON text or as it is
        return json.loads(value) if isinstance(value, str) else value

    for path in out.glob("*/test.json"):
        for record in json.loads(path.read_text()):
            actions = [a for r in column(record["implicit_feedback"])
                       for a in r["implicit_actions"]]
            dialog = column(record["dialog"])
            shown = [NOTE.match(m["content"]).group(1) for m in dialog
                     if m["role"] == "user" and NOTE.match(m["content"])]
            assert shown == actions
