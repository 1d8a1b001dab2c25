"""A run's agreement page: how far its reviewers agree, and where they do not (SPEC §4.4)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labeling.models import ReviewerKind
from labeling.permissions import ALL_LABELS
from labeling.scores.figure_cache import cached_figure, run_state_of
from labeling.team.agreement import (
    CATEGORIES,
    disagreement_rows,
    run_agreement,
    run_judgment_agreement,
    run_verdicts,
    verdict,
)
from labeling.views.projects import run_for
from scoring.agreement import BOOTSTRAP_RESAMPLES, Agreement
from scoring.ratio import format_value

DISAGREEMENTS_PER_PAGE = 50
# Shades of the confusion cells: a cell's share of the pair's claims in fifths.
HEAT_LEVELS = 5


@dataclass(frozen=True)
class ConfusionCell:
    count: int
    percent: int  # share of the pair's claims, rounded as format_value does (half away from zero)
    level: int
    agree: bool


@dataclass(frozen=True)
class PairView:
    pair: Agreement
    verdict: str
    kind_a: str
    kind_b: str
    rows: list[tuple[str, list[ConfusionCell]]]


def pair_view(pair: Agreement, kinds: dict[str, str]) -> PairView:
    """The pair with its confusion matrix as shaded cells (level 0–5 by share of n)."""
    rows = []
    for row in CATEGORIES:
        cells = []
        for col in CATEGORIES:
            count = int(pair.confusion.at[row, col])
            share = count / pair.n if pair.n else 0.0
            # any claim at all shows at least the lightest shade
            level = 0 if count == 0 else max(1, round(share * HEAT_LEVELS))
            cells.append(ConfusionCell(count, int(format_value(share * 100, 0)), level, row == col))
        rows.append((row, cells))
    return PairView(pair, verdict(pair.kappa), kinds.get(pair.reviewer_a, ""), kinds.get(pair.reviewer_b, ""), rows)


@login_required
@require_GET
def run_agreement_page(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    # Every reviewer's labels side by side: not for a reviewer who labels the run blind.
    run = run_for(request, project_slug, run_name, ALL_LABELS)
    # Computed once per label state of the run (SPEC §7).
    result = cached_figure("agreement", run, lambda: run_agreement(run=run), state=run_state_of(run))
    page = Paginator(result.disputed, DISAGREEMENTS_PER_PAGE).get_page(request.GET.get("page"))
    # Every adjudication of the run, not the page's only: the count of settled disputes covers all of them.
    verdicts = run_verdicts(run=run)
    rows = disagreement_rows(run=run, claim_ids=list(page.object_list), reviewers=result.reviewers,
                             verdicts=verdicts)
    overall = result.overall
    # Citation judgments (SPEC §6): one query, the run's current judgments.
    judged = cached_figure("judgment_agreement", run, lambda: run_judgment_agreement(run=run),
                           state=run_state_of(run))
    return render(request, "labeling/run_agreement.html", {
        "judged": judged, "nominal_verdict": verdict(judged.nominal.value),
        "ordinal_verdict": verdict(judged.ordinal.value),
        "project": run.project, "run": run, "result": result, "overall": overall,
        "alpha_verdict": verdict(overall.alpha.value), "ac1_verdict": verdict(overall.ac1.value),
        "fleiss_verdict": verdict(overall.fleiss_kappa.value),
        "pairs": [pair_view(pair, result.kinds) for pair in result.pairs], "categories": CATEGORIES,
        "page": page, "disagreements": rows, "resamples": BOOTSTRAP_RESAMPLES,
        "adjudicated": sum(1 for claim_id in result.disputed if claim_id in verdicts),
        "every_human": result.every_human, "every_human_disputed": result.every_human_disputed,
        # Whose labels a lead may send back for rework (SPEC §4.4): the human reviewers'.
        "humans": {name for name, kind in result.kinds.items() if kind == ReviewerKind.HUMAN},
    })
