"""Judge runs: an automated labeler (a reviewer of kind ``model``) labels the
cited claims of a run through an OpenAI-compatible endpoint (issue 12; the
wire protocol is :mod:`labeling.judge_protocol`).

A judge's labels are graded against the humans' (``labeling.judge_grades``)
and never count as human labels unless a lead promotes the judge for the run
(SPEC §4.4). One request per answer; nothing is written for an answer whose
request or reply failed; a claim whose verdict is missing, duplicated,
unknown or malformed stays unlabeled by the judge and is counted on the
:class:`~labeling.models.JudgeRun`. Running the same judge again fills only
what it has not labeled (``relabel`` asks again about every cited claim).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from labeling.judge_protocol import (
    ClaimToJudge,
    JudgeClient,
    JudgeEndpoint,
    JudgeReplyError,
    JudgeRequestError,
    ParsedReply,
    prompt_sha256,
)
from labeling.models import (
    Answer,
    Citation,
    Claim,
    JudgeRun,
    JudgeRunStatus,
    JudgeSource,
    Label,
    Reviewer,
    ReviewerKind,
    Run,
)
from labeling.names import normalize_name, validate_reviewer_name
from scoring.labels import label_problem

logger = logging.getLogger(__name__)

ACTIVE = (JudgeRunStatus.QUEUED, JudgeRunStatus.RUNNING)


def judge_reviewer(name: str) -> Reviewer:
    """The reviewer of kind ``model`` called ``name``, created (without a usable
    password) when there is none. Raises ValidationError when ``name`` is not a
    valid reviewer name or belongs to a person: a judge never labels as a human."""
    name = normalize_name(name or "")
    validate_reviewer_name(name)
    existing = Reviewer.objects.filter(username=name).first()
    if existing is None:
        return Reviewer.objects.create_user(username=name, kind=ReviewerKind.MODEL)
    if existing.kind != ReviewerKind.MODEL:
        raise ValidationError(f"reviewer {name!r} is a {existing.get_kind_display().lower()}, not an automated "
                              "labeler: give the judge a name of its own (e.g. 'gpt-4o-judge')")
    return existing


def _claims_to_ask(run: Run, judge_run: JudgeRun):
    """Cited claims of ``run`` the judge still has to label: without a current
    label of the judge, or with ``relabel`` without one from this judge run."""
    own = Label.objects.filter(claim=OuterRef("pk"), reviewer_id=judge_run.reviewer_id, is_current=True)
    if judge_run.relabel:
        own = own.filter(judge_run=judge_run)
    return (Claim.objects.filter(answer__run=run).filter(Exists(Citation.objects.filter(claim=OuterRef("pk"))))
            .exclude(Exists(own)))


def _answer_ids(judge_run: JudgeRun) -> list[int]:
    """Ids of the answers with a claim to ask about, in ``question_id`` order, at most ``answer_limit``."""
    claims = _claims_to_ask(judge_run.run, judge_run)
    ids = (Answer.objects.filter(run=judge_run.run).filter(Exists(claims.filter(answer=OuterRef("pk"))))
           .order_by("question_key").values_list("pk", flat=True))
    if judge_run.answer_limit:
        ids = ids[:judge_run.answer_limit]
    return list(ids)


def judge_run_create(*, run: Run, reviewer_name: str, endpoint: JudgeEndpoint, answer_limit: int | None = None,
                     relabel: bool = False, started_by: Reviewer | None = None) -> JudgeRun:
    """Record a queued judge run of ``reviewer_name`` (kind ``model``, created
    if new) over ``run`` with ``endpoint``'s model, prompt (and its SHA-256),
    temperature and base URL; ``answers_total`` = the answers it will ask
    about now (at most ``answer_limit``).

    Raises ValidationError for a blank model, a limit below 1, a reviewer
    name that is a person's, or when this judge already has a queued or
    running judge run on ``run``.
    """
    if not endpoint.model.strip():
        raise ValidationError("name the model to ask (e.g. gpt-4o-mini, or the model your server serves)")
    if answer_limit is not None and answer_limit < 1:
        raise ValidationError(f"the answer limit must be at least 1, not {answer_limit}")
    if not 0 <= endpoint.temperature <= 2:
        raise ValidationError(f"the temperature must be between 0 and 2, not {endpoint.temperature:g}")
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).exists()
        reviewer = judge_reviewer(reviewer_name)
        if JudgeRun.objects.filter(run=run, reviewer=reviewer, status__in=ACTIVE).exists():
            raise ValidationError(f"judge {reviewer.username!r} is already labeling run {run.name!r}: wait for "
                                  "that judge run to finish")
        judge_run = JudgeRun.objects.create(
            run=run, reviewer=reviewer, started_by=started_by, source=JudgeSource.ENDPOINT,
            model=endpoint.model.strip(), base_url=endpoint.base_url, prompt=endpoint.prompt,
            prompt_sha256=prompt_sha256(endpoint.prompt), temperature=endpoint.temperature,
            answer_limit=answer_limit, relabel=relabel,
            details={"timeout_seconds": endpoint.timeout, "max_retries": endpoint.max_retries},
        )
        judge_run.answers_total = len(_answer_ids(judge_run))
        judge_run.save(update_fields=["answers_total"])
    return judge_run


def _request_claims(answer: Answer, claims: list[Claim]) -> list[ClaimToJudge]:
    """The claims of one answer as the request carries them (span if given, else the passage text)."""
    return [
        ClaimToJudge(id=str(claim.pk), text=claim.text, citations=[
            {"passage_id": citation.cited_id,
             "text": "" if citation.fabricated else (citation.span or citation.passage.text)}
            for citation in claim.citations.all()
        ])
        for claim in claims
    ]


def _write_verdicts(judge_run: JudgeRun, claims: list[Claim], reply: ParsedReply) -> dict[str, int]:
    """Record the judge's label on each claim of ``claims`` with a usable verdict
    in ``reply``, atomically. Returns the counts to add to the judge run:
    ``labeled``, ``malformed`` (a verdict breaking the SPEC §3 rule, e.g.
    SUPPORTED on a claim citing only fabricated passages) and ``changed``
    (the claim was edited while the judge read it)."""
    counts = {"labeled": 0, "malformed": 0, "changed": 0}
    asked = {str(claim.pk): claim for claim in claims if str(claim.pk) in reply.verdicts}
    if not asked:
        return counts
    with transaction.atomic():
        ids = [claim.pk for claim in asked.values()]
        # Lock first (PostgreSQL refuses FOR UPDATE with GROUP BY), then count the citations as they are now.
        revisions = dict(Claim.objects.select_for_update().filter(pk__in=ids).order_by("pk")
                         .values_list("pk", "revision"))
        cites = {pk: (n, sent) for pk, n, sent in Citation.objects.filter(claim_id__in=ids).values("claim_id")
                 .order_by().annotate(n=Count("id"), sent=Count("id", filter=Q(fabricated=False)))
                 .values_list("claim_id", "n", "sent")}
        now = {pk: (revision, *cites.get(pk, (0, 0))) for pk, revision in revisions.items()}
        new: list[Label] = []
        for claim_id, claim in asked.items():
            verdict = reply.verdicts[claim_id]
            if claim.pk not in now or now[claim.pk][0] != claim.revision:
                counts["changed"] += 1
                continue
            _, n_citations, n_sent = now[claim.pk]
            if label_problem(verdict.label, n_citations=n_citations, n_sent=n_sent) is not None:
                counts["malformed"] += 1
                continue
            new.append(Label(claim_id=claim.pk, reviewer_id=judge_run.reviewer_id, value=verdict.label,
                             justification=verdict.reason[:10_000], claim_revision=claim.revision,
                             judge_run=judge_run))
        previous = dict(Label.objects.filter(claim_id__in=[label.claim_id for label in new],
                                             reviewer_id=judge_run.reviewer_id, is_current=True)
                        .values_list("claim_id", "pk"))
        Label.objects.filter(pk__in=previous.values()).update(is_current=False)
        for label in new:
            label.supersedes_id = previous.get(label.claim_id)
        Label.objects.bulk_create(new)
        counts["labeled"] = len(new)
    return counts


def _add(judge_run: JudgeRun, **deltas: int) -> None:
    """Add ``deltas`` to the judge run's counts in the database (``F`` updates: the page polls them)."""
    JudgeRun.objects.filter(pk=judge_run.pk).update(**{name: F(name) + value for name, value in deltas.items()})


def judge_run_execute(judge_run_id: int, *, api_key: str | None = None) -> JudgeRun:
    """Carry out the queued judge run ``judge_run_id`` (the task queue's entry
    point, and ``manage.py autolabel``'s): ask the endpoint about each answer
    with claims left to label, write the verdicts, keep the counts up to date
    as it goes, and finish as ``done`` (or ``failed`` when no answer could be
    judged, the last error kept). ``api_key``: ``None`` reads the environment
    (``judge_protocol.api_key_from_env``). Returns the finished judge run.
    """
    judge_run = JudgeRun.objects.select_related("run", "reviewer").get(pk=judge_run_id)
    if judge_run.finished:
        return judge_run
    answer_ids = _answer_ids(judge_run)
    JudgeRun.objects.filter(pk=judge_run.pk).update(status=JudgeRunStatus.RUNNING, started_at=timezone.now(),
                                                    answers_total=len(answer_ids))
    details = judge_run.details or {}
    client = JudgeClient(JudgeEndpoint(
        model=judge_run.model, base_url=judge_run.base_url, temperature=judge_run.temperature or 0.0,
        timeout=float(details.get("timeout_seconds", 60)), max_retries=int(details.get("max_retries", 4)),
        prompt=judge_run.prompt,
    ), api_key=api_key)
    error = ""
    try:
        for answer_id in answer_ids:
            answer = Answer.objects.select_related("question").get(pk=answer_id)
            claims = list(_claims_to_ask(judge_run.run, judge_run).filter(answer_id=answer_id).order_by("index")
                          .prefetch_related("citations__passage"))
            if not claims:
                _add(judge_run, answers_done=1)
                continue
            try:
                reply = client.judge(answer.question.text, _request_claims(answer, claims))
            except (JudgeRequestError, JudgeReplyError) as exc:
                error = f"question {answer.question_key}: {exc}"
                logger.warning("judge run %s: %s", judge_run.pk, error)
                _add(judge_run, answers_failed=1)
                continue
            try:
                written = _write_verdicts(judge_run, claims, reply)
            except IntegrityError:
                error = f"question {answer.question_key}: labels changed while the verdicts were written"
                _add(judge_run, answers_failed=1)
                continue
            _add(judge_run, answers_done=1, claims_labeled=written["labeled"],
                 claims_malformed=len(reply.malformed) + written["malformed"], claims_changed=written["changed"],
                 claims_missing=len(reply.missing), claims_duplicated=len(reply.duplicated),
                 verdicts_unknown=reply.unknown)
    except Exception as exc:
        JudgeRun.objects.filter(pk=judge_run.pk).update(status=JudgeRunStatus.FAILED, finished_at=timezone.now(),
                                                        error=f"stopped: {type(exc).__name__}")
        raise
    judge_run.refresh_from_db()
    judge_run.status = (JudgeRunStatus.FAILED if judge_run.answers_total and not judge_run.answers_done
                        else JudgeRunStatus.DONE)
    judge_run.error = error
    judge_run.finished_at = timezone.now()
    judge_run.save(update_fields=["status", "error", "finished_at"])
    return judge_run


def judge_run_enqueue(judge_run: JudgeRun) -> None:
    """Hand ``judge_run`` to the task queue (django-q2: the database by default,
    Redis with ``CITELAB_REDIS_URL``); run it at once in this process when
    ``CITELAB_TASKS_SYNC`` is on (tests, or a deployment without a worker)."""
    from django_q.tasks import async_task

    async_task("labeling.judges.judge_run_execute", judge_run.pk, task_name=f"judge-run-{judge_run.pk}",
               sync=settings.CITELAB_TASKS_SYNC)
