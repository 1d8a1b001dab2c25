"""Claim counts of runs and answers for the project, run and review pages (STYLE §3).

Counts come from annotated aggregate queries (``Count`` with ``filter``), so each
function runs a fixed number of queries whatever the number of runs, answers or
claims. Which label counts for a claim is the rule of ``labeling.scores.metrics``
(SPEC §3, §4.1), written here in SQL: a claim without citations is UNCITED; a cited
claim is a lead's adjudication, else SUPPORTED (UNSUPPORTED) when every counted current
label on it says so, pending when it has none or they disagree. Whose labels count
is ``labeling.models.counted.counted_q`` (never an automated labeler's unless a lead
promoted that judge for the run; never those the run leaves out).
``tests/test_label_counts_agree.py`` checks that both count the same on every answers
file in ``fixtures/``. "Your progress" counts the cited claims that carry the given
reviewer's own current label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from django.db import connection
from django.db.models import (
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce

from labeling.models import (
    Adjudication,
    Answer,
    Citation,
    Claim,
    Label,
    LabelValue,
    Project,
    Question,
    Reviewer,
    Run,
)
from labeling.models.counted import Exclusion, counted_q, counted_values, excluded_labels_q
from labeling.permissions import acting_role, blind_for, blind_for_reviewer, visible_projects
from labeling.review.queue import exists_fence
from labeling.scores.figure_cache import label_state
from scoring.figures import FigureInterval, RunFigures, run_intervals
from scoring.intervals import DEFAULT_CONFIDENCE, AnswerValues, Units
from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio, gap

_COUNT_FIELDS = ("claims", "cited", "labeled", "supported", "unsupported", "disagreements", "fabricated",
                 "adjudicated")
_COUNTS_OF = attrgetter(*_COUNT_FIELDS)

_CITED_CLAIMS_SQL = """
SELECT r.claims_version,
       (SELECT COUNT(*) FROM {claim} c JOIN {answer} a ON a.id = c.answer_id
        WHERE a.run_id = r.id AND c.factual AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id))
FROM {run} r WHERE r.id = %s
"""

# The reviewer's current labels on cited factual claims of a run. Written in SQL for the
# fence (queue.exists_fence): without statistics PostgreSQL would hash every
# citation of the database for the EXISTS (23 ms on a 50k-claim run) instead of
# probing the citations of the reviewer's labeled claims.
_LABELED_SQL = """
SELECT COUNT(*) FROM {label} l JOIN {claim} c ON c.id = l.claim_id JOIN {answer} a ON a.id = c.answer_id
WHERE l.reviewer_id = %s AND l.is_current AND a.run_id = %s AND c.factual
  AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id {fence})
"""



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


def answer_count_aggregates(reviewer: Reviewer, *, own_only: bool = False,
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
        # SPEC §4.4: whose labels count (labeling.models.counted): never an automated labeler's
        # unless a lead promoted it for the run, never those a lead left out of the figures.
        judged &= counted_q(promoted=F("run__promoted_judge_id"), exclusions=exclusions,
                            prefix="claims__labels__", run_id="run_id")
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


def counts_of_row(row: dict[str, Any] | Any, adjudicated: dict[str, int] | None = None) -> ClaimCounts:
    """``ClaimCounts`` from the label counts of ``row`` and, for the adjudicated
    claims among them, ``adjudicated`` (``adjudicated_counts``): their label
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


def adjudicated_counts(adjudications: QuerySet[Adjudication], group: str,
                        exclusions: dict[int, Exclusion] | None = None) -> dict[int, dict[str, int]]:
    """Per ``group`` (a lookup from Adjudication, e.g. the run id): the current
    adjudications of cited claims, by value, and what the label counts saw on
    those claims (judged, has_supported, has_unsupported) so ``counts_of_row`` can
    replace it (without the labels ``exclusions`` leave out). One grouped query;
    its rows are the adjudicated claims only."""
    has_sup, has_uns = counted_values(
        counted_q(promoted=OuterRef("claim__answer__run__promoted_judge_id"), exclusions=exclusions), claim="claim")
    rows = (adjudications.filter(is_current=True).filter(Exists(Citation.objects.filter(claim=OuterRef("claim"))))
            .alias(has_sup=has_sup, has_uns=has_uns)
            .values(group).order_by()
            .annotate(supported=Count("id", filter=Q(value=LabelValue.SUPPORTED)),
                      unsupported=Count("id", filter=Q(value=LabelValue.UNSUPPORTED)),
                      judged=Count("id", filter=Q(has_sup=True) | Q(has_uns=True)),
                      has_supported=Count("id", filter=Q(has_sup=True)),
                      has_unsupported=Count("id", filter=Q(has_uns=True))))
    return {row.pop(group): row for row in rows}


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
    # One pass over the answers, then a sum per column (a getattr per field and answer: ~3 ms a 10k-answer run).
    columns = zip(*map(_COUNTS_OF, answer_counts), strict=True)
    return ClaimCounts(**dict(zip(_COUNT_FIELDS, map(sum, columns), strict=False)))


def claim_count_figures(answer_counts: list[ClaimCounts]) -> RunFigures:
    """Per-answer units and values of coverage, support and supported rate from one
    run's per-answer ``ClaimCounts`` (``scoring.figures.RunFigures``; answers are
    named by position, the figures of one run need no question ids)."""
    names = tuple(str(i) for i in range(len(answer_counts)))
    # One array per count, then whole columns (issue 24: per-answer lambdas and Ratio objects
    # cost ~30 ms at 10k answers, the run page's figures after each write).
    claims, cited, supported, unsupported = (
        np.fromiter((getattr(c, name) for c in answer_counts), dtype=np.int64, count=len(answer_counts))
        for name in ("claims", "cited", "supported", "unsupported"))
    labeled = supported + unsupported

    def units(numerator, denominator, available=None) -> Units:
        return Units(names, tuple(numerator.tolist()), tuple(denominator.tolist()), available)

    def values(numerator, denominator) -> AnswerValues:
        # Ratio(n, d).value per answer: n / d (numpy rounds it as Python does), None where d = 0.
        defined = denominator > 0
        ratio = np.divide(numerator, denominator, out=np.zeros(len(numerator)), where=defined)
        return AnswerValues(names, tuple(np.where(defined, ratio.astype(object), None).tolist()))

    return RunFigures(
        units={
            "coverage": units(cited, claims),
            "support": units(supported, labeled, available=int((cited > 0).sum())),
            "supported_rate": units(supported, claims),
        },
        values={"coverage": values(cited, claims), "support": values(supported, labeled),
                "supported_rate": values(supported, claims)},
    )


def claim_count_intervals(answer_counts: list[ClaimCounts], *,
                          confidence: float = DEFAULT_CONFIDENCE) -> dict[str, FigureInterval]:
    """Coverage, support, gap, supported rate and their per-answer means with their
    intervals and label budgets (SPEC §4.5), from one run's per-answer counts."""
    return run_intervals(claim_count_figures(answer_counts), confidence=confidence)


def runs_claim_counts(*, reviewer: Reviewer, runs: list[Run], blind_run_ids: frozenset[int] = frozenset(),
                       exclusions: dict[int, Exclusion] | None = None,
                       answer_ids: list[int] | None = None) -> dict[int, dict[int, ClaimCounts]]:
    """Per run id, per answer id (ascending), the ``ClaimCounts`` of each answer with
    claims, for each of ``runs`` (sum them with ``total_counts``); ``answer_ids``:
    of those answers only.

    Four grouped queries, each without fan-out or with one small DISTINCT
    (PostgreSQL sorts once per DISTINCT aggregate, so one query over claims ⋈
    citations ⋈ labels with eight of them is several times slower):
    claims (and those of unanswerable questions), citations (cited claims,
    fabricated citations), current SUPPORTED/UNSUPPORTED labels on cited
    claims (resolved as in ``answer_count_aggregates``), and the adjudicated
    claims (``adjudicated_counts``). A fifth query finds the
    claims of abstaining answers, only when unanswerable questions exist. On the
    runs of ``blind_run_ids`` only ``reviewer``'s own labels count (blind labeling);
    the labels ``exclusions`` name (unqualified reviewers', SPEC §4.4) never count,
    though they still count as the reviewer's own progress.
    Grouped by answer (the run's totals are their sum) so that every figure
    gets its interval, answers being the clusters (SPEC §4.5).
    """
    # Answers by id alone: with their run too, PostgreSQL walked the run's answers for a few ids.
    scope: dict[str, Any] = {"run_id__in": [run.pk for run in runs]} if answer_ids is None else {"id__in": answer_ids}
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
    # Labels of cited claims. A few answers' by their cited claims' ids: with the run's EXISTS over
    # citations, PostgreSQL without statistics hashed every citation of the run (75–110 ms an answer).
    cited_claim = Exists(Citation.objects.filter(claim=OuterRef("claim")))
    label_scope = (Q(cited_claim, **{f"claim__answer__{k}": v for k, v in scope.items()}) if answer_ids is None
                   else Q(claim_id__in=Subquery(Claim.objects.filter(answer_id__in=answer_ids).filter(
                       Exists(Citation.objects.filter(claim=OuterRef("pk")))).order_by().values("id"))))
    labels = {
        row["claim__answer_id"]: row
        for row in Label.objects.filter(label_scope, is_current=True, claim__factual=True,
                                        value__in=[LabelValue.SUPPORTED, LabelValue.UNSUPPORTED])
        .filter(Q(reviewer=reviewer) | ~Q(claim__answer__run_id__in=blind_run_ids))
        .filter(counted_q(promoted=F("claim__answer__run__promoted_judge_id")))
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
    adjudicated = adjudicated_counts(
        Adjudication.objects.filter(**{f"claim__answer__{k}": v for k, v in scope.items()}, claim__factual=True)
        .exclude(claim__answer__run_id__in=blind_run_ids), "claim__answer_id", exclusions)
    counts: dict[int, dict[int, ClaimCounts]] = {}
    for answer_id, row in sorted(claims.items()):
        cited, judged = citations.get(answer_id, {}), labels.get(answer_id, {})
        of_answer = counts.setdefault(row["answer__run_id"], {})
        of_answer[answer_id] = counts_of_row(adjudicated=adjudicated.get(answer_id), row={
            "n_claims": row["n"], "n_abstaining": abstaining.get(answer_id, 0), "n_cited": cited.get("cited", 0),
            "n_fabricated": cited.get("fabricated", 0), "n_judged": judged.get("judged", 0),
            "n_has_supported": judged.get("has_supported", 0), "n_has_unsupported": judged.get("has_unsupported", 0),
            "n_labeled": judged.get("labeled", 0),
        })
    return counts


def run_rows(*, project: Project, reviewer: Reviewer) -> list[RunRow]:
    """Every run of ``project`` with its claim counts (totals and per answer) and the
    reviewer's progress.

    One query for the runs with their answer counts and label states, then the
    counts of each run from the cache, or :func:`runs_claim_counts`' four or five
    grouped queries for the runs whose state moved
    (:func:`labeling.review.kept_counts.claim_counts_by_run`),
    whatever the number of runs.
    """
    from labeling.review.kept_counts import claim_counts_by_run  # it builds on this module

    # The answer count as a subquery: a Count() would GROUP BY the run, and PostgreSQL then ran the
    # label state's subqueries once per answer (100–300 ms on a 10k-answer run).
    answers = Answer.objects.filter(run=OuterRef("pk")).values("run").annotate(n=Count("id")).values("n")
    runs = list(Run.objects.filter(project=project)
                .annotate(n_answers=Coalesce(Subquery(answers, output_field=IntegerField()), 0), **label_state())
                .order_by("created_at", "name"))
    role = acting_role(reviewer, getattr(project, "my_role", None))
    by_run = claim_counts_by_run(runs, reviewer=reviewer, blind_run_ids=frozenset(
        r.pk for r in runs if blind_for(r, role=role)))
    for run in runs:
        run.project = project
    return [RunRow(run=run, answers=run.n_answers, counts=total_counts(by_run[run.pk]),
                   answer_counts=by_run[run.pk]) for run in runs]


def run_answer_counts(*, run: Run, reviewer: Reviewer) -> list[ClaimCounts]:
    """Claim counts of each answer of one run that has claims (``ClaimCounts``; their
    sum, ``total_counts``, is the run's), once per label state
    (:func:`labeling.review.kept_counts.claim_counts_by_run`);
    on a run ``reviewer`` labels blind, from their own labels only."""
    from labeling.review.kept_counts import claim_counts_by_run  # it builds on this module

    blind = frozenset({run.pk}) if blind_for_reviewer(run, reviewer) else frozenset()
    return claim_counts_by_run([run], reviewer=reviewer, blind_run_ids=blind)[run.pk]


def run_counts(*, run: Run, reviewer: Reviewer) -> ClaimCounts:
    """Claim counts of one run (``ClaimCounts``): the sum of ``run_answer_counts``."""
    return total_counts(run_answer_counts(run=run, reviewer=reviewer))


def run_answer_count(*, run: Run) -> int:
    """How many answers ``run`` has (one index-only count)."""
    return Answer.objects.filter(run=run).count()


def run_cited_claims(*, run: Run) -> int:
    """How many cited factual claims ``run`` has (the denominator of progress,
    SPEC §4.1; a claim marked not factual leaves every count, §4.3b).

    Read from the run's versioned cache (``Run.cited_claims``) when it matches
    ``Run.claims_version`` as loaded with ``run``: no query. Otherwise one
    statement counts them and reads the version in the same snapshot, and one
    UPDATE stores the count only if the version is still the one counted (a
    write that changed claims meanwhile has moved it on: the next read counts
    again). Counting a 50k-claim run takes 20–150 ms on PostgreSQL, which every
    page of the review screen would pay; ``runs.claims_changed`` is what
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
