"""``manage.py import_verdicts``: other judges' verdicts become a ``model`` reviewer's
labels; every verdict that cannot be put on a claim is listed with its reason (SPEC §4.4).

The run is ``judging_run`` (tests/conftest.py): questions valid, missing, unknown,
prose, rate-limited, timeout; each answer has claim 1 "<q> one." citing P1,
claim 2 "<q> two." citing P2, claim 3 "<q> three." without citation."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from labeling.judges.grades import run_judges
from labeling.models import AuditEvent, Claim, JudgeRun, Label, Reviewer, ReviewerKind


def _write(tmp_path, name: str, lines: list) -> str:
    path = tmp_path / name
    if name.endswith(".csv"):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n",
                        encoding="utf-8")
    return str(path)


def _import(path: str, *args: str) -> str:
    out = StringIO()
    call_command("import_verdicts", path, "--run", "judged", "--reviewer", "ragas", *args, stdout=out)
    return out.getvalue()


def _labels() -> dict[str, tuple[str, str]]:
    return {text: (value, why) for text, value, why in Label.objects.filter(reviewer__username="ragas",
                                                                           is_current=True)
            .values_list("claim__text", "value", "justification")}


def test_rows_are_matched_by_index_or_text_and_the_rest_listed(judging_run, tmp_path):
    """8 verdicts: 2 match (valid 1 by index; valid 2 by text in another case and
    spacing, score 0.2 < 0.5 → UNSUPPORTED); 6 listed: an uncited claim, an unknown
    question, claim 9 of 3, a text no claim has, and two verdicts for one claim."""
    path = _write(tmp_path, "verdicts.jsonl", [
        {"question_id": "valid", "claim_index": 1, "label": "supported", "reason": "P1 says it"},
        {"question_id": "valid", "claim": "VALID   two.", "score": 0.2},
        {"question_id": "valid", "claim_index": 3, "label": "SUPPORTED"},
        {"question_id": "nope", "claim_index": 1, "label": "SUPPORTED"},
        {"question_id": "missing", "claim_index": 9, "label": "SUPPORTED"},
        {"question_id": "missing", "claim": "Something else.", "label": "SUPPORTED"},
        {"question_id": "prose", "claim_index": 1, "label": "SUPPORTED"},
        {"question_id": "prose", "claim_index": 1, "label": "UNSUPPORTED"},
    ])
    assert not Reviewer.objects.filter(username="ragas").exists()
    report = _import(path, "--threshold", "0.5", "--model", "ragas-0.2 faithfulness")
    assert _labels() == {"valid one.": ("SUPPORTED", "P1 says it"), "valid two.": ("UNSUPPORTED", "")}
    assert Reviewer.objects.get(username="ragas").kind == ReviewerKind.MODEL
    assert "8 verdict(s) read (rows); labeled 2 claim(s) of run 'judged' as 'ragas', 0 unchanged, " \
           "6 not matched to a claim" in report
    unmatched = [line.strip() for line in report.splitlines() if line.startswith("  not imported")]
    assert unmatched == [
        "not imported: line 3: question 'valid', claim 3: the claim has no citation: it is UNCITED by rule, "
        "nobody judges it",
        "not imported: line 4: question 'nope', claim 1: run 'judged' has no answer to this question",
        "not imported: line 5: question 'missing', claim 9: the answer has no claim 9 (it has 3)",
        "not imported: line 6: question 'missing', claim 'Something else.': no claim of the answer has this text",
        "not imported: line 7: question 'prose', claim 1: the claim has another verdict further on: neither is used",
        "not imported: line 8: question 'prose', claim 1: a second verdict for the claim of line 7: neither is used",
    ]
    judge_run = JudgeRun.objects.get()
    assert (judge_run.source, judge_run.model, judge_run.claims_labeled, judge_run.claims_missing) == (
        "import", "ragas-0.2 faithfulness", 2, 6)
    assert judge_run.details["threshold"] == 0.5 and len(judge_run.details["unmatched"]) == 6
    (event,) = AuditEvent.objects.filter(run=judging_run).exclude(action="import_answers")
    assert (event.action, event.target, event.detail["labeled"], event.detail["unmatched"]) == (
        "import_labels", "verdicts.jsonl", 2, 6)
    # Importing the same file again changes nothing.
    assert "labeled 0 claim(s) of run 'judged' as 'ragas', 2 unchanged" in _import(path, "--threshold", "0.5")
    assert Label.objects.filter(reviewer__username="ragas").count() == 2
    assert [row.labels for row in run_judges(run=judging_run)] == [2]


def test_bad_lines_are_all_reported_and_nothing_is_imported(judging_run, tmp_path):
    path = _write(tmp_path, "bad.jsonl", [
        {"question_id": "valid", "claim_index": 1, "score": 0.9},
        {"question_id": "valid", "claim_index": 2, "label": "MAYBE"},
        {"claim_index": 1, "label": "SUPPORTED"},
        {"question_id": "valid", "label": "SUPPORTED"},
        "not json",
        {"question_id": "valid", "claim_index": 1, "label": "SUPPORTED"},
    ])
    with pytest.raises(CommandError) as raised:
        _import(path)
    message = str(raised.value)
    assert "5 problem(s), nothing was imported" in message
    for expected in ("line 1: score: a score (0.9) needs --threshold T",
                     "line 2: label: 'MAYBE' is not a label this import maps to a verdict",
                     "line 3: question_id: missing", "line 4: claim_index: missing",
                     "line 5: (line): not a JSON object"):
        assert expected in message
    assert not Reviewer.objects.filter(username="ragas").exists() and JudgeRun.objects.count() == 0


def test_csv_rows_with_scores(judging_run, tmp_path):
    """CSV with scores: 0.7 ≥ 0.7 → SUPPORTED, 0.69 → UNSUPPORTED."""
    path = _write(tmp_path, "scores.csv", ["question_id,claim_index,score,reason",
                                           "timeout,1,0.7,close enough", "timeout,2,0.69,"])
    _import(path, "--threshold", "0.7")
    assert _labels() == {"timeout one.": ("SUPPORTED", "close enough"), "timeout two.": ("UNSUPPORTED", "")}


def test_phoenix_annotations_map_their_labels_honestly(judging_run, tmp_path):
    """Nested result/metadata and flat rows; 'hallucinated' → UNSUPPORTED, 'factual' →
    SUPPORTED; the explanation is the reason. A label with no honest mapping
    ('relevant') is refused."""
    path = _write(tmp_path, "phoenix.jsonl", [
        {"metadata": {"question_id": "unknown", "claim_index": 1},
         "result": {"label": "factual", "score": 1, "explanation": "P1 states it."}},
        {"question_id": "unknown", "claim_index": 2, "label": "hallucinated", "score": 0,
         "explanation": "P2 is about something else."},
    ])
    assert "read (phoenix)" in _import(path)
    assert _labels() == {"unknown one.": ("SUPPORTED", "P1 states it."),
                         "unknown two.": ("UNSUPPORTED", "P2 is about something else.")}
    bad = _write(tmp_path, "relevance.jsonl", [{"question_id": "unknown", "claim_index": 1,
                                                "result": {"label": "relevant", "explanation": "on topic"}}])
    with pytest.raises(CommandError, match="'relevant' is not a label this import maps to a verdict"):
        _import(bad)


def test_llm_judge_logs_citelab_and_ragas_shapes(judging_run, tmp_path):
    """A logged Citelab reply (JSON text, ids as autolabel sent them) and a RAGAS
    faithfulness log whose second statement is the judge's own wording: 3 labeled,
    that statement listed, never forced onto a claim."""
    valid_one = Claim.objects.get(text="valid one.").pk
    path = _write(tmp_path, "log.jsonl", [
        {"question_id": "valid", "response": json.dumps(
            {"verdicts": [{"id": str(valid_one), "label": "UNSUPPORTED", "reason": "P1 is vaguer."}]})},
        {"question_id": "missing", "statements": [
            {"statement": "Missing one.", "verdict": 1, "reason": "in P1"},
            {"statement": "Missing two.", "verdict": 0, "reason": "not in P2"},
            {"statement": "The passage talks about missing things.", "verdict": 1, "reason": "?"}]},
    ])
    report = _import(path, "--format", "llm-log")
    assert _labels() == {"valid one.": ("UNSUPPORTED", "P1 is vaguer."), "missing one.": ("SUPPORTED", "in P1"),
                         "missing two.": ("UNSUPPORTED", "not in P2")}
    assert ("line 2: question 'missing', claim 'The passage talks about missing things.': no claim of the answer "
            "has this text") in report


def test_dry_run_writes_nothing(judging_run, tmp_path):
    path = _write(tmp_path, "v.jsonl", [{"question_id": "valid", "claim_index": 1, "label": "SUPPORTED"}])
    report = _import(path, "--dry-run")
    assert "would label 1 claim(s)" in report and "dry run: nothing was written" in report
    assert Label.objects.filter(reviewer__username="ragas").count() == 0 and JudgeRun.objects.count() == 0
    assert not Reviewer.objects.filter(username="ragas").exists()


def test_a_person_cannot_receive_imported_verdicts(judging_run, tmp_path):
    Reviewer.objects.create_user(username="ragas")
    path = _write(tmp_path, "v.jsonl", [{"question_id": "valid", "claim_index": 1, "label": "SUPPORTED"}])
    with pytest.raises(CommandError, match="'ragas' is a human reviewer, not an automated labeler"):
        _import(path)


def test_a_claim_marked_not_factual_takes_no_verdict(judging_run, tmp_path):
    Claim.objects.filter(text="valid one.").update(factual=False)
    path = _write(tmp_path, "v.jsonl", [{"question_id": "valid", "claim_index": 1, "label": "SUPPORTED"}])
    assert "claim 1: the claim is marked not a factual claim: it is outside every count" in _import(path)
    assert _labels() == {}
