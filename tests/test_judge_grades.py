"""Grading a judge on the real ExpertQA labels in fixtures/ (SPEC §4.4): a judge
whose verdicts are the experts' labels with a known number of flips, run
through the fake OpenAI-compatible server, grades to the hand-computed kappa,
UNSUPPORTED precision and recall — on the grading selector and in
``agreement --format json``'s ``judge`` key — and a second pass gives the
judge's self-agreement."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from labeling.judges.grades import (
    claim_texts,
    judge_labels,
    judge_self_agreement,
    reference_labels,
    run_judge_grade,
    run_judges,
)
from labeling.judges.protocol import JudgeEndpoint
from labeling.judges.runs import judge_run_create, judge_run_execute
from labeling.models import JudgeRun, JudgeRunStatus, Label, Reviewer, Run
from scoring.judge_grading import grade_judge
from tests.agreement_data import EXPERT
from tests.counted_run import counted_run
from tests.judge_server import JudgeServer

RUN = "post_hoc_sphere_gpt4"
FLIP = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}


def _expert_labels(run: Run) -> dict[str, str]:
    """Claim id (str) → the experts' label, for every cited claim of ``run`` in question/claim order
    (pending claims: absent)."""
    return {str(claim_id): value for claim_id, value in
            Label.objects.filter(claim__answer__run=run, reviewer__username=EXPERT, is_current=True)
            .exclude(value="UNCITED").order_by("claim__answer__question_key", "claim__index")
            .values_list("claim_id", "value")}


def _verdicts_with_flips(run: Run, *, to_unsupported: int, to_supported: int) -> dict[str, str]:
    """The experts' labels with the first ``to_unsupported`` SUPPORTED and the first
    ``to_supported`` UNSUPPORTED flipped; the cited claims the experts left pending
    are SUPPORTED."""
    verdicts = {str(pk): "SUPPORTED" for pk in run.answers.values_list("claims__pk", flat=True)}
    left = {"SUPPORTED": to_unsupported, "UNSUPPORTED": to_supported}
    for claim_id, value in _expert_labels(run).items():
        if left[value]:
            left[value] -= 1
            value = FLIP[value]
        verdicts[claim_id] = value
    return verdicts


def _judge(run: Run, verdicts: dict[str, str], *, relabel: bool = False) -> None:
    with JudgeServer(labels_by_id=verdicts) as server:
        judge_run = judge_run_create(run=run, reviewer_name="flip-judge", relabel=relabel,
                                     endpoint=JudgeEndpoint(model="fake", base_url=server.base_url))
        judge_run = judge_run_execute(judge_run.pk, api_key="k")
    assert judge_run.status == "done" and judge_run.answers_failed == 0


@pytest.fixture
def judged(expertqa_project) -> Run:
    """post_hoc_sphere_gpt4 (fixtures/README.md): 180 cited claims, 171 labeled by the
    experts, 92 SUPPORTED and 79 UNSUPPORTED, 9 pending. The judge flips 6 SUPPORTED
    and 4 UNSUPPORTED and calls the 9 pending claims SUPPORTED."""
    run = Run.objects.get(project=expertqa_project, name=RUN)
    experts = list(_expert_labels(run).values())
    assert (len(experts), experts.count("SUPPORTED"), experts.count("UNSUPPORTED")) == (171, 92, 79)
    _judge(run, _verdicts_with_flips(run, to_unsupported=6, to_supported=4))
    return run


# Hand computation on the 171 claims both labeled (the 9 pending claims have no human label):
#   confusion (rows experts, columns judge): S→S 92 − 6 = 86, S→U 6, U→S 4, U→U 79 − 4 = 75.
#   agreement (86 + 75)/171 = 161/171; judge margins S 86 + 4 = 90, U 6 + 75 = 81.
#   kappa: chance = 92·90 + 79·81 = 8280 + 6399 = 14679;
#          (171·161 − 14679)/(171² − 14679) = (27531 − 14679)/(29241 − 14679) = 12852/14562 ≈ 0.88257.
#   UNSUPPORTED calls: precision 75/81 ≈ 0.92593, recall 75/79 ≈ 0.94937, F1 = 2·75/(81 + 79) = 0.9375;
#   human UNSUPPORTED called SUPPORTED (decorative citations let through): 4.
KAPPA = 12852 / 14562


def test_flipped_judge_grades_to_the_hand_computed_figures(judged):
    judge = Reviewer.objects.get(username="flip-judge")
    assert Label.objects.filter(reviewer=judge, is_current=True).count() == 180
    grade = run_judge_grade(run=judged, judge=judge)
    assert (grade.n, grade.reference_only) == (171, 0)
    assert (grade.agreement.numerator, grade.agreement.denominator) == (161, 171)
    assert grade.kappa == pytest.approx(KAPPA, abs=1e-12)
    low, high = grade.kappa_ci95
    assert low < KAPPA < high and high - low == pytest.approx(2 * 1.959964 * grade.kappa_se, abs=1e-6)
    assert (grade.precision.numerator, grade.precision.denominator) == (75, 81)
    assert (grade.recall.numerator, grade.recall.denominator) == (75, 79)
    assert grade.f1 == pytest.approx(0.9375, abs=1e-12)
    assert grade.missed_unsupported == 4
    assert grade.confusion.to_numpy().tolist() == [[86, 6], [4, 75]]
    assert len(grade.disagreements) == 10
    # The words of the ten disagreements, read for them alone after grading, are those of a grade
    # made from every claim's text, the judge's every reason and the humans' every justification.
    eager = grade_judge(reference_labels(judged), judge_labels(judged, judge), claims=claim_texts(judged),
                        judge_name=judge.username, reference_name="humans")
    assert grade.to_dict() == eager.to_dict()
    shown = grade.to_dict()["disagreements"]
    assert all(row["claim"] and row["reason"] for row in shown)
    assert sum(bool(row["justification"]) for row in shown) == 2


def test_agreement_json_gains_the_judge_grade(judged, capsys):
    """Against the named expert the judge has the same 171 claims: the same figures."""
    call_command("agreement", "--project", "expertqa", "--run", RUN, "--reviewer", EXPERT,
                 "--reviewer", "flip-judge", "--format", "json")
    result = json.loads(capsys.readouterr().out)
    judge = result["judge"]
    assert (judge["judge"], judge["reference"], judge["n"]) == ("flip-judge", EXPERT, 171)
    assert judge["kappa"] == pytest.approx(KAPPA, abs=1e-12) and result["kappa"] == pytest.approx(KAPPA)
    assert judge["unsupported"]["precision"] == {"value": 75 / 81, "numerator": 75, "denominator": 81}
    assert judge["unsupported"]["recall"] == {"value": 75 / 79, "numerator": 75, "denominator": 79}
    assert judge["unsupported"]["f1"] == pytest.approx(0.9375)
    assert judge["confusion"] == {"SUPPORTED": {"SUPPORTED": 86, "UNSUPPORTED": 6},
                                  "UNSUPPORTED": {"SUPPORTED": 4, "UNSUPPORTED": 75}}
    assert [d["reference"] + ">" + d["judge"] for d in judge["disagreements"]].count("UNSUPPORTED>SUPPORTED") == 4


def test_reference_is_the_humans_only(judged):
    """The judge's 180 labels add nothing to the reference: 171 claims, 92 / 79."""
    reference = reference_labels(judged)
    assert len(reference) == 171 and reference["label"].value_counts().to_dict() == {"SUPPORTED": 92,
                                                                                      "UNSUPPORTED": 79}


def test_self_agreement_of_two_judge_passes(judged):
    """Second pass (--relabel) gives the experts' labels unflipped (pending: SUPPORTED).
    Pass 1: S 86 + 4 + 9 = 99, U 81; pass 2: S 92 + 9 = 101, U 79; n = 180.
    Confusion (rows pass 1, columns pass 2): S→S 86 + 9 = 95, S→U 4, U→S 6, U→U 75;
    agreement 170/180; chance = 99·101 + 81·79 = 9999 + 6399 = 16398;
    kappa = (180·170 − 16398)/(180² − 16398) = 14202/16002 ≈ 0.88751."""
    judge = Reviewer.objects.get(username="flip-judge")
    assert judge_self_agreement(run=judged, judge=judge) is None
    _judge(judged, _verdicts_with_flips(judged, to_unsupported=0, to_supported=0), relabel=True)
    agreement = judge_self_agreement(run=judged, judge=judge)
    assert (agreement.n, agreement.agreement.numerator) == (180, 170)
    assert agreement.confusion.to_numpy().tolist() == [[95, 4], [6, 75]]
    assert agreement.kappa == pytest.approx(14202 / 16002, abs=1e-12)


# Query counts the docstrings state, on tests/counted_run.py's run (they do not grow with it).


def _two_judge_passes(world) -> tuple[JudgeRun, JudgeRun]:
    """The judge's current labels become pass 1's; pass 2 (later) gives the same values, not current."""
    first, second = (JudgeRun.objects.create(run=world.run, reviewer=world.judge, status=JudgeRunStatus.DONE)
                     for _ in range(2))
    Label.objects.filter(reviewer=world.judge).update(judge_run=first)
    for claim_id, value in Label.objects.filter(reviewer=world.judge).values_list("claim_id", "value"):
        Label.objects.create(claim_id=claim_id, reviewer=world.judge, value=value, claim_revision=1,
                             judge_run=second, is_current=False)
    return first, second


@pytest.mark.django_db
def test_reference_labels_query_count(django_assert_num_queries):
    """Five cited claims have the humans' label: q01's two and q03's two agreed SUPPORTED, q02's
    first adjudicated UNSUPPORTED (q02's second is disputed, so left out)."""
    world = counted_run()
    # resolved_claims_frame's nine (claims version, claims, those not factual, answers, questions with
    # gold, the label state, labels and their reviewers, adjudications), then the adjudications' reasons (already in its
    # adjudication_reason column) and the human justifications (its labels frame held them, but it does not
    # return that frame).
    with django_assert_num_queries(11):
        reference = reference_labels(world.run)
    assert reference["label"].tolist() == ["SUPPORTED", "SUPPORTED", "UNSUPPORTED", "SUPPORTED", "SUPPORTED"]
    assert reference["justification"].tolist()[2] == "P1 says less."
    # The claims and answers read once per claims version (labeling.exports.structure).
    with django_assert_num_queries(8):
        assert reference_labels(world.run).equals(reference)


@pytest.mark.django_db
def test_claim_texts_counts_the_cited_characters_as_the_citations_frame_gives_them():
    """A span counts its characters, else the passage's text; a fabricated citation and an
    uncited claim count 0. By hand: "capital of France" 17, "Paris is the capital of France
    since 508." 41, a fabricated "P9" 0; summed in the database as from citations_frame."""
    from labeling.exports.frames import citations_frame
    from tests.factories import AnswerFactory, CitationFactory, ClaimFactory, PassageFactory, RunFactory

    run = RunFactory()
    answer = AnswerFactory(run=run)
    passage = PassageFactory(answer=answer, passage_id="P1", text="Paris is the capital of France since 508.")
    both, plain, fabricated, uncited = (ClaimFactory(answer=answer, index=n, text=f"Claim {n}.") for n in (1, 2, 3, 4))
    CitationFactory(claim=both, passage=passage, position=0, cited_id="P1", span="capital of France")
    CitationFactory(claim=both, passage=passage, position=1, cited_id="P1")
    CitationFactory(claim=plain, passage=passage, position=0, cited_id="P1")
    CitationFactory(claim=fabricated, passage=None, position=0, cited_id="P9", fabricated=True)

    chars = dict(claim_texts(run)[["claim_id", "cited_chars"]].itertuples(index=False))

    assert chars == {both.pk: 17 + 41, plain.pk: 41, fabricated.pk: 0, uncited.pk: 0}
    frame = citations_frame(run)
    by_frame = frame.assign(n=frame["text"].str.len()).groupby("claim_id")["n"].sum().to_dict()
    assert {k: v for k, v in chars.items() if v} == {k: v for k, v in by_frame.items() if v}


@pytest.mark.django_db
def test_judge_labels_claim_texts_and_run_judges_query_counts(django_assert_num_queries):
    world = counted_run()
    with django_assert_num_queries(1):
        assert len(judge_labels(world.run, world.judge)) == 6
    # The claims version, the cited characters summed by the database, then the claims' texts.
    with django_assert_num_queries(3):
        texts = claim_texts(world.run)
    assert texts["cited_chars"].tolist() == [12, 12, 0] * 2 + [12, 0, 0]
    # The characters read once per claims version (labeling.exports.structure).
    with django_assert_num_queries(2):
        assert claim_texts(world.run).equals(texts)
    # The texts of some claims only (a grade's disagreements): the same rows; no claim, no query.
    some = texts["claim_id"].tolist()[::4]
    with django_assert_num_queries(2):
        picked = claim_texts(world.run, some)
    assert (picked.sort_values("claim_id").reset_index(drop=True)
            .equals(texts[texts["claim_id"].isin(some)].sort_values("claim_id").reset_index(drop=True)))
    with django_assert_num_queries(0):
        assert claim_texts(world.run, []).empty
    # The judge labeled without a judge run (imported labels): its reviewer row is one more query.
    with django_assert_num_queries(3):
        assert [(row.reviewer.username, row.labels, row.latest) for row in run_judges(run=world.run)] == [
            ("judge", 6, None)]
    _first, second = _two_judge_passes(world)
    # Judge runs (with their reviewer), then the current labels per judge.
    with django_assert_num_queries(2):
        assert [(row.labels, row.latest) for row in run_judges(run=world.run)] == [(6, second)]
    with django_assert_num_queries(1):
        assert len(judge_labels(world.run, world.judge, judge_run=second)) == 6


@pytest.mark.django_db
def test_judge_self_agreement_query_count(django_assert_num_queries):
    """Both passes say SUPPORTED on the six cited claims: 6 of 6 agree."""
    world = counted_run()
    # Fewer than two passes: the judge runs alone.
    with django_assert_num_queries(1):
        assert judge_self_agreement(run=world.run, judge=world.judge) is None
    _two_judge_passes(world)
    claims = claim_texts(world.run)
    # The two latest passes, then each pass's labels.
    with django_assert_num_queries(3):
        agreement = judge_self_agreement(run=world.run, judge=world.judge, claims=claims)
    assert (agreement.n, agreement.agreement.numerator) == (6, 6)
    # Without ``claims``: the texts of the disagreements only, and the passes agree on every claim.
    with django_assert_num_queries(3):
        judge_self_agreement(run=world.run, judge=world.judge)
