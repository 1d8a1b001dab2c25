"""Reads of reviewer quality (SPEC §4.4): gold accuracy, who is flagged under the
qualification rule, and the reviewer dashboard of a run or a project (figures
defined in ``scoring.reviewers``). Whose labels a run leaves out of its figures is
``labeling.models.counted``'s rule (``run_exclusion``), under every area.

Every figure is an aggregate in the database (a handful of grouped queries
whatever the size of the run: a 50k-claim run with 5 reviewers answers in
well under 300 ms, ``tests/bench/test_bench_dashboard.py``). The dashboard
lists human reviewers (kind ``human``): imported annotators and models have no
save times, gold checks or send-backs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count

from labeling.models import (
    COUNTED_KINDS,
    Adjudication,
    Answer,
    Assignment,
    Claim,
    GoldClaim,
    Label,
    LabelValue,
    Project,
    Reviewer,
    ReviewerKind,
    Run,
    SendBack,
)
from labeling.models.counted import (
    Exclusion,
    excludes,
    exclusion_of,
    reviewer_gold_counts,
    reviewer_label_counts,
    run_exclusion,
    unqualified,
)
from scoring import reviewers as figures
from scoring.judge_grading import kappa_interval
from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio

S, U = LabelValue.SUPPORTED.value, LabelValue.UNSUPPORTED.value
HUMAN = ReviewerKind.HUMAN.value


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table) for name, model in (
        ("label", Label), ("claim", Claim), ("answer", Answer), ("reviewer", Reviewer), ("gold", GoldClaim),
        ("adjudication", Adjudication), ("send_back", SendBack), ("run", Run))}


def _scope(runs: list[int]) -> str:
    """``a.run_id`` in ``runs`` (ids, never user input) as SQL."""
    return f"a.run_id IN ({', '.join(str(int(pk)) for pk in runs)})" if runs else "1 = 0"


# Every label row on the run's factual claims by a person (COUNTED_KINDS: human or external):
# the current ones for the counts and the reference, every save of a human for the seconds.
# The reference is the other people's labels (or a lead's adjudication): no promoted judge,
# nobody left out, as a judge's grade reads them (labeling.models.counted.run_counted_q's
# humans_only).
# One scan; the figures are computed from it in numpy (three grouped queries over the
# same rows cost twice as much on SQLite). Times as seconds: PostgreSQL's epoch, SQLite's
# Julian day (× 86400 in Python).
_LABEL_ROWS_SQL = """
SELECT l.reviewer_id, l.claim_id, CASE l.value WHEN %s THEN 0 WHEN %s THEN 1 ELSE 2 END,
       CASE WHEN l.is_current THEN 1 ELSE 0 END, CASE WHEN r.kind = %s THEN 1 ELSE 0 END, {seconds}, a.run_id
FROM {label} l JOIN {reviewer} r ON r.id = l.reviewer_id JOIN {claim} c ON c.id = l.claim_id
JOIN {answer} a ON a.id = c.answer_id
WHERE {scope} AND c.factual AND r.kind IN ({kinds})
"""
_SECONDS = {"postgresql": "CAST(EXTRACT(EPOCH FROM l.created_at) AS double precision)",
            "sqlite": "julianday(l.created_at)"}


def _fetch(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@dataclass(frozen=True)
class _LabelFigures:
    counts: dict[int, tuple[int, int]]
    medians: dict[int, float]
    confusions: dict[int, np.ndarray]
    # (run id, reviewer id) of every run a reviewer has a current label on.
    labeled_runs: frozenset[tuple[int, int]] = frozenset()


def _label_figures(runs: list[int]) -> _LabelFigures:
    """Per human reviewer: (labels, UNSUPPORTED) of their current SUPPORTED/UNSUPPORTED
    labels, the median seconds between saves (``scoring.reviewers``), and the 2 × 2
    confusion (rows: the label that counts without theirs, columns: theirs; S, U).
    Two queries: the label rows and the current adjudications."""
    vendor = "postgresql" if connection.vendor == "postgresql" else "sqlite"
    rows = _fetch(_LABEL_ROWS_SQL.format(seconds=_SECONDS[vendor], scope=_scope(runs),
                                         kinds=", ".join(["%s"] * len(COUNTED_KINDS)), **_tables()),
                  [S, U, HUMAN, *(kind.value for kind in COUNTED_KINDS)])
    if not rows:
        return _LabelFigures({}, {}, {})
    # All numbers (values coded S 0, U 1, other 2): one array, built in C.
    table = np.array(rows, dtype="float64")
    reviewer, claim, value = table[:, 0].astype("int64"), table[:, 1].astype("int64"), table[:, 2]
    # Column 6 is the run: a label's presence on each run (the project dashboard's rule).
    current, human = table[:, 3] == 1, table[:, 4] == 1
    seconds = table[:, 5] * (86400.0 if vendor == "sqlite" else 1.0)
    judged = current & (value < 2)
    is_s, is_u = judged & (value == 0), judged & (value == 1)
    labeled_runs = frozenset(zip(table[judged & human, 6].astype("int64").tolist(),
                                 reviewer[judged & human].tolist(), strict=True))
    counts = {int(pk): (int(n), int(u)) for pk, n, u in zip(*_group_sums(reviewer[judged & human],
                                                                       is_u[judged & human]), strict=True)}
    # Seconds: every save of each human, in time order; a gap over the sitting break is dropped.
    ordered = np.lexsort((seconds, reviewer))
    saves = ordered[human[ordered]]
    who, when = reviewer[saves], seconds[saves]
    same = who[1:] == who[:-1]
    gaps, owners = (when[1:] - when[:-1])[same], who[1:][same]
    keep = gaps <= figures.SITTING_GAP_SECONDS
    medians = {int(pk): float(np.median(gaps[keep][owners[keep] == pk])) for pk in np.unique(owners[keep])}
    # The counted label without the reviewer's own: the adjudication, else the others' agreed value.
    codes, claims = np.unique(claim, return_inverse=True)
    n_s = np.bincount(claims, weights=is_s, minlength=len(codes))
    n_u = np.bincount(claims, weights=is_u, minlength=len(codes))
    mine = judged & human
    others_s = n_s[claims[mine]] - is_s[mine]
    others_u = n_u[claims[mine]] - is_u[mine]
    reference = np.where((others_s > 0) & (others_u == 0), 0, np.where((others_u > 0) & (others_s == 0), 1, -1))
    verdicts = dict(Adjudication.objects.filter(claim__answer__run_id__in=runs, is_current=True)
                    .values_list("claim_id", "value"))
    if verdicts:
        by_code = np.full(len(codes), -1)
        ids = np.array(list(verdicts), dtype="int64")
        where = np.searchsorted(codes, ids)
        found = (where < len(codes)) & (codes[np.minimum(where, len(codes) - 1)] == ids)
        by_code[where[found]] = [0 if verdicts[int(pk)] == S else 1 for pk in ids[found]]
        adjudicated = by_code[claims[mine]]
        reference = np.where(adjudicated >= 0, adjudicated, reference)
    given = np.where(is_u[mine], 1, 0)
    confusions: dict[int, np.ndarray] = {}
    with_reference = reference >= 0
    for pk in np.unique(reviewer[mine]):
        at = (reviewer[mine] == pk) & with_reference
        if at.any():
            cells = np.bincount(reference[at] * 2 + given[at], minlength=4).reshape(2, 2).astype("int64")
            confusions[int(pk)] = cells
    return _LabelFigures(counts, medians, confusions, labeled_runs)


def _group_sums(keys: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``keys``, how many rows each has, and how many of them are ``flags``."""
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, minlength=len(unique)), np.bincount(inverse, weights=flags,
                                                                             minlength=len(unique))


def _open_send_backs(runs: list[int]) -> dict[int, int]:
    return dict(SendBack.objects.filter(run_id__in=runs, resolved_at__isnull=True).values("reviewer_id")
                .order_by().annotate(n=Count("id")).values_list("reviewer_id", "n"))


# -- the dashboard -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReviewerQuality:
    """One reviewer's row of the dashboard (``scoring.reviewers`` for each figure).

    ``labels``: current SUPPORTED/UNSUPPORTED labels on factual claims;
    ``unsupported``: of them UNSUPPORTED; ``median_seconds``: per claim (None
    without two saves in a sitting); ``kappa`` with ``kappa_ci95`` on
    ``kappa_n`` claims that have a counted label without theirs; gold claims
    ``gold_correct`` of ``gold_total``; ``send_backs_open``; ``qualified``
    (None: no rule; on a project, whether they qualify on every run with a
    rule where they labeled gold or labels); ``unqualified_runs`` (names);
    ``fast_and_supported``: the flag.
    """

    reviewer: str
    labels: int
    unsupported: int
    median_seconds: float | None
    kappa: float | None
    kappa_ci95: tuple[float, float] | None
    kappa_n: int
    gold_correct: int
    gold_total: int
    send_backs_open: int
    qualified: bool | None
    unqualified_runs: tuple[str, ...] = ()

    @property
    def unsupported_share(self) -> Ratio:
        return Ratio(self.unsupported, self.labels)

    @property
    def gold_accuracy(self) -> Ratio:
        return Ratio(self.gold_correct, self.gold_total)

    @property
    def gold_accuracy_ci95(self) -> tuple[float, float] | None:
        return figures.accuracy_interval(self.gold_correct, self.gold_total)

    @property
    def fast_and_supported(self) -> bool:
        return figures.fast_and_supported(median_seconds=self.median_seconds, unsupported=self.unsupported,
                                          labels=self.labels)

    def as_dict(self) -> dict[str, Any]:
        """The JSON row of ``reviewers --format json`` (SPEC §4.4's keys, then more)."""
        ci = self.gold_accuracy_ci95
        return {
            "reviewer": self.reviewer, "labels": self.labels,
            "median_seconds": None if self.median_seconds is None else round(self.median_seconds, 3),
            "unsupported_share": self.unsupported_share.value, "kappa": self.kappa,
            "kappa_ci95": None if self.kappa_ci95 is None else list(self.kappa_ci95),
            "gold_correct": self.gold_correct, "gold_total": self.gold_total,
            "gold_accuracy_ci95": None if ci is None else list(ci),
            "send_backs_open": self.send_backs_open, "qualified": self.qualified,
            "unsupported": self.unsupported, "kappa_n": self.kappa_n, "gold_accuracy": self.gold_accuracy.value,
            "fast_and_supported": self.fast_and_supported, "unqualified_runs": list(self.unqualified_runs),
        }


@dataclass(frozen=True)
class Dashboard:
    """The reviewer dashboard of a run (``run`` set) or a project: one row per human
    reviewer, by name; the rule (run only) and what the run leaves out."""

    rows: list[ReviewerQuality]
    min_lower: float | None = None
    min_gold: int | None = None
    exclusion: Exclusion = field(default_factory=Exclusion)
    gold_claims: int = 0
    send_backs_open: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"reviewers": [row.as_dict() for row in self.rows],
                "rule": None if self.min_lower is None else {"min_lower": self.min_lower, "min_gold": self.min_gold},
                "gold_claims": self.gold_claims, "send_backs_open": self.send_backs_open,
                "excluded": {"reviewers": list(self.exclusion.names), "labels": self.exclusion.labels}}


SORT_KEYS = {
    "reviewer": lambda r: r.reviewer,
    "labels": lambda r: r.labels,
    "median_seconds": lambda r: r.median_seconds,
    "unsupported_share": lambda r: r.unsupported_share.value,
    "kappa": lambda r: r.kappa,
    "gold_accuracy": lambda r: r.gold_accuracy.value,
    "send_backs_open": lambda r: r.send_backs_open,
}


def sort_rows(rows: list[ReviewerQuality], key: str) -> list[ReviewerQuality]:
    """``rows`` by ``key`` (a ``SORT_KEYS`` name, ``-`` first for descending), undefined
    values last either way, then by name; an unknown key sorts by name."""
    descending = key.startswith("-")
    get = SORT_KEYS.get(key.lstrip("-"), SORT_KEYS["reviewer"])
    defined = [r for r in rows if get(r) is not None]
    undefined = [r for r in rows if get(r) is None]
    defined.sort(key=lambda r: r.reviewer)
    defined.sort(key=get, reverse=descending)
    return defined + sorted(undefined, key=lambda r: r.reviewer)


def _dashboard(runs: list[Run], *, rule_run: Run | None) -> Dashboard:
    ids = [run.pk for run in runs]
    label_figures = _label_figures(ids)
    counts, medians, confusions = label_figures.counts, label_figures.medians, label_figures.confusions
    gold = reviewer_gold_counts(ids)
    open_backs = _open_send_backs(ids)
    working = set(Assignment.objects.filter(run_id__in=ids, reviewer__kind=HUMAN).values_list("reviewer_id",
                                                                                             flat=True))
    people = set(counts) | {reviewer for _run, reviewer in gold} | set(medians) | set(open_backs) | working
    names = dict(Reviewer.objects.filter(pk__in=people, kind=HUMAN).values_list("pk", "username"))
    ruled = [run for run in runs if run.qualify_min_lower is not None and run.qualify_min_gold is not None]
    rows = []
    for pk, name in names.items():
        correct = sum(c for (run, reviewer), (c, _t) in gold.items() if reviewer == pk)
        total = sum(t for (run, reviewer), (_c, t) in gold.items() if reviewer == pk)
        cells = confusions.get(pk)
        kappa, _se, ci = kappa_interval(cells) if cells is not None else (None, None, None)
        unqualified = tuple(run.name for run in ruled if ((run.pk, pk) in label_figures.labeled_runs
                                                          or (run.pk, pk) in gold) and not
                            figures.qualified(*gold.get((run.pk, pk), (0, 0)), min_lower=run.qualify_min_lower,
                                              min_gold=run.qualify_min_gold))
        if rule_run is not None:
            qualified = figures.qualified(correct, total, min_lower=rule_run.qualify_min_lower,
                                          min_gold=rule_run.qualify_min_gold)
        else:
            qualified = (not unqualified) if ruled else None
        labels, unsupported = counts.get(pk, (0, 0))
        rows.append(ReviewerQuality(
            reviewer=name, labels=labels, unsupported=unsupported, median_seconds=medians.get(pk), kappa=kappa,
            kappa_ci95=ci, kappa_n=int(cells.sum()) if cells is not None else 0, gold_correct=correct,
            gold_total=total, send_backs_open=open_backs.get(pk, 0), qualified=qualified,
            unqualified_runs=unqualified))
    return Dashboard(rows=sorted(rows, key=lambda r: r.reviewer),
                     gold_claims=GoldClaim.objects.filter(run_id__in=ids, is_current=True).count(),
                     send_backs_open=sum(open_backs.values()))


def run_dashboard(*, run: Run) -> Dashboard:
    """The reviewer dashboard of ``run`` (``ReviewerQuality`` per human reviewer who
    labeled it, has gold or send-backs there, or is assigned), with its rule and
    what it leaves out. About ten grouped queries, whatever the size of the run."""
    board = _dashboard([run], rule_run=run)
    return Dashboard(rows=board.rows, min_lower=run.qualify_min_lower, min_gold=run.qualify_min_gold,
                     exclusion=run_exclusion(run=run), gold_claims=board.gold_claims,
                     send_backs_open=board.send_backs_open)


def project_dashboard(*, project: Project) -> Dashboard:
    """The reviewer dashboard over every run of ``project``: counts, gold and
    send-backs summed, kappa from the summed confusion matrices, seconds from all
    saves; ``qualified`` says whether the reviewer qualifies on every run that has
    a rule (``unqualified_runs`` names the others)."""
    return _dashboard(list(Run.objects.filter(project=project).order_by("created_at", "name")), rule_run=None)


def gold_claim_rows(*, run: Run) -> list[GoldClaim]:
    """The current gold claims of ``run`` with their claim (answer, question) and lead,
    in question and claim order (the lead's gold page)."""
    return list(GoldClaim.objects.filter(run=run, is_current=True)
                .select_related("claim__answer", "lead").order_by("claim__answer__question_key", "claim__index"))


@dataclass(frozen=True)
class RunQualitySummary:
    """What the run page shows of reviewer quality (SPEC §4.4): open send-backs, the
    reviewers flagged under the qualification rule as ``(name, correct, gold
    claims labeled)``, the rule, and the labels the run leaves out."""

    send_backs_open: int
    flagged: list[tuple[str, int, int]]
    min_lower: float | None
    min_gold: int | None
    exclusion: Exclusion
    gold_claims: int


# The run page's counts in one round trip: open send-backs (all, and the viewer's own) and
# current gold claims.
_RUN_COUNTS_SQL = """
SELECT (SELECT COUNT(*) FROM {send_back} WHERE run_id = %s AND resolved_at IS NULL),
       (SELECT COUNT(*) FROM {send_back} WHERE run_id = %s AND resolved_at IS NULL AND reviewer_id = %s),
       (SELECT COUNT(*) FROM {gold} WHERE run_id = %s AND is_current)
"""


def run_page_counts(*, run: Run, reviewer: Reviewer) -> tuple[int, int, int]:
    """``(open send-backs, of them ``reviewer``'s, current gold claims)`` of ``run``. One query."""
    (row,) = _fetch(_RUN_COUNTS_SQL.format(**_tables()), [run.pk, run.pk, reviewer.pk, run.pk])
    return int(row[0]), int(row[1]), int(row[2])


def run_quality_summary(*, run: Run, counts: tuple[int, int, int] | None = None) -> RunQualitySummary:
    """The run page's quality panel: ``counts`` (``run_page_counts``, else one query),
    three more with a rule (label and gold counts, names), and the exclusion's when
    the run leaves labels out."""
    open_backs, _mine, gold_claims = counts if counts is not None else run_page_counts(run=run, reviewer=Reviewer())
    flagged: list[tuple[str, int, int]] = []
    exclusion = Exclusion()
    if run.qualify_min_lower is not None and run.qualify_min_gold is not None:
        labels = reviewer_label_counts([run.pk])
        gold = reviewer_gold_counts([run.pk])
        below = unqualified(run, set(labels) | {r for _, r in gold}, gold)
        names = dict(Reviewer.objects.filter(pk__in=below).values_list("pk", "username"))
        flagged = sorted((names[pk], correct, total) for pk, (correct, total) in below.items())
        if excludes(run):
            # The same reviewers run_exclusion leaves out, from the counts already read.
            exclusion = exclusion_of(below, labels, names)
    return RunQualitySummary(send_backs_open=open_backs, flagged=flagged, min_lower=run.qualify_min_lower,
                             min_gold=run.qualify_min_gold, exclusion=exclusion, gold_claims=gold_claims)
