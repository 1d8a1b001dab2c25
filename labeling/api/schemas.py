"""Request and response shapes of the API (pydantic, through django-ninja).

Request bodies forbid unknown fields (a typo such as ``"justifcation"`` is a
422 naming it, never a silently empty justification). Responses are built
from plain dicts by the ``*_out`` functions, so each resource has one shape.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field

from labeling.models import JudgeRun, Label, LabelTableVersion, Run

# -- requests ---------------------------------------------------------------------------------------


class Body(Schema):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class RunCreateIn(Body):
    name: str = Field(description="the run's name (SPEC: up to 200 characters, no '/' or '\\')")
    metadata: dict[str, Any] = Field(default_factory=dict, description="free metadata (prompt, model, chunking…)")


class RunRenameIn(Body):
    name: str = Field(description="the new name, unique in the project")


class LabelIn(Body):
    value: str = Field(description="SUPPORTED, UNSUPPORTED (or UNCITED on a claim without citations)")
    justification: str = Field("", description="required for UNSUPPORTED (and for SUPPORTED where the project "
                                                "asks); 10,000 characters at most")
    revision: int = Field(ge=1, description="the claim revision the label is for (the claim's `revision` as read)")
    base_label: int | None = Field(description="id of the token reviewer's current label on the claim as read "
                                               "(the claim's `my_label`), null when they had none: a label saved "
                                               "meanwhile makes this a 409, nothing saved")


class VersionCreateIn(Body):
    note: str = Field("", description="what this version is (2,000 characters at most)")


class GateIn(Body):
    baseline: str = Field(description="the baseline run A (the gate checks this run, B, against it)")
    max_drop: dict[str, float] = Field(
        description="allowed drop per metric, e.g. {\"support\": 0.05, \"coverage\": 0.05}; at least one")
    reviewer: str | None = Field(None, description="count only this reviewer's labels")
    citation_precision_rule: str = Field("union", description="strict, union or lenient (SPEC §4.3b)")
    confidence: float | None = Field(None, gt=0, lt=1, description="with it, the non-inferiority gate of "
                                     "`score --confidence C`: the lower bound of the C-interval of B − A must "
                                     "stay above −max_drop (SPEC §4.5); without it, the point rule")


# -- responses --------------------------------------------------------------------------------------


class Error(Schema):
    detail: str


class FieldError(Schema):
    field: str
    reason: str
    line: int | None = None


class ErrorList(Schema):
    detail: str
    errors: list[FieldError] = []


class ProjectOut(Schema):
    slug: str
    name: str
    description: str
    role: str = Field(description="the token's role here")
    runs: int
    questions: int


class RunOut(Schema):
    name: str
    created_at: datetime
    metadata: dict[str, Any]
    answers: int | None = None
    overlap: int
    blind: bool


class CitationOut(Schema):
    id: int
    passage_id: str = Field(description="the passage id as the answer cites it")
    source: str
    span: str
    fabricated: bool
    passage_text: str | None = Field(description="the cited passage's text (null for a fabricated id)")


class LabelOut(Schema):
    id: int
    claim_id: int
    reviewer: str
    reviewer_kind: str
    value: str
    justification: str
    claim_revision: int
    current: bool
    stale: bool
    created_at: datetime


class ClaimOut(Schema):
    id: int
    answer_id: int
    question_id: str
    index: int
    text: str
    revision: int
    factual: bool
    citations: list[CitationOut]
    labels: list[LabelOut] = Field(description="current labels (on a blind run, the token reviewer's only)")
    my_label: int | None = Field(description="id of the token reviewer's current label: `base_label` of a write")


class VersionOut(Schema):
    number: int
    note: str
    author: str | None
    created_at: datetime
    row_count: int
    label_count: int
    sha256: str


class AuditEventOut(Schema):
    at: str
    actor: str
    action: str
    run: str
    target: str
    claim_id: int | None
    detail: dict[str, Any]


class ImportIssueOut(Schema):
    line: int
    field: str
    reason: str


class JudgeRunOut(Schema):
    id: int
    run: str
    judge: str
    model: str
    status: str = Field(description="queued, running, done or failed")
    finished: bool
    answers_total: int
    answers_done: int
    answers_failed: int
    claims_labeled: int
    claims_missing: int
    error: str
    created_at: str
    finished_at: str | None


class ImportOut(Schema):
    runs: list[str]
    questions_created: int
    answers_created: int
    answers_unchanged: int
    claims_created: int
    citations_created: int
    fabricated_citations: int
    labels_created: int
    judgments_created: int
    summary: str
    warnings: list[ImportIssueOut]
    judge_runs: list[JudgeRunOut] = Field([], description="the judge runs started on the imported runs "
                                                          "(with `judge` and `model`)")


class GateOut(Schema):
    passed: bool
    run: str
    baseline: str
    questions: int = Field(description="questions both runs answered: the gate compares on these (SPEC §5)")
    bounds: dict[str, float]
    values: dict[str, dict[str, float | None]] = Field(description="per gated metric: run, baseline")
    failures: list[str]
    note: str
    noise: list[str] = Field(description="per gated metric: B − A with its interval, \"within noise\" when it "
                                         "straddles the bound")
    differences: dict[str, dict[str, Any]] = Field(description="every figure's paired difference B − A with its "
                                                               "interval, as `score --baseline --format json`")


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def label_out(label: Label) -> dict[str, Any]:
    """A label as the API shows it (its ``reviewer`` loaded)."""
    return {"id": label.pk, "claim_id": label.claim_id, "reviewer": label.reviewer.username,
            "reviewer_kind": label.reviewer.kind, "value": label.value, "justification": label.justification,
            "claim_revision": label.claim_revision, "current": label.is_current, "stale": label.is_stale,
            "created_at": _utc(label.created_at)}


def run_out(run: Run, *, answers: int | None = None) -> dict[str, Any]:
    return {"name": run.name, "created_at": _utc(run.created_at), "metadata": run.metadata, "answers": answers,
            "overlap": run.overlap, "blind": run.is_blind}


def version_out(version: LabelTableVersion) -> dict[str, Any]:
    """A version's record (its ``author`` loaded)."""
    return {"number": version.number, "note": version.note,
            "author": version.author.username if version.author_id else None,
            "created_at": _utc(version.created_at), "row_count": version.row_count,
            "label_count": version.label_count, "sha256": version.sha256}


def judge_run_out(judge_run: JudgeRun) -> dict[str, Any]:
    """A judge run as the API shows it (its ``run`` and ``reviewer`` loaded)."""
    def when(moment):
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None

    return {"id": judge_run.pk, "run": judge_run.run.name, "judge": judge_run.reviewer.username,
            "model": judge_run.model, "status": judge_run.status, "finished": judge_run.finished,
            "answers_total": judge_run.answers_total, "answers_done": judge_run.answers_done,
            "answers_failed": judge_run.answers_failed, "claims_labeled": judge_run.claims_labeled,
            "claims_missing": judge_run.claims_missing, "error": judge_run.error,
            "created_at": when(judge_run.created_at), "finished_at": when(judge_run.finished_at)}
