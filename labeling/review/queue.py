"""The reviewer's queue through a run (where an answer sits in its run: ``labeling.review.neighbours``).

A reviewer's queue in a run: the cited claims without their current label
that still need a reviewer — fewer current labels from human reviewers (kind
``human``; imported annotators and models never fill a claim's overlap) plus
unexpired leases of other reviewers than the run's ``overlap`` — provided the
reviewer works on the run: they are assigned to it, or nobody is (then every
member who may label does).

Reservations (SPEC §7). When the queue hands a claim to a reviewer to
label (``lease=True``: the next claim after a save, "Start labeling", ``n``,
the first claim of an answer opened without one), it records a lease
(``ClaimLease``: reviewer, claim, ``expires_at`` = now +
``settings.CITELAB_LEASE_SECONDS``), so reviewers working at once get
different claims and a claim never has more reviewers on it than its overlap.
The lease ends with the reviewer's label on the claim (``label_writes.label_save``),
when the queue hands them another claim of the run (a skip: one lease per
reviewer and run), or at ``expires_at``. ``lease_take`` writes it with one
conditional upsert that counts the claim's human labels and other reviewers'
unexpired leases and writes only when they are below the overlap. On
PostgreSQL it runs in a transaction after locking the claim's row (``FOR NO
KEY UPDATE SKIP LOCKED``: a claim another reviewer is taking or labeling
right now is skipped, never waited for), so its snapshot, taken after the
lock, sees what every earlier taker committed; on SQLite the statement runs
under the database's write lock (one writer at a time), which serializes
takes the same way. ``tests/test_leases.py`` checks it with six reviewers at
once on both.

Every label save runs these, so three of them are written in SQL (the
next-answer walk, the queue within an answer, the lease): building the same
statements with the ORM took 3–6 ms of Python each against 0.3–2 ms of
database time (``tests/bench/test_bench_review.py``, PostgreSQL, 10k-answer
run; the queue within an answer 5.7 ms to build, 0.3 ms to run on SQLite). A
run with a queue judge orders each answer by the judge's calls and keeps the
ORM form there. Within an answer, what comes before the walk (:func:`priority_claim`)
and the queue there are one statement (``_PRIORITY_IN_ANSWER_SQL``): a save that moves
on in its answer asks the database once for the next claim, then leases it. The
queue rule thus has two forms, both here and nowhere else: the ORM's
(:func:`unlabeled_claims` from :func:`works_on`, :func:`awaits` and
:func:`human_label_count`) and the SQL fragments every statement below is built
from (``_WORKS_ON_SQL``, ``_AWAITS_SQL``, ``_NEEDS_REVIEWER_SQL``, in ``labeling.review.queue_sql``);
``tests/test_queue_rule.py`` holds the two together. Both walks use the ``(run,
question_key)`` index (``Answer.question_key``), so their cost does not grow with
the number of runs or labels.

What comes before the walk (SPEC §4.4, :func:`priority_claim`): first the claims a
lead sent back to the reviewer for rework (``SendBack``, oldest first, whatever
their label and overlap), then, when due, a hidden gold check: a gold claim
of the run (``GoldClaim``) the reviewer has not labeled, whatever its overlap,
so every reviewer who works on the run meets gold at ``Run.gold_rate``. A
check is due when the reviewer's gold labels fall behind the rate: gold label
number k (0-based) comes at the first hand-out after ``(k + uₖ) / rate`` of
their labels in the run, ``uₖ`` a fixed pseudo-random number in [0, 1) of
(run, reviewer, k) — one check at a random place in each stretch of
``1 / rate`` labels, so neither its place nor its look tells it from any other
claim. A lead's own gold claims are never checks for that lead. Both are
leased to the reviewer without the overlap test (``lease_force``).

On PostgreSQL the claim test of the next-answer walk ends in ``OFFSET 0``: it
keeps the planner from turning the ``EXISTS`` into a semi-join over every claim
of the run. Without statistics (a fresh database before autovacuum's first
ANALYZE) the planner guesses ~10 answers per run and chooses that join, which
evaluates the queue test on all 33k cited claims of a 50k-claim run: 430 ms per
save instead of 0.4 ms (``tests/bench/test_bench_review.py``). With the fence
the test runs answer by answer in ``question_key`` order and stops at the
first hit, whatever the statistics say.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from labeling.models import (
    Answer,
    Assignment,
    Citation,
    Claim,
    ClaimLease,
    GoldClaim,
    Label,
    LabelValue,
    Question,
    Reviewer,
    ReviewerKind,
    Run,
    Sample,
    SampleMember,
    SendBack,
)
from labeling.review.gold_pace import after_labeling, gold_due, gold_offset
from labeling.review.queue_sql import (
    _GOLD_PACE_SQL,
    _IN_ANSWER_SQL,
    _KEY_CONDITIONS,
    _LEASE_FORCE_SQL,
    _LEASE_SQL,
    _LOCK_SQL,
    _NEXT_ANSWER_SQL,
    _NEXT_SAMPLED_SQL,
    _POSITION_CONDITIONS,
    _PRIORITY_IN_ANSWER_SQL,
    _PRIORITY_SQL,
    _PRIORITY_WALK_SQL,
    _WALK_ANSWER_SQL,
)
from labeling.review.rows import columns, instance

# Claims (or answers) a hand-out tries before it gives up: each failed try is a claim
# another reviewer leased between the queue's read and the take.
LEASE_TRIES = 8


# Whose current labels fill a claim's overlap: people who label here (kind ``human``);
# imported annotators and models never do (module docstring).
OVERLAP_KIND = ReviewerKind.HUMAN


def human_label_count(claim: str = "pk") -> Coalesce:
    """How many current labels of ``OVERLAP_KIND`` the claim at ``OuterRef(claim)`` has."""
    counts = (Label.objects.filter(claim=OuterRef(claim), is_current=True, reviewer__kind=OVERLAP_KIND)
              .values("claim").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(counts, output_field=IntegerField()), 0)


def needs_reviewer(labels: Iterable[Label], overlap: int) -> bool:
    """Whether a claim with ``labels`` (each with its reviewer loaded) still needs a
    reviewer by its labels: fewer current ones of ``OVERLAP_KIND`` than ``overlap``
    (leases aside: the queue adds them, :func:`unlabeled_claims`). No query."""
    return sum(1 for label in labels if label.is_current and label.reviewer.kind == OVERLAP_KIND) < overlap


def leased_by_others(reviewer: Reviewer, *, now: datetime, claim: str = "pk") -> Coalesce:
    """How many unexpired leases of reviewers other than ``reviewer`` the claim at
    ``OuterRef(claim)`` has (at most one per reviewer and run)."""
    counts = (ClaimLease.objects.filter(claim=OuterRef(claim), expires_at__gt=now).exclude(reviewer=reviewer)
              .values("claim").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(counts, output_field=IntegerField()), 0)


def works_on(run: Run | Any, reviewer: Reviewer | Any) -> Exists | Any:
    """Whether ``reviewer`` works on ``run``: assigned to it, or nobody is (an
    expression). Either may be an ``OuterRef`` (every run a user sees, every member
    of a project). ``_WORKS_ON_SQL`` is its SQL form."""
    assignments = Assignment.objects.filter(run=run)
    return ~Exists(assignments) | Exists(assignments.filter(reviewer=reviewer))


def awaits(reviewer: Reviewer, *, claim: str = "pk") -> Q:
    """A ``Q`` on the claim at ``OuterRef(claim)`` (``claim`` also leads from the queried
    model to it, ``"pk"`` for a ``Claim``): factual, cited, and without a current label
    by ``reviewer``. ``_AWAITS_SQL`` is its SQL form."""
    path = "" if claim == "pk" else f"{claim}__"
    return (Q(**{f"{path}factual": True}) & Q(Exists(Citation.objects.filter(claim=OuterRef(claim))))
            & ~Q(Exists(Label.objects.filter(claim=OuterRef(claim), reviewer=reviewer, is_current=True))))


def unlabeled_claims(reviewer: Reviewer, run: Run) -> QuerySet[Claim]:
    """The reviewer's queue in ``run`` (see the module docstring), unordered: the one
    ORM form of the rule; ``_IN_QUEUE_SQL`` is its SQL form for the walk, and
    ``tests/test_queue_rule.py`` holds the two together."""
    return (Claim.objects.filter(answer__run=run).filter(awaits(reviewer))
            .alias(n_taken=human_label_count() + leased_by_others(reviewer, now=timezone.now()))
            .filter(n_taken__lt=run.overlap)
            .filter(works_on(run, reviewer)))


def exists_fence() -> str:
    """What ends a correlated ``EXISTS`` subquery that must run row by row (see the
    module docstring): ``OFFSET 0`` on PostgreSQL; nothing on SQLite, which has no
    OFFSET without LIMIT and runs EXISTS row by row anyway."""
    return "OFFSET 0" if connection.vendor == "postgresql" else ""


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table)
            for name, model in (("answer", Answer), ("claim", Claim), ("citation", Citation), ("label", Label),
                                ("reviewer", Reviewer), ("assignment", Assignment), ("lease", ClaimLease),
                                ("sample", Sample), ("member", SampleMember), ("gold", GoldClaim),
                                ("send_back", SendBack), ("question", Question))}


def _queue_params(run: Run, reviewer: Reviewer, now: Any) -> list[Any]:
    """The parameters of ``_IN_QUEUE_SQL``, in order."""
    return [reviewer.pk, reviewer.pk, OVERLAP_KIND.value, reviewer.pk, now, run.overlap]


def _walk_sql(run: Run, reviewer: Reviewer, op: str = "", key: str = "",
              sampled: tuple[tuple[str, int | None], ...] = ()) -> tuple[str, list[Any]]:
    """The statement of the first answer's id of the walk ``op``/``key``, and its
    parameters; with ``sampled``, the sample's walks (``(op, after answer id)``) are
    tried first, in the same statement."""
    tables = _tables()
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    queue_params = _queue_params(run, reviewer, now)
    parts, params = [], []
    for sample_op, after_id in sampled:
        where = _POSITION_CONDITIONS[sample_op].format(**tables)
        parts.append(_NEXT_SAMPLED_SQL.format(where=where, fence=exists_fence(), **tables))
        params += [run.pk, *([after_id] if sample_op else []), *queue_params]
    parts.append(_NEXT_ANSWER_SQL.format(where=_KEY_CONDITIONS[op], fence=exists_fence(), **tables))
    params += [run.pk, *([key] if op else []), *queue_params]
    # COALESCE stops at the first walk that finds an answer.
    sql = parts[0] if len(parts) == 1 else "SELECT COALESCE(" + ", ".join(f"({p})" for p in parts) + ")"
    return sql, params


def _first_of(statements: list[str]) -> str:
    """The first non-NULL value of the scalar ``statements``, taken in turn (SQLite's
    COALESCE wants two arguments at least)."""
    inner = ", ".join(f"({statement})" for statement in statements)
    return f"COALESCE({inner})" if len(statements) > 1 else inner


def _first_answer(run: Run, reviewer: Reviewer, walks: list[tuple[str, list[Any]]], *,
                  priority: Claim | bool = False) -> tuple[tuple[int | None, int] | None, Answer | None]:
    """The answer (with its question and ``run``) that the first of ``walks`` to find one
    finds, else ``None``: one statement, whatever the number of walks. With ``priority``
    (``True``, or the claim to skip), ``_PRIORITY_SQL``'s ``(sent_back, gold_open)``
    from the same statement comes first; else ``None``."""
    answer, question = columns(Answer, "a"), columns(Question, "q")
    tables = _tables()
    template = _WALK_ANSWER_SQL if priority is False else _PRIORITY_WALK_SQL
    sql = template.format(answer_cols=answer.select, question_cols=question.select,
                          walks=_first_of([walk for walk, _params in walks]),
                          priority=_PRIORITY_SQL.format(**tables), **tables)
    params = [param for _walk, params in walks for param in params]
    if priority is not False:
        params = _priority_params(run, reviewer, priority if isinstance(priority, Claim) else None) + params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    marks = None
    if priority is not False:
        marks, row = row[:2], row[2:]
    if row is None:
        return marks, None
    found = instance(answer, row, 0)
    if found is None:
        return marks, None
    found.question = instance(question, row, answer.width)
    found.run = run
    return marks, found


def _in_answer(run: Run, reviewer: Reviewer, answer: Answer, *, after_index: int, limit: int) -> list[Claim]:
    """The first ``limit`` claims of ``answer`` (loaded, with its question) after
    ``after_index`` in the reviewer's queue, in index order (a run without a queue judge),
    each with ``answer`` set: one statement, no ORM to build (module docstring)."""
    sql = _IN_ANSWER_SQL.format(select="c.*", index=connection.ops.quote_name("index"), **_tables())
    claims = list(Claim.objects.raw(sql, _in_answer_params(run, reviewer, answer, after_index, limit)))
    for claim in claims:
        claim.answer = answer
    return claims


def _in_answer_params(run: Run, reviewer: Reviewer, answer: Answer, after_index: int, limit: int) -> list[Any]:
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    return [answer.pk, after_index, reviewer.pk, reviewer.pk, OVERLAP_KIND.value, reviewer.pk, now, run.overlap,
            limit]


def _first_in_answer(run: Run, reviewer: Reviewer, answer: Answer, *, after_index: int,
                     lease: bool) -> Claim | None:
    """The first claim of :func:`_in_answer`, or with ``lease`` the first of up to
    ``LEASE_TRIES`` that ``lease_take`` reserves for the reviewer."""
    candidates = _in_answer(run, reviewer, answer, after_index=after_index, limit=LEASE_TRIES if lease else 1)
    return _take_first(run, reviewer, candidates, lease=lease)


def _take_first(run: Run, reviewer: Reviewer, candidates: list[Claim], *, lease: bool) -> Claim | None:
    if not lease:
        return candidates[0] if candidates else None
    return next((claim for claim in candidates if lease_take(run=run, reviewer=reviewer, claim=claim)), None)


def _priority_and_first_in_answer(run: Run, reviewer: Reviewer, answer: Answer, *, after_index: int,
                                  lease: bool, skip: Claim | None, elsewhere_stops: bool,
                                  skip_labeled: bool = False) -> Claim | None:
    """:func:`priority_claim` when a claim of ``answer`` comes before the walk, else
    :func:`_first_in_answer` (or, with ``elsewhere_stops``, ``None`` when the claim that
    comes first is in another answer); with ``lease``, the claim handed out is reserved.
    One statement for both (more for a priority claim, as :func:`priority_claim` says),
    then the lease."""
    claim = columns(Claim, "c")
    index = connection.ops.quote_name("index")
    tables = _tables()
    sql = _PRIORITY_IN_ANSWER_SQL.format(
        priority=_PRIORITY_SQL.format(**tables), index=index,
        in_answer=_IN_ANSWER_SQL.format(select=claim.select, index=index, **tables))
    limit = LEASE_TRIES if lease else 1
    with connection.cursor() as cursor:
        cursor.execute(sql, _priority_params(run, reviewer, skip)
                       + _in_answer_params(run, reviewer, answer, after_index, limit))
        rows = cursor.fetchall()
    sent_back, gold_open = rows[0][:2]
    first = _priority_from(run, reviewer, skip, sent_back=sent_back, gold_open=gold_open,
                           skip_labeled=skip_labeled)
    if first is not None and (first.answer_id == answer.pk or elsewhere_stops):
        if first.answer_id != answer.pk:
            return None
        if lease:
            lease_force(run=run, reviewer=reviewer, claim=first)
        return first
    candidates = [found for found in (instance(claim, row, 2) for row in rows) if found is not None]
    for found in candidates:
        found.answer = answer
    return _take_first(run, reviewer, candidates, lease=lease)


def lease_take(*, run: Run, reviewer: Reviewer, claim: Claim) -> bool:
    """Reserve ``claim`` (of ``run``) for ``reviewer`` for ``settings.CITELAB_LEASE_SECONDS``
    (see the module docstring), releasing their last lease in the run.

    True when the lease is theirs; False, with nothing written, when the claim's
    human labels plus other reviewers' unexpired leases already reach the run's
    overlap, when the claim is gone (merged into its neighbour since the queue
    read it), or (PostgreSQL) another transaction holds the claim's row right
    now (a reviewer taking, labeling, splitting or merging it). PostgreSQL: one transaction of two
    statements (the row lock, then the conditional upsert, whose snapshot follows
    the lock and so sees every lease and label committed by whoever held the row
    before). SQLite: the upsert alone, one statement, which runs under the
    database's write lock from its first read (one writer at a time).
    """
    if connection.vendor != "postgresql":
        return _lease_upsert(run, reviewer, claim)
    with transaction.atomic():
        # In SQL: the ORM took longer to build this lock than the database to take it.
        with connection.cursor() as cursor:
            cursor.execute(_LOCK_SQL.format(**_tables()), [claim.pk])
            locked = cursor.fetchone()
        return locked is not None and _lease_upsert(run, reviewer, claim)


def _lease_upsert(run: Run, reviewer: Reviewer, claim: Claim) -> bool:
    now = timezone.now()
    expires = now + timedelta(seconds=settings.CITELAB_LEASE_SECONDS)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(_LEASE_SQL.format(**_tables()), [
            run.pk, reviewer.pk, claim.pk, adapt(expires), claim.pk,
            claim.pk, OVERLAP_KIND.value, claim.pk, reviewer.pk, adapt(now), run.overlap])
        return cursor.rowcount == 1


def lease_force(*, run: Run, reviewer: Reviewer, claim: Claim) -> None:
    """Reserve ``claim`` for ``reviewer`` for ``settings.CITELAB_LEASE_SECONDS`` without
    the overlap test of :func:`lease_take` (a send-back or a gold check, which the
    reviewer gets whatever the claim's other labels), releasing their last lease in
    the run. One statement."""
    expires = timezone.now() + timedelta(seconds=settings.CITELAB_LEASE_SECONDS)
    with connection.cursor() as cursor:
        cursor.execute(_LEASE_FORCE_SQL.format(**_tables()),
                       [run.pk, reviewer.pk, claim.pk, connection.ops.adapt_datetimefield_value(expires)])


def priority_claim(*, run: Run, reviewer: Reviewer, skip: Claim | None = None,
                   skip_labeled: bool = False) -> Claim | None:
    """The claim that comes before the walk for ``reviewer`` in ``run`` (module
    docstring), with its answer and question, unleased; ``None`` when nothing comes
    first. ``skip`` (the claim the reviewer passes over with ``n``) is not handed
    back. With ``skip_labeled``, ``skip`` counts as labeled by the reviewer, as it
    will be once the label on screen is saved: the page's look ahead
    (``views.review.claim_next``) then meets the gold check the save will meet.
    One query, two more when a gold check may be due (two more with
    ``skip_labeled``), one more for the claim."""
    with connection.cursor() as cursor:
        cursor.execute(_PRIORITY_SQL.format(**_tables()), _priority_params(run, reviewer, skip))
        sent_back, gold_open = cursor.fetchone()
    return _priority_from(run, reviewer, skip, sent_back=sent_back, gold_open=gold_open, skip_labeled=skip_labeled)


def _priority_params(run: Run, reviewer: Reviewer, skip: Claim | None) -> list[Any]:
    """The parameters of ``_PRIORITY_SQL``, in order."""
    skip_id = skip.pk if skip is not None else 0
    return [run.pk, reviewer.pk, skip_id, run.pk, run.pk, reviewer.pk, run.pk, reviewer.pk, reviewer.pk]


def _priority_from(run: Run, reviewer: Reviewer, skip: Claim | None, *, sent_back: int | None,
                   gold_open: int, skip_labeled: bool = False) -> Claim | None:
    """:func:`priority_claim` once ``_PRIORITY_SQL`` said which send-back comes first
    (``sent_back``) and how many gold checks are open (``gold_open``)."""
    now_skip = skip.pk if skip is not None else 0
    claims = Claim.objects.select_related("answer__question")
    if sent_back is not None:
        return claims.filter(pk=sent_back).first()
    if not gold_open or run.gold_rate <= 0:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_GOLD_PACE_SQL.format(fence=exists_fence(), **_tables()), [reviewer.pk, run.pk])
        labeled, gold_labeled = cursor.fetchone()
    if skip_labeled and skip is not None:
        labeled, gold_labeled, gold_open = after_labeling(reviewer, skip, labeled, gold_labeled, gold_open)
        if not gold_open:
            return None
    if not gold_due(rate=run.gold_rate, labeled=labeled, gold_labeled=gold_labeled,
                    offset=gold_offset(run.pk, reviewer.pk, gold_labeled)):
        return None
    # Which check: a fixed pseudo-random order per reviewer, so reviewers meet different ones first.
    gold = (GoldClaim.objects.filter(run=run, is_current=True).filter(awaits(reviewer, claim="claim"))
            .exclude(lead=reviewer).exclude(claim_id=now_skip)
            .annotate(shuffle=(F("claim_id") * 7919 + reviewer.pk * 104729) % 1009)
            .order_by("shuffle", "claim_id").values_list("claim_id", flat=True).first())
    return claims.filter(pk=gold).first() if gold is not None else None


def _hand_out(run: Run, reviewer: Reviewer, candidates: QuerySet[Claim]) -> Claim | None:
    """The first of ``candidates`` (ordered) that ``lease_take`` reserves for ``reviewer``,
    trying at most ``LEASE_TRIES``; ``None`` when every one tried was taken meanwhile."""
    for claim in candidates[:LEASE_TRIES]:
        if lease_take(run=run, reviewer=reviewer, claim=claim):
            return claim
    return None


def next_answer_to_label(*, run: Run, reviewer: Reviewer, after: Answer | None = None) -> Answer | None:
    """The first answer of ``run`` (``question_id`` order) with a cited claim
    ``reviewer`` has not labeled, with its question; ``None`` when there is none.
    The answers of the run's probability sample come first, in sample order
    (SPEC §4.6).

    With ``after``, the search starts at the answer after it and wraps around
    to the start of the run (``after`` itself comes last); in the sample, at the
    sampled answer after it, else at the sample's start. One query: the answer with
    its question, found by walking the sample, then the ``(run, question_key)``
    index and stopping at the first answer with a claim to label (the wrap-around's
    walk runs only when those find none).
    """
    return _first_answer(run, reviewer, _walks(run, reviewer, after))[1]


def _walks(run: Run, reviewer: Reviewer, after: Answer | None) -> list[tuple[str, list[Any]]]:
    """The walks of :func:`next_answer_to_label` (statements and parameters), in turn."""
    if after is None:
        return [_walk_sql(run, reviewer, sampled=(("", None),))]
    return [_walk_sql(run, reviewer, "gt", after.question_key, sampled=(("gt", after.pk), ("", None))),
            _walk_sql(run, reviewer, "lte", after.question_key)]


def judge_flag(run: Run) -> Case:
    """1 when the run's queue judge (``Run.queue_judge``) calls the claim at
    ``OuterRef("pk")`` UNSUPPORTED, else 0: a lead's "judge says UNSUPPORTED
    first" order within each answer (SPEC §4.4)."""
    flagged = Label.objects.filter(claim=OuterRef("pk"), reviewer_id=run.queue_judge_id, is_current=True,
                                   value=LabelValue.UNSUPPORTED)
    return Case(When(Exists(flagged), then=Value(1)), default=Value(0), output_field=IntegerField())


def claims_in_queue_order(run: Run, claims: QuerySet[Claim]) -> QuerySet[Claim]:
    """``claims`` of one answer in queue order: by index, or with a queue judge,
    the claims it calls UNSUPPORTED first, each group by index."""
    if run.queue_judge_id is None:
        return claims.order_by("index")
    return claims.annotate(judge_flag=judge_flag(run)).order_by("-judge_flag", "index")


def _first(run: Run, reviewer: Reviewer, candidates: QuerySet[Claim], *, lease: bool) -> Claim | None:
    return _hand_out(run, reviewer, candidates) if lease else candidates.first()


def next_claim_in_answer(*, run: Run, reviewer: Reviewer, after: Claim, lease: bool = False,
                         ahead: bool = False) -> Claim | None:
    """The first claim of the reviewer's queue after ``after`` in its answer
    (with its answer and question), or ``None``. A claim that comes before the
    walk (``priority_claim``: a send-back, a gold check) comes first: it is the
    answer when it is in this answer, else ``None`` (the next answers bring it).
    One query (three with a queue judge: what comes first, where ``after`` stands in the
    judge's order, the queue; two when ``after`` comes without its answer and question).
    With ``lease``, the first one ``lease_take`` reserves for the reviewer. ``ahead``:
    ``after`` is the claim on screen, counted as labeled (the page's look ahead,
    ``priority_claim``'s ``skip_labeled``)."""
    if run.queue_judge_id is None and Claim.answer.is_cached(after) and Answer.question.is_cached(after.answer):
        return _priority_and_first_in_answer(run, reviewer, after.answer, after_index=after.index, lease=lease,
                                             skip=after, elsewhere_stops=True, skip_labeled=ahead)
    first = priority_claim(run=run, reviewer=reviewer, skip=after, skip_labeled=ahead)
    if first is not None:
        if first.answer_id != after.answer_id:
            return None
        if lease:
            lease_force(run=run, reviewer=reviewer, claim=first)
        return first
    queue = unlabeled_claims(reviewer, run).filter(answer_id=after.answer_id)
    if run.queue_judge_id is None:
        return _first(run, reviewer, queue.filter(index__gt=after.index).order_by("index")
                      .select_related("answer__question"), lease=lease)
    after_flag = Claim.objects.filter(pk=after.pk).annotate(judge_flag=judge_flag(run)).values_list(
        "judge_flag", flat=True).first() or 0
    later = Q(judge_flag__lt=after_flag) | Q(judge_flag=after_flag, index__gt=after.index)
    return _first(run, reviewer, claims_in_queue_order(run, queue.exclude(pk=after.pk)).filter(later)
                  .select_related("answer__question"), lease=lease)


def first_claim_in_answer(*, run: Run, reviewer: Reviewer, answer: Answer, lease: bool = False,
                          priority: bool = True) -> Claim | None:
    """The first claim of ``answer`` in the reviewer's queue, in queue order
    (``claims_in_queue_order``), or ``None``: a claim of the answer that comes
    before the walk (``priority_claim``) first, unless ``priority`` is off (the
    caller asked already). One query (two with a queue judge and ``priority``). With ``lease``,
    the first one ``lease_take`` reserves for the reviewer."""
    if priority and run.queue_judge_id is None:
        return _priority_and_first_in_answer(run, reviewer, answer, after_index=0, lease=lease, skip=None,
                                             elsewhere_stops=False)
    if priority:
        first = priority_claim(run=run, reviewer=reviewer)
        if first is not None and first.answer_id == answer.pk:
            if lease:
                lease_force(run=run, reviewer=reviewer, claim=first)
            return first
    if run.queue_judge_id is None:
        return _first_in_answer(run, reviewer, answer, after_index=0, lease=lease)
    return _first(run, reviewer, claims_in_queue_order(run, unlabeled_claims(reviewer, run).filter(answer=answer)),
                  lease=lease)


def claim_in_next_answers(*, run: Run, reviewer: Reviewer, after: Answer | None = None,
                          lease: bool = False, skip: Claim | None = None, ahead: bool = False) -> Claim | None:
    """The first claim of the reviewer's queue in the next answer with work left
    (``next_answer_to_label``: after ``after``, wrapping around), with its answer
    and question; ``None`` when the queue is empty. With ``lease``, reserved for
    the reviewer: when other reviewers took every claim of that answer between
    the two reads, the answer after it is tried (``LEASE_TRIES`` answers at most).
    A claim that comes before the walk (``priority_claim``: a send-back, a gold
    check) comes first, wherever it is; ``skip`` is a claim not to hand back as a
    send-back (the one the reviewer passes over). ``ahead``: ``skip`` is the claim on
    screen, counted as labeled (``priority_claim``'s ``skip_labeled``: the page's look ahead).
    What comes first and the next answer with its question are one statement; then its
    first claim (and the lease)."""
    marks, answer = _first_answer(run, reviewer, _walks(run, reviewer, after), priority=skip or True)
    sent_back, gold_open = marks
    first = _priority_from(run, reviewer, skip, sent_back=sent_back, gold_open=gold_open, skip_labeled=ahead)
    if first is not None:
        if lease:
            lease_force(run=run, reviewer=reviewer, claim=first)
        return first
    for tried in range(LEASE_TRIES if lease else 1):
        if tried:
            answer = next_answer_to_label(run=run, reviewer=reviewer, after=after)
        if answer is None:
            return None
        claim = first_claim_in_answer(run=run, reviewer=reviewer, answer=answer, lease=lease, priority=False)
        if claim is not None:
            claim.answer = answer
            return claim
        after = answer
    return None


def next_unlabeled_claim(*, run: Run, reviewer: Reviewer, after: Claim | None = None,
                         lease: bool = False) -> Claim | None:
    """The next claim of the reviewer's queue in ``run``.

    Queue: cited claims without a current label by ``reviewer``, in
    ``question_id``/``index`` order (within an answer, the claims the run's
    queue judge calls UNSUPPORTED first, when a lead chose one). With ``after``, the search starts right
    after that claim (later claims of its answer, then later answers: see
    ``next_answer_to_label``) and wraps around to the start of the run.
    ``None`` when the queue is empty. The claim comes with its answer and
    question. At most five small queries, whatever the size of the run. With
    ``lease``, the claim is reserved for the reviewer (``lease_take``: one more
    statement, three with PostgreSQL's row lock, per claim tried): what the
    queue hands out to be labeled.
    """
    if after is not None:
        in_answer = next_claim_in_answer(run=run, reviewer=reviewer, after=after, lease=lease)
        if in_answer is not None:
            return in_answer
    return claim_in_next_answers(run=run, reviewer=reviewer, after=after.answer if after is not None else None,
                                 lease=lease, skip=after)
