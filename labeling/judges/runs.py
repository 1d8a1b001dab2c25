"""Judge runs: an automated labeler (a reviewer of kind ``model``) labels the
cited claims of a run through an OpenAI-compatible endpoint (SPEC §4.4; the
wire protocol is :mod:`labeling.judges.protocol`).

A judge's labels are graded against the humans' (``labeling.judges.grades``)
and never count as human labels unless a lead promotes the judge for the run
(SPEC §4.4). One request per answer; nothing is written for an answer whose
request or reply failed; a claim whose verdict is missing, duplicated,
unknown or malformed stays unlabeled by the judge and is counted on the
:class:`~labeling.models.JudgeRun`. Running the same judge again fills only
what it has not labeled (``relabel`` asks again about every cited claim).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from labeling.audit import audit_record
from labeling.db import analyze_after_bulk_write, lock_claims
from labeling.importers.verdicts import VerdictRecord
from labeling.judges.protocol import (
    ClaimToJudge,
    JudgeClient,
    JudgeEndpoint,
    JudgeReplyError,
    JudgeRequestError,
    ParsedReply,
    api_key_from_env,
    base_url_from_env,
    prompt_sha256,
)
from labeling.models import (
    Answer,
    AuditAction,
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
from labeling.runs import labels_changed
from scoring.labels import label_problem
from scoring.normalize import normalize_text

logger = logging.getLogger(__name__)

ACTIVE = (JudgeRunStatus.QUEUED, JudgeRunStatus.RUNNING)
# The answer limit is stored in a PositiveIntegerField: 2**31 − 1 on every database.
MAX_ANSWER_LIMIT = 2**31 - 1
# Reasons kept on a judge run (details["problems"]): enough to see a pattern, bounded.
MAX_PROBLEMS_KEPT = 200
# What a lead sees for every failed request of a judge run started in the browser: the
# same words whether the host refused, answered 404 or never answered, so the form
# cannot map the server's network. The log (and the command line) keep the details.
BROWSER_REQUEST_FAILED = ("the endpoint gave no usable answer (no connection, an HTTP error or no reply in "
                          "time; the server's log says which)")


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
    """Cited factual claims of ``run`` the judge still has to label: without a
    current label of the judge, or with ``relabel`` without one from this judge run."""
    own = Label.objects.filter(claim=OuterRef("pk"), reviewer_id=judge_run.reviewer_id, is_current=True)
    if judge_run.relabel:
        own = own.filter(judge_run=judge_run)
    # A claim marked not factual (SPEC §4.3b) is outside every count: nothing to ask.
    return (Claim.objects.filter(answer__run=run, factual=True)
            .filter(Exists(Citation.objects.filter(claim=OuterRef("pk")))).exclude(Exists(own)))


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

    ``started_by`` is the lead who started it in the browser (``None``: the
    command line); such a run may only use an endpoint of
    :func:`browser_endpoints`.

    Raises ValidationError for a blank model, a limit outside 1 …
    :data:`MAX_ANSWER_LIMIT`, a reviewer name that is a person's, an
    endpoint a lead may not choose, or when this judge already has a queued
    or running judge run on ``run``.
    """
    if not endpoint.model.strip():
        raise ValidationError("name the model to ask (e.g. gpt-4o-mini, or the model your server serves)")
    if answer_limit is not None and not 1 <= answer_limit <= MAX_ANSWER_LIMIT:
        raise ValidationError(f"the answer limit must be a whole number from 1 to {MAX_ANSWER_LIMIT:,}, "
                              f"not {answer_limit:,}")
    if started_by is not None:
        browser_endpoint_check(endpoint.base_url)
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


def browser_endpoints() -> list[str]:
    """The base URLs a lead may choose for a judge in the browser: the configured
    endpoint (``CITELAB_OPENAI_BASE_URL``; ``""`` is the client's default,
    OpenAI's) and those of ``CITELAB_JUDGE_ENDPOINTS``, without trailing ``/``."""
    return list(dict.fromkeys([base_url_from_env().rstrip("/"), *settings.CITELAB_JUDGE_ENDPOINTS]))


def browser_endpoint_check(base_url: str) -> None:
    """Raise ValidationError unless ``base_url`` (compared without a trailing
    ``/``) is one of :func:`browser_endpoints`: a lead must not make the server
    send requests to hosts of their choosing (its own network included)."""
    allowed = browser_endpoints()
    if base_url.strip().rstrip("/") in allowed:
        return
    shown = ", ".join(repr(url) if url else "OpenAI's (leave the endpoint empty)" for url in allowed)
    raise ValidationError(f"the endpoint {base_url.strip()!r} is not one a lead may choose here; allowed: "
                          f"{shown}. An administrator adds endpoints with CITELAB_JUDGE_ENDPOINTS.")


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
        lock_claims(ids)  # the answer, then the claims, as splits and merges lock them
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
        if new:
            labels_changed(run=judge_run.run_id)
        counts["labeled"] = len(new)
    return counts


def _add(judge_run: JudgeRun, **deltas: int) -> None:
    """Add ``deltas`` to the judge run's counts in the database (``F`` updates: the page polls them)."""
    JudgeRun.objects.filter(pk=judge_run.pk).update(**{name: F(name) + value for name, value in deltas.items()})


def _keep_problems(judge_run: JudgeRun, problems: list[str], new: list[str]) -> None:
    """Append ``new`` to the judge run's ``details["problems"]`` (at most
    :data:`MAX_PROBLEMS_KEPT`; the executor is the only writer of ``details``)."""
    room = MAX_PROBLEMS_KEPT - len(problems)
    if not new or room <= 0:
        return
    problems.extend(new[:room])
    JudgeRun.objects.filter(pk=judge_run.pk).update(details={**(judge_run.details or {}), "problems": problems})


def endpoint_key(judge_run: JudgeRun) -> str:
    """The API key a judge run may send: the environment's
    (``judge_protocol.api_key_from_env``) for a run started from the command
    line, or for one started in the browser against the configured endpoint
    (``CITELAB_OPENAI_BASE_URL``, or the client's default when unset); none
    for another endpoint typed in the browser, so a lead cannot have the
    server's key sent to a host of their choosing."""
    if judge_run.started_by_id is None or judge_run.base_url in ("", base_url_from_env()):
        return api_key_from_env()
    return ""


def judge_run_execute(judge_run_id: int, *, api_key: str | None = None) -> JudgeRun:
    """Carry out the queued judge run ``judge_run_id`` (the task queue's entry
    point, and ``manage.py autolabel``'s): ask the endpoint about each answer
    with claims left to label, write the verdicts, keep the counts up to date
    as it goes, and finish as ``done`` (or ``failed`` when no answer could be
    judged, the last error kept). An answer whose request or reply fails
    (an HTTP error, a timeout, an HTML page, a body that is not JSON or is
    nested too deep, verdicts the database refuses) fails alone: nothing is
    written for it, its reason goes to ``details["problems"]`` (with the
    reasons of verdicts left malformed), and the next answer is asked. For a
    run started in the browser every failed request reads
    :data:`BROWSER_REQUEST_FAILED`. ``api_key``: ``None`` takes
    :func:`endpoint_key`. Returns the finished judge run.
    """
    judge_run = JudgeRun.objects.select_related("run", "reviewer").get(pk=judge_run_id)
    if judge_run.finished:
        return judge_run
    answer_ids = _answer_ids(judge_run)
    JudgeRun.objects.filter(pk=judge_run.pk).update(status=JudgeRunStatus.RUNNING, started_at=timezone.now(),
                                                    answers_total=len(answer_ids))
    details = judge_run.details or {}
    if api_key is None:
        api_key = endpoint_key(judge_run)
    client = JudgeClient(JudgeEndpoint(
        model=judge_run.model, base_url=judge_run.base_url, temperature=judge_run.temperature or 0.0,
        timeout=float(details.get("timeout_seconds", 60)), max_retries=int(details.get("max_retries", 4)),
        prompt=judge_run.prompt,
    ), api_key=api_key)
    error = ""
    problems: list[str] = []
    browser = judge_run.started_by_id is not None

    def fail(question_key: str, reason: str) -> None:
        # Only this answer fails: its reason is kept on the judge run, and the next answer is asked.
        nonlocal error
        error = f"question {question_key}: {reason}"
        _keep_problems(judge_run, problems, [error])
        _add(judge_run, answers_failed=1)

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
            except JudgeRequestError as exc:
                logger.warning("judge run %s: question %s: %s", judge_run.pk, answer.question_key, exc)
                fail(answer.question_key, BROWSER_REQUEST_FAILED if browser else str(exc))
                continue
            except JudgeReplyError as exc:
                logger.warning("judge run %s: question %s: %s", judge_run.pk, answer.question_key, exc)
                fail(answer.question_key, str(exc))
                continue
            except Exception as exc:
                # A reply the protocol module did not foresee: this answer fails, the run goes on.
                logger.exception("judge run %s: question %s", judge_run.pk, answer.question_key)
                fail(answer.question_key, f"the reply could not be read ({type(exc).__name__})")
                continue
            try:
                written = _write_verdicts(judge_run, claims, reply)
            except IntegrityError:
                fail(answer.question_key, "labels changed while the verdicts were written")
                continue
            except (DatabaseError, ValueError) as exc:
                # What the database refused (rolled back with _write_verdicts' transaction): this answer only.
                logger.exception("judge run %s: question %s", judge_run.pk, answer.question_key)
                fail(answer.question_key, f"the verdicts could not be stored ({type(exc).__name__})")
                continue
            _keep_problems(judge_run, problems, [f"question {answer.question_key}, {problem}"
                                                 for problem in reply.problems])
            _add(judge_run, answers_done=1, claims_labeled=written["labeled"],
                 claims_malformed=len(reply.malformed) + written["malformed"], claims_changed=written["changed"],
                 claims_missing=len(reply.missing), claims_duplicated=len(reply.duplicated),
                 verdicts_unknown=reply.unknown)
    except Exception as exc:
        JudgeRun.objects.filter(pk=judge_run.pk).update(status=JudgeRunStatus.FAILED, finished_at=timezone.now(),
                                                        error=f"stopped: {type(exc).__name__}")
        raise
    with transaction.atomic():
        judge_run.refresh_from_db()
        judge_run.status = (JudgeRunStatus.FAILED if judge_run.answers_total and not judge_run.answers_done
                            else JudgeRunStatus.DONE)
        judge_run.error = error
        judge_run.finished_at = timezone.now()
        judge_run.save(update_fields=["status", "error", "finished_at"])
        # One audit event per judge run (SPEC §7's log): who had which judge label how many claims.
        audit_record(action=AuditAction.LABEL, actor=judge_run.started_by, run=judge_run.run,
                     target=f"judge {judge_run.reviewer.username} · {judge_run.claims_labeled} claims",
                     detail={"judge": judge_run.reviewer.username, "judge_run": judge_run.pk,
                             "model": judge_run.model, "labeled": judge_run.claims_labeled,
                             "answers_failed": judge_run.answers_failed})
    return judge_run


def judge_run_enqueue(judge_run: JudgeRun, *, broker=None) -> None:
    """Hand ``judge_run`` to the task queue (django-q2: the database by default,
    Redis with ``CITELAB_REDIS_URL``; ``broker`` overrides the configured one);
    run it at once in this process when ``CITELAB_TASKS_SYNC`` is on (tests, or
    a deployment without a worker). A worker (``manage.py qcluster``) runs
    :func:`judge_run_execute`."""
    from django_q.tasks import async_task

    options = {"broker": broker} if broker is not None else {}
    async_task("labeling.judges.runs.judge_run_execute", judge_run.pk, task_name=f"judge-run-{judge_run.pk}",
               sync=settings.CITELAB_TASKS_SYNC, **options)


@dataclass(frozen=True)
class Unmatched:
    """A verdict of an imported file that names no claim of the run it can honestly
    be put on: ``line`` of the file, ``question_id``, how it named the claim, why."""

    line: int
    question_id: str
    claim: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: question {self.question_id!r}, {self.claim}: {self.reason}"


@dataclass
class VerdictImport:
    """What ``verdicts_import`` did (or would do, ``dry_run``): ``labeled``
    claims, ``unchanged`` (the judge's current label already said so),
    ``unmatched`` verdicts listed with their reason, the ``judge_run``
    recorded (``None`` on a dry run)."""

    labeled: int = 0
    unchanged: int = 0
    unmatched: list[Unmatched] = field(default_factory=list)
    judge_run: JudgeRun | None = None


def _claim_key(text: str) -> str:
    return normalize_text(text)


def verdicts_import(*, run: Run, reviewer_name: str, records: list[VerdictRecord], model: str = "",
                    details: dict | None = None, dry_run: bool = False,
                    started_by: Reviewer | None = None) -> VerdictImport:
    """Record another judge's verdicts (``labeling.importers.verdicts``) on
    ``run`` as the labels of the reviewer ``reviewer_name`` of kind ``model``
    (created if new), all at once or not at all.

    A record is matched to a claim of the answer to its ``question_id`` by
    claim index, by claim text (normalized, and only when exactly one claim
    of the answer has it) or by the claim id ``autolabel`` sent. Records
    that match nothing, name an uncited claim (UNCITED by rule), break the
    SPEC §3 rule (SUPPORTED on a claim citing only fabricated passages), or
    give one claim two verdicts are listed in ``unmatched`` with the reason,
    never guessed. The matched ones become the judge's current labels
    (earlier ones kept in history) under a new imported JudgeRun holding
    ``model`` and ``details``. Raises ValidationError for a reviewer name
    that is a person's.
    """
    result = VerdictImport()
    answers = {key: pk for pk, key in Answer.objects.filter(run=run).values_list("pk", "question_key")}
    wanted = {answers[r.question_id] for r in records if r.question_id in answers}
    claims: dict[int, list[tuple[int, int, str, int, int, int]]] = {}
    cites = {pk: (n, sent) for pk, n, sent in Citation.objects.filter(claim__answer_id__in=wanted)
             .values("claim_id").order_by().annotate(n=Count("id"), sent=Count("id", filter=Q(fabricated=False)))
             .values_list("claim_id", "n", "sent")}
    not_factual: set[int] = set()
    for pk, answer_id, index, text, revision, factual in (
            Claim.objects.filter(answer_id__in=wanted)
            .values_list("pk", "answer_id", "index", "text", "revision", "factual")):
        claims.setdefault(answer_id, []).append((pk, index, _claim_key(text), revision, *cites.get(pk, (0, 0))))
        if not factual:
            not_factual.add(pk)
    chosen: dict[int, tuple[VerdictRecord, int]] = {}
    repeated: set[int] = set()
    for record in records:
        if record.question_id not in answers:
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator,
                                              f"run {run.name!r} has no answer to this question"))
            continue
        rows = claims.get(answers[record.question_id], [])
        if record.claim_index is not None:
            found = [row for row in rows if row[1] == record.claim_index]
            why = f"the answer has no claim {record.claim_index} (it has {len(rows)})"
        elif record.claim_id is not None:
            found = [row for row in rows if row[0] == record.claim_id]
            why = "no claim of this answer has that id"
        else:
            found = [row for row in rows if row[2] == _claim_key(record.claim_text or "")]
            why = ("no claim of the answer has this text" if not found else
                   f"{len(found)} claims of the answer have this text: name it by claim_index")
        if len(found) != 1:
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator, why))
            continue
        pk, _, _, revision, n_citations, n_sent = found[0]
        if pk in not_factual:
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator,
                                              "the claim is marked not a factual claim: it is outside every count"))
            continue
        if not n_citations:
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator,
                                              "the claim has no citation: it is UNCITED by rule, nobody judges it"))
            continue
        problem = label_problem(record.label, n_citations=n_citations, n_sent=n_sent)
        if problem is not None:
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator, problem.message))
            continue
        if pk in chosen:
            repeated.add(pk)
            first = chosen[pk][0]
            result.unmatched.append(Unmatched(record.line, record.question_id, record.locator,
                                              f"a second verdict for the claim of line {first.line}: neither is "
                                              "used"))
            continue
        chosen[pk] = (record, revision)
    for pk in repeated:
        first = chosen.pop(pk)[0]
        result.unmatched.append(Unmatched(first.line, first.question_id, first.locator,
                                          "the claim has another verdict further on: neither is used"))
    result.unmatched.sort(key=lambda item: item.line)
    with transaction.atomic():
        reviewer = judge_reviewer(reviewer_name)
        current = {claim_id: (pk, value, justification) for pk, claim_id, value, justification in
                   Label.objects.filter(claim_id__in=list(chosen), reviewer=reviewer, is_current=True)
                   .values_list("pk", "claim_id", "value", "justification")}
        changes = {pk: pair for pk, pair in chosen.items()
                   if current.get(pk, (None, None, None))[1:] != (pair[0].label, pair[0].reason)}
        result.labeled, result.unchanged = len(changes), len(chosen) - len(changes)
        if dry_run:
            transaction.set_rollback(True)
            return result
        now = timezone.now()
        answered = len({record.question_id for record in records if record.question_id in answers})
        judge_run = JudgeRun.objects.create(
            run=run, reviewer=reviewer, started_by=started_by, source=JudgeSource.IMPORT, model=model,
            details={**(details or {}), "unmatched": [str(item) for item in result.unmatched[:1000]]},
            status=JudgeRunStatus.DONE, answers_total=answered, answers_done=answered,
            claims_labeled=len(changes), claims_missing=len(result.unmatched), started_at=now, finished_at=now,
        )
        Label.objects.filter(pk__in=[current[pk][0] for pk in changes if pk in current]).update(is_current=False)
        Label.objects.bulk_create([
            Label(claim_id=pk, reviewer=reviewer, value=record.label, justification=record.reason,
                  claim_revision=revision, judge_run=judge_run, supersedes_id=current.get(pk, (None,))[0])
            for pk, (record, revision) in changes.items()
        ], batch_size=1000)
        analyze_after_bulk_write((Label,), rows=len(changes))
        labels_changed(run=run)
        audit_record(action=AuditAction.IMPORT_LABELS, actor=started_by, run=run,
                     target=str((details or {}).get("file") or "verdicts"),
                     detail={"judge": reviewer.username, "judge_run": judge_run.pk, "model": model,
                             "labeled": len(changes), "unmatched": len(result.unmatched)})
        judge_run.refresh_from_db()
        result.judge_run = judge_run
    return result


def _run_judge(run: Run, judge: Reviewer | None, what: str) -> Reviewer | None:
    if judge is not None and judge.kind != ReviewerKind.MODEL:
        raise ValidationError(f"{judge.username!r} is not an automated labeler: only a judge (kind 'model') can "
                              f"be {what}")
    return judge


def run_judge_promote(*, run: Run, judge: Reviewer | None) -> Run:
    """Promote ``judge`` for ``run`` (its labels then count as a human's there:
    coverage, support, disputes and adjudication, SPEC §4.4), or with ``None``
    demote the promoted one. The caller checks the user leads the project.
    Raises ValidationError when ``judge`` is not of kind ``model``."""
    run.promoted_judge = _run_judge(run, judge, "promoted")
    Run.objects.filter(pk=run.pk).update(promoted_judge=run.promoted_judge)
    return run


def run_queue_judge_set(*, run: Run, judge: Reviewer | None) -> Run:
    """Order each answer's claims in every reviewer's queue by ``judge``'s
    verdict, its UNSUPPORTED calls first (``None``: claim order again). The
    caller checks the user leads the project. Raises ValidationError when
    ``judge`` is not of kind ``model``."""
    run.queue_judge = _run_judge(run, judge, "used to sort the queue")
    Run.objects.filter(pk=run.pk).update(queue_judge=run.queue_judge)
    return run
