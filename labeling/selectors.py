"""Reads shared by the project, run and review pages (STYLE §3).

Counts come from annotated aggregate queries (``Count`` with ``filter``), so
each function runs a fixed number of queries whatever the number of runs,
answers or claims. Which label counts for a claim is the rule of
``labeling.metrics`` (SPEC §3, §4.1), written here in SQL: a claim without
citations is UNCITED; a cited claim is SUPPORTED (UNSUPPORTED) when every
current human label on it says so (``COUNTED_KINDS``: never an automated
labeler's, unless a lead promoted that judge for the run), pending when it has none or its reviewers
disagree. ``tests/test_label_counts_agree.py`` checks that both count the
same on every answers file in ``fixtures/``. "Your progress" counts
the cited claims that carry the given reviewer's own current label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import (
    CharField,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce

from labeling import queue
from labeling.highlight import Segment, answer_segments, passage_segments
from labeling.models import (
    COUNTED_KINDS,
    Adjudication,
    Answer,
    Assignment,
    Citation,
    CitationJudgment,
    Claim,
    GoldClaim,
    GoldReference,
    Label,
    LabelValue,
    Membership,
    Project,
    Question,
    Reviewer,
    ReviewerKind,
    Role,
    Run,
    SendBack,
)
from labeling.quality import Exclusion, excluded_labels_q, runs_exclusions
from labeling.queue import exists_fence, unlabeled_claims
from scoring import judgments as judgments_module
from scoring.figures import FigureInterval, RunFigures, run_intervals
from scoring.gold import answer_gold_matches
from scoring.intervals import DEFAULT_CONFIDENCE, AnswerValues, Interval, Units, clustered_ratio
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (issue 24)
from scoring.matching import DEFAULT_MATCH_METHOD, get_matcher
from scoring.normalize import normalize_source
from scoring.ratio import Ratio, gap

ANSWERS_PER_PAGE = 50
ANSWER_FILTERS = {
    "unlabeled": "cited claims you have not labeled",
    "unsupported": "a claim labeled UNSUPPORTED",
    "fabricated": "fabricated citations",
}


@dataclass(frozen=True)
class ClaimCounts:
    """Claim counts of a run or an answer, and the ratios built on them (SPEC §4.1).

    ``claims`` leaves out the claims of abstaining answers (SPEC §4.2);
    ``cited`` = claims with ≥ 1 citation; ``labeled`` = cited claims with the
    reviewer's own current label; ``supported``/``unsupported`` = cited claims
    whose label that counts says so — a lead's adjudication, else the value all
    current labels agree on; ``disagreements`` = cited claims, not adjudicated,
    with both values; ``adjudicated`` = cited claims with a current
    adjudication; ``fabricated`` = fabricated citations.
    """

    claims: int = 0
    cited: int = 0
    labeled: int = 0
    supported: int = 0
    unsupported: int = 0
    disagreements: int = 0
    fabricated: int = 0
    adjudicated: int = 0

    @property
    def coverage(self) -> Ratio:
        return Ratio(self.cited, self.claims)

    @property
    def support(self) -> Ratio:
        return Ratio(self.supported, self.supported + self.unsupported)

    @property
    def supported_rate(self) -> Ratio:
        """SUPPORTED claims / factual claims (SPEC §4.3b: "claims supported by their citations")."""
        return Ratio(self.supported, self.claims)

    @property
    def gap(self) -> float | None:
        """coverage − support from the exact fractions (``scoring.ratio.gap``), as the CLI computes it."""
        return gap(self.coverage, self.support)

    @property
    def pending(self) -> int:
        """Cited claims without a resolved label (unlabeled or disputed)."""
        return self.cited - self.supported - self.unsupported

    @property
    def progress(self) -> Ratio:
        """The reviewer's own progress: labeled / cited."""
        return Ratio(self.labeled, self.cited)

    @property
    def status(self) -> str:
        """``has disagreement``, ``done``, ``in progress`` or ``not started`` (for the reviewer)."""
        if self.disagreements:
            return "has disagreement"
        if self.labeled >= self.cited:
            return "done"
        return "in progress" if self.labeled else "not started"


def _answer_count_aggregates(reviewer: Reviewer, *, own_only: bool = False,
                             exclusions: dict[int, Exclusion] | None = None) -> dict[str, Any]:
    """``Count`` expressions for an ``Answer`` queryset: its claims' counts.

    One pass over claims ⋈ citations ⋈ labels of the page's answers (50 at
    most); every count is DISTINCT so the join's fan-out never double counts.
    Resolved labels come from three counts by inclusion–exclusion: claims
    whose labels are all SUPPORTED = judged claims − claims with an
    UNSUPPORTED label (and the reverse); disputed = claims with both values.
    """
    # SPEC §4.3b: a claim marked not factual leaves every count.
    factual = Q(claims__factual=True)
    cited = factual & Q(claims__citations__isnull=False)
    judged = cited & Q(claims__labels__is_current=True,
                       claims__labels__value__in=[LabelValue.SUPPORTED, LabelValue.UNSUPPORTED])
    if own_only:
        # Blind labeling: the counts rest on the reviewer's own labels alone.
        judged &= Q(claims__labels__reviewer=reviewer)
    else:
        # SPEC §4.4: an automated labeler is graded, it never counts as a human label
        # unless a lead promoted it for the run (Run.promoted_judge).
        judged &= (Q(claims__labels__reviewer__kind__in=COUNTED_KINDS)
                   | Q(claims__labels__reviewer_id=F("run__promoted_judge_id")))
        if exclusions:
            # Issue 25: a lead left the labels of unqualified reviewers out of the figures.
            judged &= ~excluded_labels_q(exclusions, prefix="claims__labels__")
    # SPEC §4.2: an answer to an unanswerable question that cites nothing is an
    # abstention; its claims are not factual claims and leave every count.
    abstaining = Q(question__answerable=False) & ~Exists(Citation.objects.filter(claim__answer=OuterRef("pk")))
    return {
        "n_claims": Count("claims", distinct=True, filter=factual),
        "n_abstaining": Count("claims", distinct=True, filter=factual & abstaining),
        "n_cited": Count("claims", distinct=True, filter=cited),
        "n_judged": Count("claims", distinct=True, filter=judged),
        "n_has_supported": Count("claims", distinct=True,
                                 filter=judged & Q(claims__labels__value=LabelValue.SUPPORTED)),
        "n_has_unsupported": Count("claims", distinct=True,
                                   filter=judged & Q(claims__labels__value=LabelValue.UNSUPPORTED)),
        "n_labeled": Count("claims", distinct=True,
                           filter=cited & Q(claims__labels__is_current=True, claims__labels__reviewer=reviewer)),
        "n_fabricated": Count("claims__citations", distinct=True, filter=Q(claims__citations__fabricated=True)),
    }


def _counts(row: dict[str, Any] | Any, adjudicated: dict[str, int] | None = None) -> ClaimCounts:
    """``ClaimCounts`` from the label counts of ``row`` and, for the adjudicated
    claims among them, ``adjudicated`` (``_adjudicated_counts``): their label
    counts come out of the reviewers' side and their adjudicated values in."""
    get = row.get if isinstance(row, dict) else (lambda key: getattr(row, key))
    adj = adjudicated or {}
    judged = (get("n_judged") or 0) - adj.get("judged", 0)
    has_sup = (get("n_has_supported") or 0) - adj.get("has_supported", 0)
    has_uns = (get("n_has_unsupported") or 0) - adj.get("has_unsupported", 0)
    return ClaimCounts(
        claims=(get("n_claims") or 0) - (get("n_abstaining") or 0),
        cited=get("n_cited") or 0,
        labeled=get("n_labeled") or 0,
        supported=judged - has_uns + adj.get("supported", 0),
        unsupported=judged - has_sup + adj.get("unsupported", 0),
        disagreements=has_sup + has_uns - judged,
        fabricated=get("n_fabricated") or 0,
        adjudicated=adj.get("supported", 0) + adj.get("unsupported", 0),
    )


def _adjudicated_counts(adjudications: QuerySet[Adjudication], group: str,
                        exclusions: dict[int, Exclusion] | None = None) -> dict[int, dict[str, int]]:
    """Per ``group`` (a lookup from Adjudication, e.g. the run id): the current
    adjudications of cited claims, by value, and what the label counts saw on
    those claims (judged, has_supported, has_unsupported) so ``_counts`` can
    replace it (without the labels ``exclusions`` leave out). One grouped query;
    its rows are the adjudicated claims only."""
    current = Label.objects.filter(claim=OuterRef("claim"), is_current=True).filter(
        Q(reviewer__kind__in=COUNTED_KINDS) | Q(reviewer_id=OuterRef("claim__answer__run__promoted_judge_id")))
    if exclusions:
        current = current.exclude(excluded_labels_q(exclusions))
    rows = (adjudications.filter(is_current=True).filter(Exists(Citation.objects.filter(claim=OuterRef("claim"))))
            .alias(has_sup=Exists(current.filter(value=LabelValue.SUPPORTED)),
                   has_uns=Exists(current.filter(value=LabelValue.UNSUPPORTED)))
            .values(group).order_by()
            .annotate(supported=Count("id", filter=Q(value=LabelValue.SUPPORTED)),
                      unsupported=Count("id", filter=Q(value=LabelValue.UNSUPPORTED)),
                      judged=Count("id", filter=Q(has_sup=True) | Q(has_uns=True)),
                      has_supported=Count("id", filter=Q(has_sup=True)),
                      has_unsupported=Count("id", filter=Q(has_uns=True))))
    return {row.pop(group): row for row in rows}


def _may_open(user: Reviewer, project: str = "") -> Q:
    """The one rule of who may open a project and everything in it: a
    superuser, or a member. ``project`` is the lookup path to the project
    (``"project__"`` from a run)."""
    return Q() if user.is_superuser else Q(**{f"{project}members": user})


# What each role may do in its project (SPEC §2 "role"), the one table every view asks
# through ``may``: READ opens pages; LABEL saves, undoes, splits, merges and edits claims;
# LEAD imports, snapshots, manages members, assigns and adjudicates; ALL_LABELS sees every
# reviewer's labels (label tables, versions, exports, comparisons) — a reviewer loses it
# on a blind run (``may_on_run``), where they see only their own labels.
# QUALITY reads the reviewer dashboards (issue 25 §5): leads and viewers, not the reviewers graded there.
READ, LABEL, LEAD, ALL_LABELS, QUALITY = "read", "label", "lead", "all_labels", "quality"
ROLE_MAY = {
    Role.LEAD: frozenset({READ, LABEL, LEAD, ALL_LABELS, QUALITY}),
    Role.REVIEWER: frozenset({READ, LABEL, ALL_LABELS}),
    Role.VIEWER: frozenset({READ, ALL_LABELS, QUALITY}),
}


def may(role: str | None, action: str) -> bool:
    """Whether a member of role ``role`` (``None``: not a member) may do ``action``
    (``READ``, ``LABEL`` or ``LEAD``)."""
    return action in ROLE_MAY.get(role, frozenset())


def _role(user: Reviewer, project: str = "") -> Any:
    """An expression for ``user``'s role in the project at lookup path ``project``
    (``"project__"`` from a run): ``lead`` for a superuser, else their membership's."""
    if user.is_superuser:
        return Value(Role.LEAD.value, output_field=CharField())
    target = OuterRef("project_id") if project else OuterRef("pk")
    return Subquery(Membership.objects.filter(project=target, reviewer=user).values("role")[:1])


def visible_projects(*, user: Reviewer) -> QuerySet[Project]:
    """Projects ``user`` may open: all for a superuser, else those they are a member of;
    each with ``my_role`` (the user's role there, see ``may``) annotated."""
    return Project.objects.filter(_may_open(user)).annotate(my_role=_role(user))


def visible_runs(*, user: Reviewer) -> QuerySet[Run]:
    """Runs (with their project) of the projects ``user`` may open, with ``my_role`` annotated."""
    assignments = Assignment.objects.filter(run=OuterRef("pk"))
    return (Run.objects.select_related("project").filter(_may_open(user, "project__"))
            .annotate(my_role=_role(user, "project__"), has_assignments=Exists(assignments),
                      is_assigned=Exists(assignments.filter(reviewer=user))))


def may_on_run(run: Run, action: str) -> bool:
    """Whether the user a run of ``visible_runs`` was read for may do ``action``
    on it: ``may`` for their role, and to LABEL a reviewer (not a lead) must
    work on the run — be assigned to it, or nobody is."""
    if not may(run.my_role, action):
        return False
    if action == LABEL and run.my_role != Role.LEAD:
        return run.is_assigned or not run.has_assignments
    if action == ALL_LABELS:
        return not blind_for(run, role=run.my_role)
    return True


def blind_for(run: Run, *, role: str | None) -> bool:
    """Whether a member of ``role`` labels ``run`` blind: the run is blind
    (``Run.is_blind``) and they are a reviewer. They then see no one else's
    label (human or model) on any claim of the run, on any page or export;
    leads see everything, viewers do not label."""
    return run.is_blind and role == Role.REVIEWER


def _blind_for(run: Run, reviewer: Reviewer) -> bool:
    """``blind_for`` with the role read from ``run.my_role`` (``visible_runs``) or, when the run
    was loaded another way, from the membership (one query, only for a blind run)."""
    if not run.is_blind or reviewer.is_superuser:
        return False
    role = getattr(run, "my_role", None)
    if role is None:
        role = Membership.objects.filter(project_id=run.project_id, reviewer=reviewer).values_list(
            "role", flat=True).first()
    return blind_for(run, role=role)


def project_rows(*, user: Reviewer) -> QuerySet[Project]:
    """Visible projects with ``n_runs`` and ``n_questions`` annotated. One query."""
    runs = Run.objects.filter(project=OuterRef("pk")).values("project").annotate(n=Count("id")).values("n")
    questions = (Question.objects.filter(project=OuterRef("pk")).values("project")
                 .annotate(n=Count("id")).values("n"))
    return visible_projects(user=user).annotate(
        n_runs=Coalesce(Subquery(runs, output_field=IntegerField()), 0),
        n_questions=Coalesce(Subquery(questions, output_field=IntegerField()), 0),
    ).order_by("slug")


@dataclass
class RunRow:
    run: Run
    answers: int
    counts: ClaimCounts
    # One ClaimCounts per answer with claims (its intervals and the trend's bands, SPEC §4.5).
    answer_counts: list[ClaimCounts] = field(default_factory=list)

    @property
    def intervals(self) -> dict[str, FigureInterval]:
        """Coverage, support, gap and supported rate with their intervals (``claim_count_intervals``)."""
        return claim_count_intervals(self.answer_counts)


def total_counts(answer_counts: list[ClaimCounts]) -> ClaimCounts:
    """The run's ``ClaimCounts`` from its answers' (every count is of claims, and a
    claim belongs to one answer, so they add up)."""
    return ClaimCounts(**{name: sum(getattr(c, name) for c in answer_counts) for name in _COUNT_FIELDS})


_COUNT_FIELDS = ("claims", "cited", "labeled", "supported", "unsupported", "disagreements", "fabricated",
                 "adjudicated")


def claim_count_figures(answer_counts: list[ClaimCounts]) -> RunFigures:
    """Per-answer units and values of coverage, support and supported rate from one
    run's per-answer ``ClaimCounts`` (``scoring.figures.RunFigures``; answers are
    named by position, the figures of one run need no question ids)."""
    names = tuple(str(i) for i in range(len(answer_counts)))

    def units(numerator, denominator, available=None) -> Units:
        return Units(names, tuple(numerator(c) for c in answer_counts), tuple(denominator(c) for c in answer_counts),
                     available)

    def values(ratio) -> AnswerValues:
        return AnswerValues(names, tuple(ratio(c).value for c in answer_counts))

    return RunFigures(
        units={
            "coverage": units(lambda c: c.cited, lambda c: c.claims),
            "support": units(lambda c: c.supported, lambda c: c.supported + c.unsupported,
                             available=sum(1 for c in answer_counts if c.cited)),
            "supported_rate": units(lambda c: c.supported, lambda c: c.claims),
        },
        values={"coverage": values(lambda c: c.coverage), "support": values(lambda c: c.support),
                "supported_rate": values(lambda c: c.supported_rate)},
    )


def claim_count_intervals(answer_counts: list[ClaimCounts], *,
                          confidence: float = DEFAULT_CONFIDENCE) -> dict[str, FigureInterval]:
    """Coverage, support, gap, supported rate and their per-answer means with their
    intervals and label budgets (SPEC §4.5), from one run's per-answer counts."""
    return run_intervals(claim_count_figures(answer_counts), confidence=confidence)


def _runs_claim_counts(*, reviewer: Reviewer, run: Run | None = None, project: Project | None = None,
                       blind_run_ids: frozenset[int] = frozenset(),
                       exclusions: dict[int, Exclusion] | None = None) -> dict[int, list[ClaimCounts]]:
    """Per run id, one ``ClaimCounts`` per answer with claims, for one run or every
    run of a project (sum them with ``total_counts``).

    Three grouped queries, each without fan-out or with one small DISTINCT
    (PostgreSQL sorts once per DISTINCT aggregate, so one query over claims ⋈
    citations ⋈ labels with eight of them is several times slower):
    claims (and those of unanswerable questions), citations (cited claims,
    fabricated citations), current SUPPORTED/UNSUPPORTED labels on cited
    claims (resolved as in ``_answer_count_aggregates``), and the adjudicated
    claims (``_adjudicated_counts``). A fifth query finds the
    claims of abstaining answers, only when unanswerable questions exist. On the
    runs of ``blind_run_ids`` only ``reviewer``'s own labels count (blind labeling);
    the labels ``exclusions`` name (unqualified reviewers', issue 25) never count,
    though they still count as the reviewer's own progress.
    Grouped by answer (the run's totals are their sum) so that every figure
    gets its interval, answers being the clusters (SPEC §4.5).
    """
    scope = {"run": run} if run is not None else {"run__project": project}
    counted = ~excluded_labels_q(exclusions) if exclusions else Q()
    claims = {
        row["answer_id"]: row
        for row in Claim.objects.filter(**{f"answer__{k}": v for k, v in scope.items()}, factual=True)
        .values("answer__run_id", "answer_id").order_by()
        .annotate(n=Count("id"), unanswerable=Count("id", filter=Q(answer__question__answerable=False)))
    }
    citations = {
        row["claim__answer_id"]: row
        for row in Citation.objects.filter(**{f"claim__answer__{k}": v for k, v in scope.items()},
                                           claim__factual=True)
        .values("claim__answer_id").order_by()
        .annotate(cited=Count("claim", distinct=True), fabricated=Count("id", filter=Q(fabricated=True)))
    }
    labels = {
        row["claim__answer_id"]: row
        for row in Label.objects.filter(**{f"claim__answer__{k}": v for k, v in scope.items()}, is_current=True,
                                        claim__factual=True,
                                        value__in=[LabelValue.SUPPORTED, LabelValue.UNSUPPORTED])
        .filter(Exists(Citation.objects.filter(claim=OuterRef("claim"))))
        .filter(Q(reviewer=reviewer) | ~Q(claim__answer__run_id__in=blind_run_ids))
        .filter(Q(reviewer__kind__in=COUNTED_KINDS) | Q(reviewer_id=F("claim__answer__run__promoted_judge_id")))
        .values("claim__answer_id").order_by()
        .annotate(judged=Count("claim", distinct=True, filter=counted),
                  has_supported=Count("claim", distinct=True, filter=counted & Q(value=LabelValue.SUPPORTED)),
                  has_unsupported=Count("claim", distinct=True, filter=counted & Q(value=LabelValue.UNSUPPORTED)),
                  labeled=Count("id", filter=Q(reviewer=reviewer)))
    }
    abstaining: dict[int, int] = {}
    if any(row["unanswerable"] for row in claims.values()):
        # SPEC §4.2: claims of an answer to an unanswerable question that cites nothing are not factual claims.
        answers = Answer.objects.filter(**scope, question__answerable=False).exclude(
            Exists(Citation.objects.filter(claim__answer=OuterRef("pk"))))
        abstaining = dict(Claim.objects.filter(answer__in=answers, factual=True).values("answer_id").order_by()
                          .annotate(n=Count("id")).values_list("answer_id", "n"))
    # Blind labeling counts a reviewer's own labels only: no lead's verdict on those runs either.
    adjudicated = _adjudicated_counts(
        Adjudication.objects.filter(**{f"claim__answer__{k}": v for k, v in scope.items()}, claim__factual=True)
        .exclude(claim__answer__run_id__in=blind_run_ids), "claim__answer_id", exclusions)
    counts: dict[int, list[ClaimCounts]] = {}
    for answer_id, row in sorted(claims.items()):
        cited, judged = citations.get(answer_id, {}), labels.get(answer_id, {})
        counts.setdefault(row["answer__run_id"], []).append(_counts(adjudicated=adjudicated.get(answer_id), row={
            "n_claims": row["n"], "n_abstaining": abstaining.get(answer_id, 0), "n_cited": cited.get("cited", 0),
            "n_fabricated": cited.get("fabricated", 0), "n_judged": judged.get("judged", 0),
            "n_has_supported": judged.get("has_supported", 0), "n_has_unsupported": judged.get("has_unsupported", 0),
            "n_labeled": judged.get("labeled", 0),
        }))
    return counts


def run_rows(*, project: Project, reviewer: Reviewer) -> list[RunRow]:
    """Every run of ``project`` with its claim counts (totals and per answer) and the
    reviewer's progress.

    Four or five queries whatever the number of runs: the runs with their
    answer counts, and ``_runs_claim_counts`` grouped by answer.
    """
    runs = list(Run.objects.filter(project=project).annotate(n_answers=Count("answers")).order_by("created_at", "name"))
    role = getattr(project, "my_role", None)
    blind = frozenset(r.pk for r in runs if r.is_blind and not reviewer.is_superuser and blind_for(r, role=role))
    by_run = _runs_claim_counts(reviewer=reviewer, project=project, blind_run_ids=blind,
                                exclusions=runs_exclusions(runs))
    for run in runs:
        run.project = project
    return [RunRow(run=run, answers=run.n_answers, counts=total_counts(by_run.get(run.pk, [])),
                   answer_counts=by_run.get(run.pk, [])) for run in runs]


def run_answer_counts(*, run: Run, reviewer: Reviewer) -> list[ClaimCounts]:
    """Claim counts of each answer of one run that has claims (``ClaimCounts``; their
    sum, ``total_counts``, is the run's). Three or four grouped queries
    (``_runs_claim_counts``); on a run ``reviewer`` labels blind, from their own labels only."""
    blind = frozenset({run.pk}) if _blind_for(run, reviewer) else frozenset()
    return _runs_claim_counts(reviewer=reviewer, run=run, blind_run_ids=blind,
                              exclusions=runs_exclusions([run])).get(run.pk, [])


def run_counts(*, run: Run, reviewer: Reviewer) -> ClaimCounts:
    """Claim counts of one run (``ClaimCounts``): the sum of ``run_answer_counts``."""
    return total_counts(run_answer_counts(run=run, reviewer=reviewer))


def run_answer_count(*, run: Run) -> int:
    """How many answers ``run`` has (one index-only count)."""
    return Answer.objects.filter(run=run).count()


_CITED_CLAIMS_SQL = """
SELECT r.claims_version,
       (SELECT COUNT(*) FROM {claim} c JOIN {answer} a ON a.id = c.answer_id
        WHERE a.run_id = r.id AND c.factual AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id))
FROM {run} r WHERE r.id = %s
"""


def run_cited_claims(*, run: Run) -> int:
    """How many cited factual claims ``run`` has (the denominator of progress,
    SPEC §4.1; a claim marked not factual leaves every count, §4.3b).

    Read from the run's versioned cache (``Run.cited_claims``) when it matches
    ``Run.claims_version`` as loaded with ``run``: no query. Otherwise one
    statement counts them and reads the version in the same snapshot, and one
    UPDATE stores the count only if the version is still the one counted (a
    write that changed claims meanwhile has moved it on: the next read counts
    again). Counting a 50k-claim run takes 20–150 ms on PostgreSQL, which every
    page of the review screen would pay; ``services.claims_changed`` is what
    invalidates the cache.
    """
    if run.cited_claims is not None and run.cited_claims_version == run.claims_version:
        return run.cited_claims
    quote = connection.ops.quote_name
    sql = _CITED_CLAIMS_SQL.format(claim=quote(Claim._meta.db_table), answer=quote(Answer._meta.db_table),
                                   citation=quote(Citation._meta.db_table), run=quote(Run._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk])
        version, cited = cursor.fetchone()
    Run.objects.filter(pk=run.pk, claims_version=version).update(cited_claims=cited, cited_claims_version=version)
    run.claims_version = run.cited_claims_version = version
    run.cited_claims = cited
    return cited


# The reviewer's current labels on cited factual claims of a run. Written in SQL for the
# fence (queue.exists_fence): without statistics PostgreSQL would hash every
# citation of the database for the EXISTS (23 ms on a 50k-claim run) instead of
# probing the citations of the reviewer's labeled claims.
_LABELED_SQL = """
SELECT COUNT(*) FROM {label} l JOIN {claim} c ON c.id = l.claim_id JOIN {answer} a ON a.id = c.answer_id
WHERE l.reviewer_id = %s AND l.is_current AND a.run_id = %s AND c.factual
  AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id {fence})
"""


def run_progress(*, run: Run, reviewer: Reviewer) -> Ratio:
    """The reviewer's progress on ``run``: cited claims they labeled / cited claims
    (``run_cited_claims``, cached). One count of the reviewer's current labels in
    the run (its cost grows with the reviewer's labels, not the run), plus a
    recount of the cited claims only after claims changed. The review page moves
    its bar by each save's delta (``views.review``) and loads this only with the
    page and after splits, merges and edits.
    """
    quote = connection.ops.quote_name
    sql = _LABELED_SQL.format(label=quote(Label._meta.db_table), claim=quote(Claim._meta.db_table),
                              answer=quote(Answer._meta.db_table), citation=quote(Citation._meta.db_table),
                              fence=exists_fence())
    with connection.cursor() as cursor:
        cursor.execute(sql, [reviewer.pk, run.pk])
        (labeled,) = cursor.fetchone()
    return Ratio(labeled, run_cited_claims(run=run))


@dataclass
class AnswerRow:
    answer: Answer
    counts: ClaimCounts


@dataclass
class AnswerPage:
    page: Page
    rows: list[AnswerRow]
    filter: str


def answer_page(*, run: Run, reviewer: Reviewer, answer_filter: str = "", page_number: Any = 1,
                per_page: int = ANSWERS_PER_PAGE) -> AnswerPage:
    """One page of the run's answers (ordered by ``question_id``) with their counts.

    ``answer_filter``: ``""`` (all), ``"unlabeled"`` (has a cited claim the
    reviewer has not labeled), ``"unsupported"`` (some reviewer's current
    label on one of its claims is UNSUPPORTED), ``"fabricated"`` (cites an id
    that was not among its passages). Unknown filters raise ValueError; a page
    number out of range gives the last page. Four queries: count, the page's
    ids, the page's rows with counts, their adjudicated claims. On a run ``reviewer`` labels blind,
    only their own labels count (and filter).
    """
    own_only = _blind_for(run, reviewer)
    answers = Answer.objects.filter(run=run)
    if answer_filter == "unlabeled":
        # EXISTS per answer stops at its first claim to label (an IN over every claim of the run does not).
        answers = answers.filter(Exists(unlabeled_claims(reviewer, run).filter(answer=OuterRef("pk"))))
    elif answer_filter == "unsupported":
        unsupported = Label.objects.filter(claim__answer__run=run, is_current=True, value=LabelValue.UNSUPPORTED)
        if own_only:
            unsupported = unsupported.filter(reviewer=reviewer)
        answers = answers.filter(pk__in=unsupported.values("claim__answer_id"))
    elif answer_filter == "fabricated":
        answers = answers.filter(pk__in=Citation.objects.filter(
            claim__answer__run=run, fabricated=True).values("claim__answer_id"))
    elif answer_filter:
        raise ValueError(f"unknown answer filter {answer_filter!r}; use one of {', '.join(ANSWER_FILTERS)}")
    ids = answers.order_by("question_key").values_list("pk", flat=True)
    page = Paginator(ids, per_page).get_page(page_number)
    page_ids = list(page.object_list)
    exclusions = runs_exclusions([run])
    rows = (
        Answer.objects.filter(pk__in=page_ids)
        .select_related("question")
        .annotate(**_answer_count_aggregates(reviewer, own_only=own_only, exclusions=exclusions))
    )
    by_id = {answer.pk: answer for answer in rows}
    adjudicated = {} if own_only else _adjudicated_counts(
        Adjudication.objects.filter(claim__answer_id__in=page_ids, claim__factual=True), "claim__answer_id",
        exclusions)
    return AnswerPage(
        page=page,
        rows=[AnswerRow(answer=by_id[pk], counts=_counts(by_id[pk], adjudicated.get(pk))) for pk in page_ids],
        filter=answer_filter,
    )


def last_label(*, run: Run, reviewer: Reviewer) -> Label | None:
    """``reviewer``'s most recent current label in ``run``, with its claim (what ``u`` undoes)."""
    return (
        Label.objects.filter(reviewer=reviewer, is_current=True, claim__answer__run=run)
        .select_related("claim").order_by("-pk").first()
    )


# -- the review page ---------------------------------------------------------------------------

@dataclass
class CitationView:
    citation: Citation
    segments: list[Segment]
    span_found: bool
    # Judging citations (SPEC §4.3b): the reviewer's current judgment and every
    # judgment on it (newest first; the reviewer's own only on a blind run).
    my_judgment: CitationJudgment | None = None
    judgments: list[CitationJudgment] = field(default_factory=list)
    # What the judging form shows (set by the view: the current judgment, or what was sent).
    shown_judgment: str = ""
    shown_evidence: str = ""

    @property
    def source_url(self) -> str:
        """The passage source when it is an http(s) URL (safe to link), else ``""``."""
        passage = self.citation.passage
        source = passage.source if passage is not None else ""
        return source if source.startswith(("https://", "http://")) else ""

    @property
    def highlights(self) -> str:
        """What the marks show: ``span``, ``word`` or ``""`` (nothing marked)."""
        return next((segment.kind for segment in self.segments if segment.kind), "")


@dataclass
class ClaimView:
    claim: Claim
    citations: list[Citation]
    my_label: Label | None
    # False when the answer text cannot mark the claim (see ReviewContext.unplaced): the
    # claim list says so per claim in constant time, not by searching that list.
    in_text: bool = True
    # Still needs a reviewer: fewer current human labels than the run's overlap (labeling.queue).
    open: bool = True
    # A lead sent the reviewer's label on this claim back for rework (issue 25 §4), still open:
    # ``sent_back`` on every claim; ``send_back`` (comment, lead) loaded for the current one.
    sent_back: bool = False
    send_back: SendBack | None = None
    # Feedback mode (issue 25 §3): the gold label and reason of a gold claim the reviewer
    # labeled, on a run whose lead turned feedback on (the current claim only); None otherwise.
    gold_feedback: GoldClaim | None = None

    @property
    def in_queue(self) -> bool:
        """In the reviewer's queue: factual, cited, not labeled by them, still open; or
        sent back to them for rework."""
        return (self.claim.factual and self.cited and self.my_label is None and self.open) or self.sent_back

    @property
    def cited(self) -> bool:
        return bool(self.citations)

    @property
    def state(self) -> str:
        """CSS/badge state for the reviewer: UNCITED, SUPPORTED, UNSUPPORTED, pending, or
        non_factual (marked "not a factual claim", SPEC §4.3b)."""
        if not self.claim.factual:
            return "non_factual"
        if not self.citations:
            return LabelValue.UNCITED.value
        return self.my_label.value if self.my_label is not None else "pending"

    @property
    def fabricated(self) -> bool:
        return any(c.fabricated for c in self.citations)


@dataclass
class HistoryEntry:
    label: Label
    status: str  # current, superseded, undone, stale


@dataclass
class ReviewContext:
    """Everything the review page shows for one answer and its current claim.

    ``claims`` in index order; ``segments`` the answer text cut at claim
    offsets as ``(text, ClaimView | None)``; ``unplaced`` the claims that
    cannot be marked in place; ``current`` the selected claim (``None`` for an
    answer without claims); ``passages`` the current claim's citations with
    highlight segments; ``history`` every label on the current claim, newest
    first; ``gold`` the question's gold (``None`` when it has none).
    """

    answer: Answer
    claims: list[ClaimView]
    segments: list[tuple[str, ClaimView | None]]
    unplaced: list[ClaimView]
    current: ClaimView | None
    passages: list[CitationView]
    history: list[HistoryEntry]
    gold: dict[str, Any] | None
    previous_claim: ClaimView | None = None
    next_claim: ClaimView | None = None
    answer_counts: ClaimCounts = field(default_factory=ClaimCounts)
    # Blind labeling: ``history`` holds the reviewer's own labels only.
    blind: bool = False
    # The project judges each citation (SPEC §4.3b): the label form is the judging form,
    # ``proposed`` the label the reviewer's current judgments propose (None until all are judged).
    judging: bool = False
    proposed: str | None = None
    partials_enough: bool = False
    judged_precision: Ratio = field(default_factory=lambda: Ratio(0, 0))
    # The current claim's gold label, for a lead's page only (``with_gold``).
    current_gold: GoldClaim | None = None

    @property
    def supported_rate(self) -> Ratio:
        """Factual claims of this answer the reviewer labeled SUPPORTED / factual claims (SPEC §4.3b)."""
        factual = [v for v in self.claims if v.claim.factual]
        return Ratio(sum(1 for v in factual if v.cited and v.my_label is not None
                         and v.my_label.value == LabelValue.SUPPORTED), len(factual))

    @property
    def supported_rate_interval(self) -> Interval:
        """``supported_rate`` with its interval: one answer, so Wilson's at its claims (SPEC §4.5)."""
        rate = self.supported_rate
        return clustered_ratio([rate.numerator], [rate.denominator])

    @property
    def judged_precision_interval(self) -> Interval:
        """``judged_precision`` with its interval: Wilson's at this answer's judged citations (SPEC §4.5)."""
        return clustered_ratio([self.judged_precision.numerator], [self.judged_precision.denominator])

    @property
    def more_after_current(self) -> bool:
        """Whether a claim of this answer other than the current one is in the
        reviewer's queue: a hint that a save should ask the queue for the next
        claim here before moving to the next answer. Order-free on purpose: the
        queue's order (``labeling.queue``) decides which claim comes next."""
        return any(v.in_queue and v is not self.current for v in self.claims)

    @property
    def cited_ids(self) -> list[str]:
        """Distinct passage ids the answer cites (all claims), in first-cited order."""
        return list(dict.fromkeys(c.cited_id for view in self.claims for c in view.citations))

    @property
    def cited_sources(self) -> list[str]:
        """Distinct sources of the passages the answer cites."""
        return list(dict.fromkeys(
            c.passage.source for view in self.claims for c in view.citations
            if c.passage is not None and c.passage.source
        ))

    @property
    def gold_sources(self) -> list[tuple[str, bool]]:
        """Expected sources with whether the answer cites them (sources compared as
        ``scoring.normalize.normalize_source`` does: scheme, ``www.``, case ignored)."""
        cited = {normalize_source(source) for source in self.cited_sources}
        return [(source, normalize_source(source) in cited) for source in (self.gold or {}).get("sources") or []]

    @property
    def gold_summary(self) -> str:
        """One line for the collapsed Gold panel, e.g. ``supporting ids 1/2 cited · 3 reference passages``."""
        if not self.gold:
            return ""
        parts = []
        if self.gold["ids"] is not None:
            hits = len(set(self.gold["ids"]) & set(self.cited_ids))
            parts.append(f"supporting ids {hits}/{len(self.gold['ids'])} cited")
        if self.gold["sources"] is not None:
            hits = sum(cited for _source, cited in self.gold_sources)
            parts.append(f"expected sources {hits}/{len(self.gold['sources'])} cited")
        if self.gold["reference_matches"] is not None:
            hits = sum(matched is True for _ref, matched, _ids in self.gold["reference_matches"])
            parts.append(f"reference passages {hits}/{len(self.gold['reference_matches'])} matched")
        elif self.gold["references"] is not None:
            count = len(self.gold["references"])
            parts.append(f"{count} reference passage{'' if count == 1 else 's'}")
        return " · ".join(parts)


def review_answer(*, run: Run, answer_id: int) -> Answer | None:
    """The answer ``answer_id`` of ``run`` with its question, or ``None``."""
    answer = Answer.objects.select_related("question").filter(run=run, pk=answer_id).first()
    if answer is not None:
        # The caller's run: it carries the user's role (visible_runs), which blind labeling reads.
        answer.run = run
    return answer


def claim_in_run(*, run: Run, claim_id: int) -> Claim | None:
    """Claim ``claim_id`` when it belongs to ``run`` (else ``None``: the URL names another run)."""
    claim = Claim.objects.select_related("answer__question").filter(answer__run=run, pk=claim_id).first()
    if claim is not None:
        claim.answer.run = run
    return claim


def review_context(*, answer: Answer, reviewer: Reviewer, claim_id: int | None = None,
                   lease: bool = False, with_gold: bool = False) -> ReviewContext:
    """The review page of ``answer`` for ``reviewer`` (one prefetch chain, 3–7 queries).

    Queries: claims (each marked when a lead sent the reviewer's label back,
    issue 25 §4, and, with feedback on or ``with_gold`` (a lead's page), when it
    is a gold claim) → citations (+ passages) → every label on them (all
    reviewers, for the reviewer's current labels and the current claim's
    history); the current claim's send-back and gold label only when it has one
    (``ReviewContext.current_gold``: for ``with_gold``, or feedback once the
    reviewer labeled it, issue 25 §3); and the question's gold (ids, references, expected sources —
    only the parts it has). On a run the reviewer labels blind the history
    holds their own labels only. The current claim is ``claim_id`` when it is one
    of the answer's claims; else the first claim of the answer in the reviewer's
    queue, in the queue's order (``queue.first_claim_in_answer``, one query: the
    order has one home), else the first claim. With ``lease`` that first claim of
    the queue is reserved for the reviewer (``queue.lease_take``: the page hands it
    to them to label), or the next one no other reviewer took meanwhile.
    """
    feedback = answer.run.feedback
    # Which claims a lead sent back to this reviewer, and (feedback mode, or a lead's page) which
    # are gold: two subqueries of the claims query, the rows read only for the current claim.
    marks = {"open_send_back": Subquery(SendBack.objects.filter(
        claim=OuterRef("pk"), reviewer=reviewer, resolved_at__isnull=True).values("pk")[:1])}
    if feedback or with_gold:
        marks["current_gold"] = Subquery(GoldClaim.objects.filter(claim=OuterRef("pk"), is_current=True)
                                         .values("pk")[:1])
    claims = list(
        Claim.objects.filter(answer=answer).order_by("index").annotate(**marks).prefetch_related(
            Prefetch("citations", queryset=Citation.objects.select_related("passage").order_by("position")),
            Prefetch("labels", queryset=Label.objects.select_related("reviewer").order_by("-pk"),
                     to_attr="all_labels"),
        )
    )
    overlap = answer.run.overlap
    blind = _blind_for(answer.run, reviewer)
    views = [
        ClaimView(claim=c, citations=list(c.citations.all()), my_label=next(
            (label for label in c.all_labels if label.reviewer_id == reviewer.pk and label.is_current), None),
            open=sum(1 for label in c.all_labels
                     if label.is_current and label.reviewer.kind == ReviewerKind.HUMAN) < overlap,
            sent_back=c.open_send_back is not None)
        for c in claims
    ]
    by_id = {view.claim.pk: view for view in views}
    current = by_id.get(claim_id) if claim_id is not None else None
    if current is None and views:
        first = queue.first_claim_in_answer(run=answer.run, reviewer=reviewer, answer=answer, lease=lease)
        current = by_id[first.pk] if first is not None else views[0]
    raw_segments, unplaced_ids = answer_segments(
        answer.text, ((v.claim.pk, v.claim.start, v.claim.end) for v in views)
    )
    segments = [(s.text, by_id.get(s.claim_id) if s.claim_id is not None else None) for s in raw_segments]
    unplaced = [by_id[pk] for pk in sorted(unplaced_ids, key=lambda pk: by_id[pk].claim.index)]
    for view in unplaced:
        view.in_text = False
    passages: list[CitationView] = []
    history: list[HistoryEntry] = []
    previous_claim = next_claim = None
    current_gold = None
    if current is not None:
        if current.sent_back:
            current.send_back = SendBack.objects.select_related("lead").get(pk=current.claim.open_send_back)
        gold_id = getattr(current.claim, "current_gold", None)
        if gold_id is not None and (with_gold or current.my_label is not None):
            current_gold = GoldClaim.objects.select_related("lead").get(pk=gold_id)
            # Feedback shows it once the reviewer labeled the gold claim (issue 25 §3), never before.
            if feedback and current.my_label is not None:
                current.gold_feedback = current_gold
        position = views.index(current)
        previous_claim = views[position - 1] if position > 0 else None
        next_claim = views[position + 1] if position + 1 < len(views) else None
        for citation in current.citations:
            text = citation.passage.text if citation.passage is not None else ""
            segments_, found = passage_segments(text, span=citation.span, claim=current.claim.text)
            passages.append(CitationView(citation=citation, segments=segments_, span_found=found))
        labels = current.claim.all_labels
        if blind:
            labels = [label for label in labels if label.reviewer_id == reviewer.pk]
        history = history_entries(labels)
    judging = answer.run.project.judge_citations
    proposed, partials_enough, judged_precision = None, False, Ratio(0, 0)
    if judging:
        judged_precision = _answer_judged_precision(views, reviewer=reviewer)
    if judging and passages:
        proposed, partials_enough = _attach_judgments(passages, current, reviewer=reviewer, blind=blind)
    factual = [v for v in views if v.claim.factual]
    counts = ClaimCounts(
        claims=len(factual), cited=sum(1 for v in factual if v.cited),
        labeled=sum(1 for v in factual if v.cited and v.my_label is not None),
    )
    return ReviewContext(
        answer=answer, claims=views, segments=segments, unplaced=unplaced, current=current, passages=passages,
        history=history, gold=question_gold(question=answer.question, answer=answer), previous_claim=previous_claim,
        next_claim=next_claim, answer_counts=counts, blind=blind, judging=judging, proposed=proposed,
        partials_enough=partials_enough, judged_precision=judged_precision,
        current_gold=current_gold if with_gold else None,
    )


def _answer_judged_precision(views: list[ClaimView], *, reviewer: Reviewer) -> Ratio:
    """Citation precision of ``reviewer``'s current judgments on the answer's factual
    claims, under the default (union) rule with their own labels (SPEC §4.3b). One query."""
    mine = {view.claim.pk: view.my_label.value if view.my_label is not None else None
            for view in views if view.claim.factual}
    rows = CitationJudgment.objects.filter(reviewer=reviewer, is_current=True,
                                           citation__claim_id__in=list(mine)).values_list("citation__claim_id",
                                                                                           "judgment")
    frame = pd.DataFrame(list(rows), columns=["claim_id", "judgment"])
    labels = frame["claim_id"].map(mine)
    precise = judgments_module.precise_mask(frame["judgment"], labels, judgments_module.DEFAULT_RULE)
    return Ratio(int(precise.sum()), len(frame))


def _attach_judgments(passages: list[CitationView], current: ClaimView, *, reviewer: Reviewer,
                      blind: bool) -> tuple[str | None, bool]:
    """Give each passage of the current claim its judgments (SPEC §4.3b; one query) and
    return ``(proposed, partials_enough)``: the label the reviewer's current judgments
    propose, and whether their SUPPORTED label rests on PARTIAL citations together."""
    judgments = CitationJudgment.objects.filter(citation__in=[p.citation for p in passages])
    if blind:
        judgments = judgments.filter(reviewer=reviewer)
    by_citation: dict[int, list[CitationJudgment]] = {}
    for judgment in judgments.select_related("reviewer").order_by("-pk"):
        by_citation.setdefault(judgment.citation_id, []).append(judgment)
    for view in passages:
        view.judgments = by_citation.get(view.citation.pk, [])
        view.my_judgment = next((j for j in view.judgments if j.reviewer_id == reviewer.pk and j.is_current), None)
    mine = [view.my_judgment.judgment if view.my_judgment else None for view in passages]
    label = current.my_label
    partials_enough = (label is not None and label.value == LabelValue.SUPPORTED
                       and judgments_module.FULL not in mine and judgments_module.PARTIAL in mine)
    return judgments_module.proposed_label(mine, partials_enough=partials_enough), partials_enough


def history_entries(labels: list[Label]) -> list[HistoryEntry]:
    """``labels`` of one claim (newest first) with their status: ``current``;
    ``stale`` (given on an older claim revision); ``undone`` (not current,
    newer than the reviewer's current label or the reviewer has none — see
    ``label_undo``); ``superseded`` otherwise."""
    current_id = {label.reviewer_id: label.pk for label in labels if label.is_current}
    entries = []
    for label in labels:
        if label.is_current:
            status = "current"
        elif label.is_stale:
            status = "stale"
        elif label.pk > current_id.get(label.reviewer_id, 0):
            status = "undone"
        else:
            status = "superseded"
        entries.append(HistoryEntry(label=label, status=status))
    return entries


def question_gold(*, question: Question, answer: Answer | None = None) -> dict[str, Any] | None:
    """The question's gold for display: ``ids`` (list of str), ``references``
    (GoldReference list), ``sources`` (list of str); ``None`` when no part is
    given. One query per part the question has.

    With ``answer`` and references, also ``reference_matches``: one
    ``(reference, matched, cited_ids)`` per reference, where ``matched`` is
    True/False (None when undecided) under the default match method and
    ``cited_ids`` the passage ids of the answer's citations that match it
    (SPEC §4.3; one more query for the answer's citations).
    """
    if not (question.gold_ids_given or question.gold_references_given or question.gold_sources_given):
        return None
    gold = {
        "ids": list(question.gold_ids.order_by("passage_id").values_list("passage_id", flat=True))
        if question.gold_ids_given else None,
        "references": list(question.gold_references.order_by("position"))
        if question.gold_references_given else None,
        "sources": list(question.expected_sources.order_by("source").values_list("source", flat=True))
        if question.gold_sources_given else None,
        "reference_matches": None,
        "match_method": DEFAULT_MATCH_METHOD,
    }
    if answer is not None and gold["references"]:
        gold["reference_matches"] = _reference_matches(answer, gold["references"])
    return gold


def _reference_matches(answer: Answer, references: list[GoldReference]) -> list[tuple[GoldReference, Any, list[str]]]:
    rows = list(
        Citation.objects.filter(claim__answer=answer).values_list("id", "cited_id", "passage__source", "span",
                                                                   "passage__text")
    )
    cited_ids = {pk: cited for pk, cited, _source, _span, _text in rows}
    citations = pd.DataFrame(
        [(pk, source or "", span or text or "") for pk, _cited, source, span, text in rows],
        columns=["citation_id", "source", "text"],
    )
    frame = pd.DataFrame([(r.pk, r.source, r.text) for r in references],
                         columns=["reference_id", "source", "text"])
    matches = answer_gold_matches(citations, frame, matcher=get_matcher(DEFAULT_MATCH_METHOD))
    return [
        (reference, match.matched, sorted({cited_ids[c] for c in match.citation_ids}))
        for reference, match in zip(references, matches.references, strict=True)
    ]
