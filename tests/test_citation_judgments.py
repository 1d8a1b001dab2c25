"""Judging citations and marking claims not factual (SPEC §4.3b): the services and ``score``."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from labeling.exports.frames import citations_frame, resolved_claims_frame
from labeling.models import AuditEvent, CitationJudgment, Claim, Label
from labeling.review.citation_judgments import claim_judge, claim_set_factual
from labeling.review.claim_edits import claim_edit
from labeling.scores.metrics import run_judgment_metrics, run_judgments
from tests.counted_run import counted_run
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    ReviewerFactory,
    RunFactory,
)


def score_json(*args: str, capsys) -> dict:
    call_command("score", *args, "--format", "json")
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def judged_run(db):
    """One answer, four claims: c1 cites P1, P2; c2 cites P3, P4; c3 cites P5; c4 cites P6."""
    project = ProjectFactory(slug="judged", judge_citations=True)
    run = RunFactory(project=project, name="r1")
    answer = AnswerFactory(run=run)
    claims = []
    for index, n_cites in enumerate((2, 2, 1, 1), start=1):
        claim = ClaimFactory(answer=answer, index=index, text=f"Claim {index}.")
        for _ in range(n_cites):
            CitationFactory(claim=claim, passage=PassageFactory(answer=answer))
        claims.append(claim)
    return run, claims


def judge(claim: Claim, reviewer, values: list[str], **kwargs):
    ids = [c.pk for c in claim.citations.order_by("position")]
    return claim_judge(claim=claim, reviewer=reviewer, judgments=dict(zip(ids, values, strict=True)),
                       base_revision=claim.revision, base_label_id=None, **kwargs)


def test_claim_judge_records_judgments_and_the_proposed_label(judged_run):
    """c1: FULL + NONE -> SUPPORTED proposed and saved; the judgments are current, one per citation."""
    run, (c1, *_rest) = judged_run
    ann = ReviewerFactory(username="ann")
    assert CitationJudgment.objects.count() == 0

    result = judge(c1, ann, ["FULL", "NONE"], evidence={c1.citations.first().pk: "  the exact words "})

    assert result.proposed == "SUPPORTED"
    assert result.label.value == "SUPPORTED"
    assert [j.judgment for j in result.judgments] == ["FULL", "NONE"]
    assert result.judgments[0].evidence == "the exact words"
    assert CitationJudgment.objects.filter(is_current=True).count() == 2
    # The audit log has the label and the judgments, each once.
    judge_event = AuditEvent.objects.get(action="judge")
    assert judge_event.detail["judgments"] == {c.cited_id: v for c, v in
                                               zip(c1.citations.order_by("position"), ["FULL", "NONE"], strict=True)}
    assert AuditEvent.objects.filter(action="label").count() == 1


def test_marking_a_claim_not_factual_is_audited_once(judged_run):
    run, (c1, *_rest) = judged_run
    ann = ReviewerFactory(username="ann")

    claim_set_factual(claim=c1, factual=False, actor=ann)
    claim_set_factual(claim=c1, factual=False, actor=ann)

    assert not Claim.objects.get(pk=c1.pk).factual
    event = AuditEvent.objects.get()
    assert (event.action, event.actor_name, event.detail) == ("edit", "ann", {"factual": False})


def test_union_of_partials_needs_the_reviewer_to_say_so(judged_run):
    """c2: PARTIAL + PARTIAL proposes UNSUPPORTED (justification written from the judgments);
    with partials_enough it proposes SUPPORTED; the first judgments stay in history."""
    run, (_c1, c2, *_rest) = judged_run
    ann = ReviewerFactory(username="ann")

    first = judge(c2, ann, ["PARTIAL", "PARTIAL"])
    assert first.label.value == "UNSUPPORTED"
    assert first.label.justification.startswith("Citations judged: [")
    second = claim_judge(claim=c2, reviewer=ann, judgments={j.citation_id: "PARTIAL" for j in first.judgments},
                         partials_enough=True, base_revision=c2.revision, base_label_id=first.label.pk)

    assert second.label.value == "SUPPORTED"
    # Same judgment and evidence: kept, not duplicated.
    assert CitationJudgment.objects.filter(citation__claim=c2).count() == 2


def test_overruling_the_proposal_needs_a_justification(judged_run):
    """c3's only citation is UNJUDGEABLE -> UNSUPPORTED proposed; SUPPORTED without a reason is refused,
    nothing saved; with a reason it is recorded."""
    run, (_c1, _c2, c3, _c4) = judged_run
    ann = ReviewerFactory(username="ann")

    with pytest.raises(ValidationError, match="propose UNSUPPORTED"):
        judge(c3, ann, ["UNJUDGEABLE"], value="SUPPORTED")
    assert (Label.objects.count(), CitationJudgment.objects.count()) == (0, 0)

    result = judge(c3, ann, ["UNJUDGEABLE"], value="SUPPORTED", justification="The page loads for me now.")
    assert result.label.value == "SUPPORTED"


def test_every_citation_must_be_judged(judged_run):
    run, (c1, *_rest) = judged_run
    first = c1.citations.order_by("position").first()
    with pytest.raises(ValidationError, match="judge citation"):
        claim_judge(claim=c1, reviewer=ReviewerFactory(), judgments={first.pk: "FULL"},
                    base_revision=c1.revision, base_label_id=None)


def test_claim_edit_makes_judgments_stale(judged_run):
    run, (c1, *_rest) = judged_run
    judge(c1, ReviewerFactory(username="ann"), ["FULL", "NONE"])

    claim_edit(claim=c1, text="Claim 1, reworded.")

    assert CitationJudgment.objects.filter(is_current=True).count() == 0
    assert CitationJudgment.objects.filter(is_stale=True).count() == 2


def test_score_json_reports_judgments_under_each_rule_and_non_factual(judged_run, capsys):
    """c1 FULL+NONE (SUPPORTED), c2 PARTIAL+PARTIAL enough (SUPPORTED), c3 UNJUDGEABLE (UNSUPPORTED),
    c4 marked not factual (its FULL judgment leaves every count).
    Judged 5: strict 1/5 (P1), union 3/5 (P1, P3, P4), lenient 3/5. Claims 3, supported 2:
    supported rate 2/3; non_factual 1."""
    run, (c1, c2, c3, c4) = judged_run
    ann = ReviewerFactory(username="ann")
    judge(c1, ann, ["FULL", "NONE"])
    judge(c2, ann, ["PARTIAL", "PARTIAL"], partials_enough=True)
    judge(c3, ann, ["UNJUDGEABLE"])
    judge(c4, ann, ["FULL"])
    claim_set_factual(claim=c4, factual=False)

    union = score_json("--run", "r1", capsys=capsys)
    strict = score_json("--run", "r1", "--citation-precision-rule", "strict", capsys=capsys)
    lenient = score_json("--run", "r1", "--citation-precision-rule", "lenient", capsys=capsys)

    assert union["citation_judgments"] == {
        "rule": "union", "citations": 5, "judged": 5, "unjudged": 0, "disputed": 0,
        "counts": {"FULL": 1, "PARTIAL": 2, "NONE": 1, "UNJUDGEABLE": 1},
        "precise": 3, "precision": 0.6, "precision_fraction": "3/5", "mean_precision": 0.6,
        "precision_skipped": 0,
    }
    assert (strict["citation_judgments"]["rule"], strict["citation_judgments"]["precision_fraction"]) == \
        ("strict", "1/5")
    assert lenient["citation_judgments"]["precision_fraction"] == "3/5"
    claims = union["claims"]
    assert (claims["claims"], claims["cited"], claims["supported"], claims["non_factual"]) == (3, 3, 2, 1)
    assert claims["supported_rate"] == pytest.approx(2 / 3)


def test_score_refuses_an_unknown_rule(judged_run):
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("score", "--run", "r1", "--citation-precision-rule", "generous")


def test_non_factual_claim_leaves_agreement_and_adjudication(judged_run, admin_client):
    """ann says SUPPORTED, bob UNSUPPORTED on c1: disputed, 2 labels in the agreement frame.
    Marked not factual: no dispute, no agreement label, an adjudication is refused."""
    from labeling.team.adjudication import adjudication_save, disputed_claims
    from labeling.team.agreement import agreement_labels
    from tests.factories import LabelFactory

    run, (c1, *_rest) = judged_run
    LabelFactory(claim=c1, reviewer=ReviewerFactory(username="ann"), value="SUPPORTED")
    LabelFactory(claim=c1, reviewer=ReviewerFactory(username="bob"), value="UNSUPPORTED", justification="no")
    assert list(disputed_claims(run=run)) == [c1]
    assert len(agreement_labels(run)[0]) == 2

    claim_set_factual(claim=c1, factual=False)

    assert list(disputed_claims(run=run)) == []
    assert len(agreement_labels(run)[0]) == 0
    with pytest.raises(ValidationError, match="not factual"):
        adjudication_save(claim=Claim.objects.get(pk=c1.pk), lead=ReviewerFactory(username="lead"),
                          value="SUPPORTED", reason="fine")


def test_judgments_admin_is_view_only(judged_run, admin_client):
    run, (c1, *_rest) = judged_run
    judge(c1, ReviewerFactory(username="ann"), ["FULL", "NONE"])

    listing = admin_client.get("/admin/labeling/citationjudgment/")
    assert listing.status_code == 200 and "FULL" in listing.content.decode()
    assert admin_client.get("/admin/labeling/citationjudgment/add/").status_code == 403


@pytest.mark.django_db
def test_judged_precision_query_counts(django_assert_num_queries):
    """tests/counted_run.py's run: rev1 judged one citation (q01's claim 1) FULL, its claim SUPPORTED."""
    world = counted_run()
    claims, _disagreements = resolved_claims_frame(world.run)
    citations = citations_frame(world.run)
    # The current judgments.
    with django_assert_num_queries(1):
        judged = run_judgment_metrics(world.run, claims, citations, reviewer=None)
    assert (judged.citations, judged.judged) == (6, 1)
    # Whether anything is judged; resolved_claims_frame's claims version, claims not factual, questions
    # with gold, labels and their reviewers, adjudications (the claims and answers cached by the read
    # above); the citations without their texts (not yet cached), the judgments.
    with django_assert_num_queries(9):
        assert run_judgments(world.run).judged == 1
    with django_assert_num_queries(8):  # the citations cached too
        assert run_judgments(world.run).judged == 1
    CitationJudgment.objects.all().delete()
    with django_assert_num_queries(1):
        assert run_judgments(world.run) is None
