"""Small runs for the reviewer quality tests (SPEC §4.4): answers of cited claims,
members with roles, and a helper that labels as the review page does."""

from __future__ import annotations

from dataclasses import dataclass

from labeling.models import Claim, Label, Membership, Project, Reviewer, Role, Run
from labeling.review.label_writes import label_save
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)


@dataclass
class QualityWorld:
    project: Project
    run: Run
    claims: list[Claim]
    lead: Reviewer
    reviewers: list[Reviewer]


def quality_world(*, answers: int = 5, claims_per_answer: int = 2, reviewers: int = 2, slug: str = "quality",
                  run_name: str = "r1", **run_fields) -> QualityWorld:
    """Project ``slug`` with lead ``lead`` and reviewers ``rev1``…, run ``run_name`` of
    ``answers`` answers (questions ``q01``…) each with ``claims_per_answer`` cited claims."""
    project = ProjectFactory(slug=slug, name=slug.title())
    lead = ReviewerFactory(username=f"{slug}-lead")
    Membership.objects.create(project=project, reviewer=lead, role=Role.LEAD)
    people = []
    for n in range(1, reviewers + 1):
        person = ReviewerFactory(username=f"{slug}-rev{n}")
        Membership.objects.create(project=project, reviewer=person, role=Role.REVIEWER)
        people.append(person)
    run = RunFactory(project=project, name=run_name, **run_fields)
    claims = []
    for a in range(1, answers + 1):
        question = QuestionFactory(project=project, question_id=f"q{a:02d}")
        answer = AnswerFactory(run=run, question=question, text=" ".join(
            f"Fact {a}.{c}." for c in range(1, claims_per_answer + 1)))
        passage = PassageFactory(answer=answer, passage_id="P1", position=0, text="Every fact is here.")
        for c in range(1, claims_per_answer + 1):
            claim = ClaimFactory(answer=answer, index=c, text=f"Fact {a}.{c}.")
            CitationFactory(claim=claim, passage=passage, position=0)
            claims.append(claim)
    return QualityWorld(project=project, run=run, claims=claims, lead=lead, reviewers=people)


def label(claim: Claim, reviewer: Reviewer, value: str = "SUPPORTED", justification: str = "") -> Label:
    """``reviewer``'s label on ``claim`` as the review page saves it (their current label as the base)."""
    claim = Claim.objects.select_related("answer__run__project").get(pk=claim.pk)
    current = Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).first()
    if value == "UNSUPPORTED" and not justification:
        justification = "The passage does not say so."
    return label_save(claim=claim, reviewer=reviewer, value=value, justification=justification,
                      base_revision=claim.revision, base_label_id=current.pk if current else None)
