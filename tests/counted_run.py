"""A small run with one of each thing the reads count over, for the tests that pin
how many queries a documented read makes (the count its docstring states).

Project ``counts`` (lead ``lead``, reviewers ``rev1`` and ``rev2``), run ``r1`` of
three answers (questions ``q01``–``q03``, the last unanswerable with gold id ``P1``),
each with a passage ``P1`` and claims 1 and 2 citing it (claim 2 of ``q03``
cites the fabricated id ``X``) and an uncited claim 3. ``rev1`` labels every
cited claim SUPPORTED; ``rev2`` agrees except on claims 1 and 2 of ``q02``
(UNSUPPORTED): lead adjudicates claim 1 UNSUPPORTED, claim 2 stays disputed; judge ``judge`` (kind
``model``) labels every cited claim SUPPORTED and ``rev1`` judges the citation
of claim 1 of ``q01`` FULL. A query count does not grow with these rows: one of
each is enough to take every branch a read has.
"""

from __future__ import annotations

from dataclasses import dataclass

from labeling.models import (
    Adjudication,
    CitationJudgment,
    Claim,
    GoldPassageId,
    Label,
    LabelValue,
    Membership,
    Project,
    Reviewer,
    ReviewerKind,
    Role,
    Run,
)
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
class CountedRun:
    project: Project
    run: Run
    lead: Reviewer
    rev1: Reviewer
    rev2: Reviewer
    judge: Reviewer
    # claims[question_id] = [claim 1, claim 2, claim 3 (uncited)]
    claims: dict[str, list[Claim]]


def counted_run(**run_fields) -> CountedRun:
    """Build the run of the module docstring (``run_fields``: extra ``Run`` fields)."""
    project = ProjectFactory(slug="counts")
    lead, rev1, rev2 = (ReviewerFactory(username=name) for name in ("lead", "rev1", "rev2"))
    for person, role in ((lead, Role.LEAD), (rev1, Role.REVIEWER), (rev2, Role.REVIEWER)):
        Membership.objects.create(project=project, reviewer=person, role=role)
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    run = RunFactory(project=project, name="r1", **run_fields)
    claims: dict[str, list[Claim]] = {}
    for n in (1, 2, 3):
        qid = f"q{n:02d}"
        question = QuestionFactory(project=project, question_id=qid, **(
            {"answerable": False, "gold_ids_given": True} if n == 3 else {}))
        if n == 3:
            GoldPassageId.objects.create(question=question, passage_id="P1")
        answer = AnswerFactory(run=run, question=question, text="One. Two. Three.")
        passage = PassageFactory(answer=answer, passage_id="P1", position=0, text="One and two.")
        first = ClaimFactory(answer=answer, index=1, text="One.", start=0, end=4)
        second = ClaimFactory(answer=answer, index=2, text="Two.", start=5, end=9)
        third = ClaimFactory(answer=answer, index=3, text="Three.", start=10, end=16)
        citation = CitationFactory(claim=first, passage=passage, position=0, cited_id="P1")
        if n == 3:
            CitationFactory(claim=second, passage=None, position=0, cited_id="X")
        else:
            CitationFactory(claim=second, passage=passage, position=0, cited_id="P1")
        claims[qid] = [first, second, third]
        for claim in (first, second):
            Label.objects.create(claim=claim, reviewer=rev1, value=LabelValue.SUPPORTED, claim_revision=1,
                                 justification="Said in P1.")
            Label.objects.create(claim=claim, reviewer=judge, value=LabelValue.SUPPORTED, claim_revision=1)
            disputed = qid == "q02"
            Label.objects.create(claim=claim, reviewer=rev2, claim_revision=1,
                                 value=LabelValue.UNSUPPORTED if disputed else LabelValue.SUPPORTED)
            if disputed and claim is first:
                Adjudication.objects.create(claim=claim, lead=lead, value=LabelValue.UNSUPPORTED,
                                            reason="P1 says less.", claim_revision=1)
        if n == 1:
            CitationJudgment.objects.create(citation=citation, reviewer=rev1, judgment="FULL", claim_revision=1)
    return CountedRun(project=project, run=run, lead=lead, rev1=rev1, rev2=rev2, judge=judge, claims=claims)
