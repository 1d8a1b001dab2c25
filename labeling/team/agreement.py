"""A run's reviewer agreement read from the database, for the agreement page
and ``manage.py agreement`` (SPEC §4.4; the figures are ``scoring.agreement``'s).

Only cited claims count. A claim without citations is UNCITED by the SPEC §3
rule, whoever looks at it: nobody judges it, so counting it would add free
agreements and raise every figure. The categories a reviewer chooses between
are therefore SUPPORTED and UNSUPPORTED (Gwet's q = 2).

Whose figures: on a run with assigned reviewers the headline alpha, AC1 and
disputed claims are the assigned reviewers' (with the run's promoted judge):
labels imported from a file (kind ``external``) or given by anyone else are
not the team's work and must not move the team's agreement. The same
figures over every human reviewer stay available beside them, named as
such (SPEC §7). With nobody assigned the headline is every human's.
"""

from __future__ import annotations

from dataclasses import dataclass

from labeling.exports.frames import current_labels
from labeling.models import (
    Adjudication,
    Assignment,
    CitationJudgment,
    Claim,
    Label,
    Run,
)
from labeling.models.counted import counted_q
from scoring import agreement as scoring_agreement
from scoring.agreement import Agreement, Reliability
from scoring.judgment_agreement import JudgmentAgreement, judgment_agreement
from scoring.labels import SUPPORTED, UNSUPPORTED, counted_labels, disagreements
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

CATEGORIES = (SUPPORTED, UNSUPPORTED)

# Krippendorff (2004, §11.4): rely on data with alpha ≥ 0.800; 0.667 ≤ alpha < 0.800
# allows only tentative conclusions. The page reads kappa and AC1 on the same scale.
GOOD = 0.80
TENTATIVE = 0.667


@dataclass(frozen=True)
class RunAgreement:
    """Agreement on the cited claims of one run.

    ``labels``: the labels frame (``claim_id, reviewer, label``) of the current
    labels on cited claims. ``reviewers``: names of every reviewer in it,
    sorted. ``kinds``: reviewer name → kind (human, external, model).
    ``pairs``: :class:`scoring.agreement.Agreement` per pair of reviewers,
    confusion over SUPPORTED/UNSUPPORTED. ``overall``: alpha, AC1 and Fleiss' kappa across
    the counted reviewers: the assigned ones on a run with assignments, else
    the human reviewers (with the run's promoted judge either way).
    ``disputed``: claim ids where the counted reviewers who labeled the claim
    do not all agree, sorted. ``assigned``: the counted reviewers are the
    run's assigned ones. ``every_human`` and ``every_human_disputed``: the
    same figures over every human reviewer (and the promoted judge), when
    ``assigned`` and someone else's labels make them differ; else ``None``.
    """

    labels: pd.DataFrame
    reviewers: list[str]
    kinds: dict[str, str]
    pairs: list[Agreement]
    overall: Reliability
    disputed: list[int]
    assigned: bool = False
    every_human: Reliability | None = None
    every_human_disputed: list[int] | None = None


def agreement_labels(run: Run) -> tuple[pd.DataFrame, dict[str, str]]:
    """Current labels on the cited factual claims of ``run`` as a labels frame
    (``claim_id`` int, ``reviewer`` username, ``label``), and each of their
    reviewers' kind by name. Two queries (``labeling.exports.frames.current_labels``:
    SPEC §4.3b, a claim marked not factual leaves every figure, agreement too)."""
    labels = current_labels(run, factual_judged_only=True)
    people = labels[["reviewer", "kind"]].drop_duplicates()
    kinds = dict(zip(people["reviewer"].tolist(), people["kind"].tolist(), strict=True))
    return labels[["claim_id", "reviewer", "label"]], kinds


def run_agreement(*, run: Run) -> RunAgreement:
    """Every pair's agreement and the counted reviewers' figures of ``run``'s
    cited claims (:class:`RunAgreement`). Three queries (labels, their
    reviewers, the run's assigned reviewers), one more for the name of a
    promoted judge not loaded with the run.

    Pairs include judges (kind ``model``), each graded against every other
    reviewer; alpha, AC1 and the disputed claims are the humans' alone (SPEC
    §4.4: a judge never counts as a human), with the run's promoted judge if
    a lead promoted one, and only the assigned reviewers' on a run with
    assignments (module docstring), every human's then given beside them."""
    labels, kinds = agreement_labels(run)
    promoted = run.promoted_judge.username if run.promoted_judge_id else None
    # Whose labels count (scoring.labels.counted_labels, the pandas form of labeling.models.counted):
    # people and the promoted judge. Agreement is the reviewers' own: nobody is left out of it.
    humans = counted_labels(labels.assign(kind=labels["reviewer"].map(kinds)), promoted=promoted)[list(labels.columns)]
    assigned = set(Assignment.objects.filter(run=run).values_list("reviewer__username", flat=True))
    counted = humans
    if assigned:
        counted = humans[humans["reviewer"].isin(assigned | {promoted} - {None})]
    others = len(counted) < len(humans)
    return RunAgreement(
        labels=labels,
        reviewers=sorted(kinds),
        kinds=kinds,
        pairs=scoring_agreement.all_pairs(labels, categories=CATEGORIES),
        overall=scoring_agreement.reliability(counted, categories=CATEGORIES),
        disputed=disagreements(counted)["claim_id"].tolist(),
        assigned=bool(assigned),
        every_human=scoring_agreement.reliability(humans, categories=CATEGORIES) if others else None,
        every_human_disputed=disagreements(humans)["claim_id"].tolist() if others else None,
    )


def run_judgment_agreement(*, run: Run) -> JudgmentAgreement:
    """Krippendorff's alpha, nominal and ordinal, of the current citation
    judgments on ``run``'s factual claims (``scoring.judgment_agreement``:
    FULL > PARTIAL > NONE, UNJUDGEABLE left out), across the reviewers whose
    labels count (people, imported annotators and the run's promoted judge;
    a judge of kind ``model`` is never counted). One query."""
    rows = (CitationJudgment.objects.filter(citation__claim__answer__run=run, citation__claim__factual=True,
                                            is_current=True).filter(counted_q(promoted=run.promoted_judge_id))
            .order_by().values_list("citation_id", "reviewer__username", "judgment"))
    return judgment_agreement(pd.DataFrame.from_records(list(rows), columns=["citation_id", "reviewer", "judgment"]))


@dataclass(frozen=True)
class ReviewerLabel:
    """One reviewer's side of a disagreement: ``value`` is ``None`` when the
    reviewer did not label the claim."""

    reviewer: str
    value: str | None
    justification: str


@dataclass(frozen=True)
class Verdict:
    """A lead's current adjudication of a claim: the label that counts for it
    (SPEC §4.4), the reason given, and the lead's name."""

    value: str
    reason: str
    lead: str


def run_verdicts(*, run: Run) -> dict[int, Verdict]:
    """Claim id → the current adjudication (:class:`Verdict`) of every
    adjudicated claim of ``run``. One query; its rows are the adjudicated
    claims only (a lead settles the few conflicts, not the run)."""
    return {
        claim_id: Verdict(value, reason, lead)
        for claim_id, value, reason, lead in Adjudication.objects.filter(claim__answer__run=run, is_current=True)
        .order_by().values_list("claim_id", "value", "reason", "lead__username")
    }


@dataclass(frozen=True)
class DisagreementRow:
    """A disputed claim with what each reviewer said, for the agreement page;
    ``verdict`` is the lead's adjudication when there is one."""

    claim_id: int
    answer_id: int
    question_id: str
    claim: str
    labels: list[ReviewerLabel]
    verdict: Verdict | None = None


def disagreement_rows(*, run: Run, claim_ids: list[int], reviewers: list[str],
                      verdicts: dict[int, Verdict] | None = None) -> list[DisagreementRow]:
    """The claims ``claim_ids`` of ``run`` (in that order) with each of
    ``reviewers``' current label and justification, and the claim's
    adjudication from ``verdicts`` (``run_verdicts``) if any. Two queries."""
    claims = {
        pk: (answer_id, question_id, text)
        for pk, answer_id, question_id, text in Claim.objects.filter(answer__run=run, pk__in=claim_ids)
        .order_by().values_list("pk", "answer_id", "answer__question_key", "text")
    }
    said: dict[tuple[int, str], tuple[str, str]] = {
        (claim_id, name): (value, justification)
        for claim_id, name, value, justification in Label.objects.filter(
            claim_id__in=claim_ids, claim__answer__run=run, is_current=True
        ).order_by().values_list("claim_id", "reviewer__username", "value", "justification")
    }
    rows = []
    for claim_id in claim_ids:
        if claim_id not in claims:
            continue
        answer_id, question_id, text = claims[claim_id]
        rows.append(DisagreementRow(
            claim_id=claim_id, answer_id=answer_id, question_id=question_id, claim=text,
            labels=[ReviewerLabel(name, *said.get((claim_id, name), (None, ""))) for name in reviewers],
            verdict=(verdicts or {}).get(claim_id),
        ))
    return rows


def verdict(value: float | None) -> str:
    """``good`` (≥ 0.80), ``tentative`` (≥ 0.667), ``low``, or ``undefined``
    for ``None``: Krippendorff's reading of alpha, used for every figure."""
    if value is None:
        return "undefined"
    if value >= GOOD:
        return "good"
    return "tentative" if value >= TENTATIVE else "low"

