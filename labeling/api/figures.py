"""A run's figures as the commands print them: ``score`` (``RunScores.to_dict``,
the JSON of ``score --format json``), the CI gate (the ``score`` command's
``gate``), ``compare`` (``RunComparison.to_dict``), ``agreement``
(``agreement_report``), and the audit log (``audit.event_row``). Nothing is
computed here: each route calls what its command calls."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import Field

from labeling import permissions
from labeling.api.access import FieldRefused, access_of, project_of, run_of
from labeling.api.pages import PageIn, page_of, paged
from labeling.api.schemas import AuditEventOut, Error, ErrorList, GateIn, GateOut
from labeling.audit import AuditFilter, event_row, events_for_run_name
from labeling.integrations.webhooks import webhook_emit
from labeling.management.commands.score import (
    GATE_METRICS,
    NO_INTERVAL,
    gate,
    interval_gate,
    metric_value,
    noise_lines,
    parse_max_drop,
    shared_question_ids,
)
from labeling.models import AuditAction, AuditEvent, Reviewer, Run, WebhookEvent
from labeling.names import normalize_name
from labeling.scores.metrics import RunScores, run_scores
from labeling.tables.comparison import run_comparison
from labeling.team.agreement_report import agreement_report
from scoring.compare import DEFAULT_THRESHOLD
from scoring.figures import paired_differences
from scoring.intervals import DEFAULT_CONFIDENCE
from scoring.judgments import DEFAULT_RULE, RULES

router = Router(tags=["figures"])

# The offline match methods, as on the run page: embeddings and llm call a model (the CLI's).
API_MATCH_METHODS = ("ngram", "substring")


class ScoreParams(Schema):
    reviewer: str | None = Field(None, description="count only this reviewer's labels")
    match_method: str = Field("ngram", description="gold passage matching: ngram or substring")
    match_threshold: float | None = Field(None, ge=0, le=1)
    citation_precision_rule: str = Field(DEFAULT_RULE, description="strict, union or lenient (SPEC §4.3b)")
    confidence: float | None = Field(None, gt=0, lt=1, description="level of the intervals (default 0.95), as "
                                                                   "`score --confidence`")


def _scores(run: Run, *, reviewer: str | None, match_method: str = "ngram", match_threshold: float | None = None,
            rule: str = DEFAULT_RULE, question_ids: set[str] | None = None,
            confidence: float = DEFAULT_CONFIDENCE) -> RunScores:
    """``run_scores`` with the command's checks, as 422 naming the field."""
    if reviewer is not None and not Reviewer.objects.filter(username=reviewer).exists():
        raise FieldRefused("reviewer", f"no reviewer {reviewer!r}")
    if match_method not in API_MATCH_METHODS:
        raise FieldRefused("match_method", f"{match_method!r} is not one of {', '.join(API_MATCH_METHODS)} "
                                           "(embeddings and llm: manage.py score)")
    if rule not in RULES:
        raise FieldRefused("citation_precision_rule", f"{rule!r} is not one of {', '.join(RULES)}")
    return run_scores(run, reviewer=reviewer, match_method=match_method, match_threshold=match_threshold,
                      question_ids=question_ids, citation_precision_rule=rule, confidence=confidence)


def _figures_run(request: HttpRequest, slug: str, run: str, reviewer: str | None) -> Run:
    """The run, readable by the token: every reviewer's labels (not a blind run for a reviewer), or only
    the token reviewer's own."""
    target = run_of(request, slug, run)
    if reviewer != access_of(request).reviewer.username:
        target = run_of(request, slug, run, permissions.ALL_LABELS)
    return target


@router.get("/projects/{slug}/runs/{run}/score", response={200: dict[str, Any], 403: Error, 404: Error,
                                                            422: ErrorList}, url_name="run_score")
def run_score(request: HttpRequest, slug: str, run: str, params: Query[ScoreParams]) -> dict[str, Any]:
    """Every metric of the run (SPEC §4): the JSON object of `manage.py score --run NAME --format json`,
    estimates and intervals included where the command gives them."""
    reviewer = normalize_name(params.reviewer) if params.reviewer else None
    target = _figures_run(request, slug, run, reviewer)
    return _scores(target, reviewer=reviewer, match_method=params.match_method,
                   match_threshold=params.match_threshold, rule=params.citation_precision_rule,
                   confidence=params.confidence or DEFAULT_CONFIDENCE).to_dict()


@router.post("/projects/{slug}/runs/{run}/gate", response={200: GateOut, 409: GateOut, 403: Error, 404: Error,
                                                            422: ErrorList}, url_name="run_gate")
def run_gate(request: HttpRequest, slug: str, run: str, body: GateIn) -> Status:
    """The CI gate of `manage.py score --run RUN --baseline A --max-drop METRIC=X`: on the questions both
    runs answered, each bounded metric of this run may fall at most `max_drop` below the baseline's. 200
    when it passes, 409 when it fails (`failures` name the metric and the numbers): `curl --fail` exits
    non-zero on a failed gate."""
    reviewer = normalize_name(body.reviewer) if body.reviewer else None
    target = _figures_run(request, slug, run, reviewer)
    baseline_name = normalize_name(body.baseline)
    if baseline_name == target.name:
        raise FieldRefused("baseline", "names the run itself: gate against another run")
    if not body.max_drop:
        raise FieldRefused("max_drop", f"give at least one bound, e.g. {{\"support\": 0.05}}: without one the "
                                       f"gate would pass whatever {target.name} scored. Metrics: "
                                       f"{', '.join(GATE_METRICS)}")
    try:
        drops = parse_max_drop([f"{name}={value!r}" for name, value in body.max_drop.items()])
    except CommandError as exc:
        raise FieldRefused("max_drop", str(exc).removeprefix("--max-drop ")) from None
    baseline = Run.objects.filter(project=target.project, name=baseline_name).first()
    if baseline is None:
        raise FieldRefused("baseline", f"project {slug!r} has no run {baseline_name!r}")
    baseline = _figures_run(request, slug, baseline.name, reviewer)
    shared = shared_question_ids(baseline, target)
    if not shared:
        raise FieldRefused("baseline", f"runs {target.name!r} and {baseline.name!r} answer no question in common: "
                                       "nothing to gate on")
    if body.confidence is not None and NO_INTERVAL & set(drops):
        raise FieldRefused("max_drop", f"{', '.join(sorted(NO_INTERVAL & set(drops)))} with confidence: F1 of pooled "
                                       "figures has no interval; gate it without confidence")
    level = body.confidence if body.confidence is not None else DEFAULT_CONFIDENCE
    options = {"reviewer": reviewer, "rule": body.citation_precision_rule, "question_ids": shared, "confidence": level}
    scores, before = _scores(target, **options), _scores(baseline, **options)
    after_dict, before_dict = scores.to_dict(), before.to_dict()
    differences = paired_differences(before.figures(), scores.figures(), questions=sorted(shared), confidence=level)
    bounds = ", ".join(f"{name} may drop ≤ {drop:g}" for name, drop in drops.items())
    note = f"on the {len(shared)} question(s) both runs answered ({bounds})"
    for name, result in ((target.name, scores), (baseline.name, before)):
        if result.claims.pending and any(m in drops for m in ("support", "mean_support")):
            note += f"; support of {name} is provisional ({result.claims.pending} cited claim(s) pending)"
    if body.confidence is not None:
        # Non-inferiority (SPEC §4.5): the lower bound of the interval of B − A must stay above −max drop.
        failures = interval_gate(baseline.name, target.name, differences, drops, available=len(shared))
        note += f"; {body.confidence * 100:g}% interval of B − A must stay above −max drop"
    else:
        failures = gate(before_dict, after_dict, drops)
    verdict = {
        "passed": not failures, "run": target.name, "baseline": baseline.name, "questions": len(shared),
        "bounds": drops, "failures": failures, "note": note, "noise": noise_lines(differences, drops),
        "values": {name: {"run": metric_value(after_dict, name), "baseline": metric_value(before_dict, name)}
                   for name in drops},
        "differences": {key: difference.as_dict() for key, difference in differences.items()},
    }
    if failures:
        webhook_emit(project=target.project, event=WebhookEvent.GATE_FAILED, run_name=target.name,
                     data=verdict | {"token": access_of(request).token.name})
    return Status(200 if not failures else 409, verdict)


class CompareParams(Schema):
    a: str = Field(description="run A (before)")
    b: str = Field(description="run B (after): deltas are B − A")
    threshold: float = Field(DEFAULT_THRESHOLD, gt=0, le=1, description="fuzzy claim alignment similarity")
    confidence: float = Field(DEFAULT_CONFIDENCE, gt=0, lt=1, description="level of the deltas' paired intervals")


@router.get("/projects/{slug}/compare", response={200: dict[str, Any], 403: Error, 404: Error, 422: ErrorList},
            url_name="run_compare")
def run_compare(request: HttpRequest, slug: str, params: Query[CompareParams]) -> dict[str, Any]:
    """Run B against run A on the questions both answered: the JSON object of `manage.py compare --run A
    --run B --format json` (metric deltas, aligned claims, label flips, citations lost or gained)."""
    project_of(request, slug)
    names = {"a": normalize_name(params.a), "b": normalize_name(params.b)}
    if names["a"] == names["b"]:
        raise FieldRefused("b", "choose two different runs")
    runs = {}
    for field, name in names.items():
        if not Run.objects.filter(project__slug=slug, name=name).exists():
            raise FieldRefused(field, f"project {slug!r} has no run {name!r}")
        runs[field] = run_of(request, slug, name, permissions.ALL_LABELS)
    try:
        comparison = run_comparison(run_a=runs["a"], run_b=runs["b"], threshold=params.threshold,
                                    confidence=params.confidence)
    except ValidationError as exc:
        raise HttpError(422, " ".join(exc.messages)) from None
    return comparison.to_dict()


class AgreementParams(Schema):
    reviewer: list[str] = Field([], description="none (every pair) or exactly two (that pair, its "
                                                "disagreements and, for a judge, its grade)")


@router.get("/projects/{slug}/runs/{run}/agreement", response={200: dict[str, Any], 403: Error, 404: Error,
                                                                422: ErrorList}, url_name="run_agreement")
def run_agreement(request: HttpRequest, slug: str, run: str, params: Query[AgreementParams]) -> dict[str, Any]:
    """How far the run's reviewers agree on its cited claims (SPEC §4.4): the JSON object of
    `manage.py agreement --run NAME --format json` (with `?reviewer=A&reviewer=B`, of that pair)."""
    target = run_of(request, slug, run, permissions.ALL_LABELS)
    names = [normalize_name(name) for name in params.reviewer]
    if len(names) not in (0, 2):
        raise FieldRefused("reviewer", "give none (every reviewer) or exactly two")
    if names and names[0] == names[1]:
        raise FieldRefused("reviewer", f"{names[0]!r} given twice: name two different reviewers")
    try:
        return agreement_report(run=target, reviewers=names).payload
    except ValidationError as exc:
        raise FieldRefused("reviewer", exc.messages[0]) from None


class AuditParams(Schema):
    run: str | None = Field(None, description="one run's events (a deleted run's too, by its name)")
    actor: str | None = Field(None, description="one reviewer's events ('command line' for the commands')")
    action: str | None = Field(None, description="one action: " + ", ".join(AuditAction.values))
    since: date | None = Field(None, description="from this day (UTC), included")
    until: date | None = Field(None, description="to this day (UTC), included")


@router.get("/projects/{slug}/audit", response={200: page_of(AuditEventOut), 403: Error, 404: Error,
                                                 422: ErrorList}, url_name="audit_list")
def audit_list(request: HttpRequest, slug: str, params: Query[AuditParams], page: Query[PageIn]) -> dict[str, Any]:
    """The project's audit log, oldest first (lead), filtered by run, actor, action and days: the events of
    `manage.py audit --format json`. Events of API writes name their token in `detail.token`."""
    project = project_of(request, slug, permissions.LEAD)
    if params.action is not None and params.action not in AuditAction.values:
        raise FieldRefused("action", f"{params.action!r} is not one of {', '.join(AuditAction.values)}")
    narrowed = AuditFilter(actor=normalize_name(params.actor or ""), action=params.action or "",
                           since=params.since, until=params.until)
    if params.run is not None:
        events = events_for_run_name(project=project, run_name=normalize_name(params.run), filter=narrowed)
    else:
        events = narrowed.apply(AuditEvent.objects.filter(project=project)).order_by("at", "id")
    return paged(events, page, event_row)

