"""The JSON object of ``manage.py agreement --format json``, built in one
place so the command and the HTTP API (``GET …/runs/{run}/agreement``) give
the same figures (SPEC §4.4; SPEC §6: "the JSON of agreement through the API
equals the CLI's")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from labeling.judges.grades import judge_labels, texts_of
from labeling.models import Reviewer, ReviewerKind, Run
from labeling.team.agreement import CATEGORIES, RunAgreement, run_agreement, run_judgment_agreement
from scoring.agreement import Agreement, Interval, Reliability, pairwise_agreement
from scoring.judge_grading import JudgeGrade, grade_judge
from scoring.judgment_agreement import JudgmentAgreement
from scoring.labels import LABEL_VALUES


def confusion_dict(pair: Agreement) -> dict[str, dict[str, int]]:
    """The pair's confusion over all three label values (UNCITED row and column
    zero: only cited claims count), the shape ``agreement`` always printed."""
    return {row: {col: int(pair.confusion.at[row, col]) if row in CATEGORIES and col in CATEGORIES else 0
                  for col in LABEL_VALUES} for row in LABEL_VALUES}


@dataclass(frozen=True)
class AgreementReport:
    """``payload``: the JSON object (see :func:`agreement_report`); ``result``,
    ``pairs`` (the named pair, or every pair) and ``judged`` (the citation
    judgments' agreement) for the command's table and gate."""

    payload: dict[str, Any]
    result: RunAgreement
    pairs: list[Agreement]
    judged: JudgmentAgreement


def agreement_report(*, run: Run, reviewers: list[str] | tuple[str, ...] = ()) -> AgreementReport:
    """Agreement of ``run``'s reviewers on its cited claims (SPEC §4.4).

    ``reviewers``: none (every pair, and ``per_label``) or two names in
    normal form (that pair with its disagreements, and a ``judge`` key when
    exactly one of them is of kind ``model``). Either way the payload carries
    Krippendorff's alpha, Gwet's AC1 and Fleiss' kappa of the counted
    reviewers with their 95 % interval and n, the same over every human
    reviewer, the citation judgments' alpha, and the run's reviewers.

    Raises ValidationError (code ``no_labels``) naming a reviewer with no
    current label on a cited claim of the run.
    """
    result = run_agreement(run=run)
    overall = result.overall
    for name in reviewers:
        if name not in result.reviewers:
            raise ValidationError(f"reviewer {name!r} has no current label on a cited claim of run {run.name!r}",
                                  code="no_labels")
    if reviewers:
        pairs = [pairwise_agreement(result.labels, reviewers[0], reviewers[1], categories=CATEGORIES)]
    else:
        pairs = result.pairs
    judged = run_judgment_agreement(run=run)
    figures: dict[str, Any] = {
        **_reliability(overall, result.disputed),
        "counted": "assigned reviewers" if result.assigned else "human reviewers",
        "counted_reviewers": overall.reviewers,
        "all_human_reviewers": (None if result.every_human is None else
                                _reliability(result.every_human, result.every_human_disputed or [])
                                | {"counted_reviewers": result.every_human.reviewers}),
        "reviewers": result.reviewers,
        # Krippendorff's alpha of the citation judgments, nominal and ordinal (SPEC §6).
        "citation_judgments": judged.to_dict(),
    }
    if reviewers:
        pair = pairs[0]
        payload = pair.to_dict() | {"confusion": confusion_dict(pair), "run": run.name} | figures
        grade = _judge_grade(run, list(reviewers), result.kinds)
        if grade is not None:
            payload["judge"] = grade.to_dict()
    else:
        payload = {"run": run.name, **figures, "per_label": _values(overall.per_label),
                   "pairs": [p.to_dict() | {"confusion": confusion_dict(p)} for p in pairs]}
    return AgreementReport(payload=payload, result=result, pairs=pairs, judged=judged)


def _judge_grade(run: Run, names: list[str], kinds: dict[str, str]) -> JudgeGrade | None:
    """When exactly one of the pair is a judge (kind ``model``): the judge graded
    against the other reviewer's labels (``scoring.judge_grading``)."""
    judges = [name for name in names if kinds.get(name) == ReviewerKind.MODEL]
    if len(judges) != 1:
        return None
    judge = Reviewer.objects.get(username=judges[0])
    human = Reviewer.objects.get(username=next(name for name in names if name != judges[0]))
    reference = judge_labels(run, human).rename(columns={"reason": "justification"})
    return grade_judge(reference, judge_labels(run, judge), claims=texts_of(run), judge_name=judge.username,
                       reference_name=human.username)


def _reliability(figures: Reliability, disputed: list[int]) -> dict[str, Any]:
    """Alpha and AC1 with their intervals and n, and the disputed claims' count, as the JSON keys say."""
    return {
        "krippendorff_alpha": figures.alpha.value, "alpha_ci95": _listed(figures.alpha.ci95),
        "alpha_n": figures.alpha.n,
        "gwet_ac1": figures.ac1.value, "ac1_ci95": _listed(figures.ac1.ci95), "ac1_n": figures.ac1.n,
        "fleiss_kappa": figures.fleiss_kappa.value, "fleiss_kappa_ci95": _listed(figures.fleiss_kappa.ci95),
        "fleiss_kappa_n": figures.fleiss_kappa.n,
        "disputed": len(disputed),
    }


def _listed(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _values(ratios: dict) -> dict[str, float | None]:
    return {label: ratio.value for label, ratio in ratios.items()}
