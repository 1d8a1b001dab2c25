"""Whose labels count for a claim's figures, whose labels a run leaves out, and which
claims are disputed (SPEC §4.4): the one home of each rule as ORM predicates, beside
``COUNTED_KINDS``.

- **Whose labels count** (:func:`counted_q`, :func:`run_counted_q`): a reviewer of
  ``COUNTED_KINDS`` (people, imported human experts), or the judge a lead promoted
  for the run (``Run.promoted_judge``); never another automated labeler, which is
  only graded against them.
- **Whose labels a run leaves out** (:func:`run_exclusion`, :func:`runs_exclusions`,
  :func:`excluded_labels_q`): with ``Run.exclude_unqualified`` and a qualification
  rule, the labels of every human reviewer who does not qualify on the run (too few
  gold claims yet, or a Wilson lower bound under the rule's; ``scoring.reviewers``).
- **Disputed** (:func:`disputed_q`): a cited factual claim whose counted current
  labels say both SUPPORTED and UNSUPPORTED, with no current adjudication (a lead's
  verdict settles it).

The pandas twins: ``scoring.labels.counted_labels`` (whose labels count, with the
names :func:`run_exclusion` gives), ``resolve_labels`` and ``apply_adjudications``
(disputed), read by ``labeling.exports.frames.resolved_claims_frame``; the pages'
aggregate counts (``labeling.review.tallies``) build on :func:`counted_q`.
``tests/test_label_counts_agree.py`` holds the SQL and pandas forms together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from labeling.models.accounts import COUNTED_KINDS, Reviewer, ReviewerKind
from labeling.models.content import Answer, Citation, Claim, Run
from labeling.models.labels import Adjudication, Label, LabelValue
from labeling.models.team import GoldClaim
from scoring import reviewers as figures

S, U = LabelValue.SUPPORTED.value, LabelValue.UNSUPPORTED.value
HUMAN = ReviewerKind.HUMAN.value


# -- whose labels a run leaves out ---------------------------------------------------------------

@dataclass(frozen=True)
class Exclusion:
    """Whose labels a run leaves out of its figures (``Run.exclude_unqualified``): the
    ids and names of its unqualified reviewers, and how many current labels of theirs
    that is (``labels``)."""

    reviewer_ids: frozenset[int] = frozenset()
    names: tuple[str, ...] = ()
    labels: int = 0

    def __bool__(self) -> bool:
        return bool(self.reviewer_ids)


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table) for name, model in (
        ("label", Label), ("claim", Claim), ("answer", Answer), ("reviewer", Reviewer), ("gold", GoldClaim))}


def _run_ids(runs: list[int]) -> str:
    """``runs`` (ids, never user input) as a SQL list."""
    return ", ".join(str(int(pk)) for pk in runs)


# Current SUPPORTED/UNSUPPORTED labels of human reviewers on factual claims (labels of
# these values exist only on cited claims, SPEC §3): per reviewer, all and UNSUPPORTED.
_LABELS_SQL = """
SELECT l.reviewer_id, COUNT(*), SUM(CASE WHEN l.value = %s THEN 1 ELSE 0 END)
FROM {label} l JOIN {reviewer} r ON r.id = l.reviewer_id JOIN {claim} c ON c.id = l.claim_id
JOIN {answer} a ON a.id = c.answer_id
WHERE a.run_id IN ({runs}) AND l.is_current AND c.factual AND r.kind = %s AND l.value IN (%s, %s)
GROUP BY l.reviewer_id
"""

# Gold claims labeled, and labeled right, per human reviewer (and run).
_GOLD_SQL = """
SELECT g.run_id, l.reviewer_id, COUNT(*), SUM(CASE WHEN l.value = g.value THEN 1 ELSE 0 END)
FROM {gold} g JOIN {label} l ON l.claim_id = g.claim_id JOIN {reviewer} r ON r.id = l.reviewer_id
WHERE g.run_id IN ({runs}) AND g.is_current AND l.is_current AND r.kind = %s AND l.value IN (%s, %s)
GROUP BY g.run_id, l.reviewer_id
"""


def _fetch(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def reviewer_label_counts(runs: list[int]) -> dict[int, tuple[int, int]]:
    """Per human reviewer (id): ``(labels, UNSUPPORTED)`` of their current
    SUPPORTED/UNSUPPORTED labels on the factual claims of ``runs`` (ids). One query."""
    if not runs:
        return {}
    rows = _fetch(_LABELS_SQL.format(runs=_run_ids(runs), **_tables()), [U, HUMAN, S, U])
    return {reviewer: (int(n), int(unsupported or 0)) for reviewer, n, unsupported in rows}


def reviewer_gold_counts(runs: list[int]) -> dict[tuple[int, int], tuple[int, int]]:
    """``(run id, reviewer id)`` → ``(correct, gold claims labeled)`` of each human
    reviewer's current labels on the current gold claims of ``runs``. One query."""
    if not runs:
        return {}
    rows = _fetch(_GOLD_SQL.format(runs=_run_ids(runs), **_tables()), [HUMAN, S, U])
    return {(run, reviewer): (int(correct or 0), int(total)) for run, reviewer, total, correct in rows}


def excludes(run: Run) -> bool:
    """Whether ``run`` leaves the labels of unqualified reviewers out (SPEC §4.4): a lead
    chose so (``Run.exclude_unqualified``) and set a qualification rule."""
    return run.exclude_unqualified and run.qualify_min_lower is not None and run.qualify_min_gold is not None


def unqualified(run: Run, reviewers: Iterable[int],
                gold: Mapping[tuple[int, int], tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Those of ``reviewers`` (ids) who do not qualify under ``run``'s rule
    (``scoring.reviewers.qualified``: too few gold claims yet, or a Wilson lower bound
    under the rule's), each with its ``(correct, gold claims labeled)`` from ``gold``
    (:func:`reviewer_gold_counts`); empty when the run has no rule. No query."""
    if run.qualify_min_lower is None or run.qualify_min_gold is None:
        return {}
    return {pk: gold.get((run.pk, pk), (0, 0)) for pk in reviewers
            if not figures.qualified(*gold.get((run.pk, pk), (0, 0)), min_lower=run.qualify_min_lower,
                                     min_gold=run.qualify_min_gold)}


def exclusion_of(reviewers: Iterable[int], counts: Mapping[int, tuple[int, int]],
                 names: Mapping[int, str]) -> Exclusion:
    """The :class:`Exclusion` of the unqualified ``reviewers`` (:func:`unqualified`)
    who have labels in ``counts`` (:func:`reviewer_label_counts`), named by ``names``."""
    left = [pk for pk in reviewers if pk in counts]
    return Exclusion(frozenset(left), tuple(sorted(names[pk] for pk in left)), sum(counts[pk][0] for pk in left))


def run_exclusion(*, run: Run) -> Exclusion:
    """The labels ``run`` leaves out: when it :func:`excludes`, every human reviewer
    with a current label on the run who does not qualify (:func:`unqualified`). No
    query when the run excludes nobody; else three (labels, gold, names)."""
    if not excludes(run):
        return Exclusion()
    counts = reviewer_label_counts([run.pk])
    out = unqualified(run, counts, reviewer_gold_counts([run.pk]))
    names = dict(Reviewer.objects.filter(pk__in=out).values_list("pk", "username"))
    return exclusion_of(out, counts, names)


def runs_exclusions(runs: list[Run]) -> dict[int, Exclusion]:
    """:func:`run_exclusion` of each of ``runs`` that leaves labels out (no query for the
    others), by run id."""
    out = {}
    for run in runs:
        if excludes(run):
            exclusion = run_exclusion(run=run)
            if exclusion:
                out[run.pk] = exclusion
    return out


def excluded_labels_q(exclusions: Mapping[int, Exclusion], *, prefix: str = "",
                      run_id: str = "claim__answer__run_id") -> Q:
    """A ``Q`` matching the labels ``exclusions`` (by run id) leave out: the labels of
    each run's unqualified reviewers on that run. ``prefix`` leads from the queried
    model to the label (``"claims__labels__"`` from an ``Answer``), ``run_id`` to its
    run's id (``"run_id"`` from an ``Answer``). An empty ``Q`` matches everything:
    callers test ``exclusions`` first."""
    q = Q()
    for pk, exclusion in exclusions.items():
        q |= Q(**{run_id: pk, f"{prefix}reviewer_id__in": sorted(exclusion.reviewer_ids)})
    return q


# -- whose labels count --------------------------------------------------------------------------

def counted_q(*, promoted: Any = None, exclusions: Mapping[int, Exclusion] | None = None, prefix: str = "",
              run_id: str = "claim__answer__run_id") -> Q:
    """A ``Q`` matching the labels that count for a claim's figures (module docstring),
    on ``Label`` or any model with a ``reviewer`` (a citation judgment), through ``prefix``.

    ``promoted``: the promoted judge's id (``run.promoted_judge_id``), ``None`` for
    the humans alone, or an expression that reads it per row when the query spans
    runs (``F("run__promoted_judge_id")`` from an ``Answer``, an ``OuterRef`` in a
    subquery). ``exclusions`` (:func:`runs_exclusions`): labels left out, by run,
    located with ``run_id`` as in :func:`excluded_labels_q`. Current-ness and values
    are the caller's filters.
    """
    q = Q(**{f"{prefix}reviewer__kind__in": COUNTED_KINDS})
    if promoted is not None:
        q |= Q(**{f"{prefix}reviewer_id": promoted})
    if exclusions:
        q &= ~excluded_labels_q(exclusions, prefix=prefix, run_id=run_id)
    return q


def run_counted_q(run: Run, *, humans_only: bool = False, prefix: str = "") -> Q:
    """:func:`counted_q` for one run's figures: its promoted judge counts and its
    :func:`run_exclusion` leaves labels out (three queries when it :func:`excludes`,
    none else). ``humans_only``: the humans' labels alone, as a judge is graded
    against them: no promoted judge and nobody left out (SPEC §4.4)."""
    if humans_only:
        return counted_q(prefix=prefix)
    q = counted_q(promoted=run.promoted_judge_id, prefix=prefix)
    exclusion = run_exclusion(run=run)
    if exclusion:
        q &= ~Q(**{f"{prefix}reviewer_id__in": sorted(exclusion.reviewer_ids)})
    return q


# -- disputed ------------------------------------------------------------------------------------

def counted_values(counted: Q, *, claim: str = "pk") -> tuple[Exists, Exists]:
    """Whether the claim at ``OuterRef(claim)`` has a current counted (``counted``, a
    :func:`counted_q` on ``Label``) SUPPORTED label, and whether an UNSUPPORTED one:
    both is a dispute, unless adjudicated."""
    current = Label.objects.filter(claim=OuterRef(claim), is_current=True).filter(counted)
    return Exists(current.filter(value=S)), Exists(current.filter(value=U))


def adjudicated(*, claim: str = "pk") -> Exists:
    """Whether the claim at ``OuterRef(claim)`` has a current adjudication (the label
    that counts, SPEC §4.4)."""
    return Exists(Adjudication.objects.filter(claim=OuterRef(claim), is_current=True))


def disputed_q(counted: Q) -> Q:
    """A ``Q`` on ``Claim`` matching the disputed claims (module docstring) among the
    labels ``counted`` (:func:`run_counted_q`) lets count: cited, factual (a claim
    marked not factual leaves every count, SPEC §4.3b), both values, no adjudication."""
    has_supported, has_unsupported = counted_values(counted)
    return (Q(factual=True) & Q(Exists(Citation.objects.filter(claim=OuterRef("pk"))))
            & Q(has_supported) & Q(has_unsupported) & ~Q(adjudicated()))
