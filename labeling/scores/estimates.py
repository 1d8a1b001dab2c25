"""Judge-assisted estimates of a run (SPEC §4.6): reads the run's
probability sample, the humans' labels on it and a judge's labels on every
cited claim, and hands per-answer sums to :func:`scoring.ppi.ppi_mean`.

Which claims are units: support counts the cited factual claims, the
supported rate every factual claim (an uncited one is 0 for the humans and the
judge alike), both leaving out an abstention's claims (SPEC §4.2, §4.3b).
Which answers are labeled: the sampled answers whose every cited factual claim
has a human label that counts (``labeling.scores.samples.human_claims``: never a
judge's, promoted or not). Every other answer is the judge's alone, even a
sampled one still pending (SPEC §4.6). A cited claim the judge did not label
is a prediction of 0.5: PPI stays valid for any prediction, as the sample
corrects it, and the judge-only figure counts only the judge's labels.

Six queries whatever the size of the run, all read at one moment
(``labeling.db.consistent_read``): the sample, the run's claims aggregated per
answer with the judge's labels, its unanswerable questions, its answer count,
the sample's members and their human labels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from django.db import connection
from django.db.models import Exists, OuterRef

from labeling.db import consistent_read
from labeling.models import Answer, Citation, Claim, Label, LabelValue, Reviewer, ReviewerKind, Run
from labeling.review.queue import exists_fence
from labeling.scores import samples
from scoring.budgets import Budget, answers_needed, non_inferior, settle_budget
from scoring.deltas import format_delta
from scoring.intervals import DEFAULT_CONFIDENCE, PairedDifference
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ppi import PPIEstimate, independent_difference, ppi_answers_needed, ppi_mean
from scoring.ratio import format_value

METRICS = ("support", "supported_rate")
# A cited claim the judge left unlabeled: a prediction that favours neither label (module docstring).
NO_VERDICT = 0.5


class EstimateError(ValueError):
    """Why a run's estimates cannot be computed as asked (a judge that cannot be picked)."""


def run_judges(run: Run) -> list[Reviewer]:
    """The judges (reviewers of kind ``model``) with a current label on a claim of
    ``run``, by name. One query."""
    labeled = Label.objects.filter(reviewer=OuterRef("pk"), claim__answer__run=run, is_current=True)
    return list(Reviewer.objects.filter(kind=ReviewerKind.MODEL).filter(Exists(labeled)).order_by("username"))


def pick_judge(run: Run, name: str | None = None) -> Reviewer | None:
    """The judge whose labels the estimates use (SPEC §4.6): ``name``, else the
    run's promoted judge, else its only judge; ``None`` when no judge labeled the
    run. Raises :class:`EstimateError` when ``name`` is no judge of the run, or
    when the run has several judges, none promoted, and no ``name``."""
    judges = run_judges(run)
    if name is not None:
        for judge in judges:
            if judge.username == name:
                return judge
        listed = ", ".join(j.username for j in judges) or "none"
        raise EstimateError(f"{name!r} is not a judge with labels on run {run.name!r} (its judges: {listed})")
    if run.promoted_judge_id is not None:
        promoted = [j for j in judges if j.pk == run.promoted_judge_id]
        if promoted:
            return promoted[0]
    if len(judges) > 1:
        raise EstimateError(f"run {run.name!r} has {len(judges)} judges ({', '.join(j.username for j in judges)}) "
                            "and none is promoted: name the one the estimates use (--judge NAME)")
    return judges[0] if judges else None


@dataclass(frozen=True)
class RunEstimates:
    """A run's sample and what it estimates (SPEC §4.6).

    ``judge``: the judge's name, ``None`` without one (then the estimates are
    the humans' alone, λ = 0, and only ``human_only`` means anything);
    ``sample``: its size and progress; ``support``/``supported_rate``: the
    PPI++ estimates; ``answers``: the run's answers (the most a sample can hold).
    """

    judge: str | None
    sample: samples.SampleStatus
    support: PPIEstimate
    supported_rate: PPIEstimate
    answers: int

    def to_dict(self) -> dict:
        """``score --format json``'s ``estimates``: ``{"support": …, "supported_rate": …}``,
        each :meth:`scoring.ppi.PPIEstimate.as_dict` with ``judge`` named."""
        return {name: {**getattr(self, name).as_dict(), "judge": self.judge} for name in METRICS}

    @property
    def headline(self) -> PPIEstimate:
        return self.support

    @property
    def target_reached(self) -> bool | None:
        """Whether the support interval is as narrow as the sample's target
        (the PPI++ one with a judge, else the humans'); ``None`` without a
        target or an interval."""
        target = self.sample.target_half_width
        interval = self.support if self.judge is not None else self.support.human_only
        if target is None or interval.half_width is None:
            return None
        return interval.half_width <= target + 1e-12

    def budgets(self) -> list[tuple[Budget, Budget | None]]:
        """The label budget of the support estimate (SPEC §4.6): per target
        half-width (the sample's own first when set, then ±0.05, ±0.03, ±0.02),
        the humans' alone and, with a judge, PPI++'s (SPEC §4.5 "Label budget").
        Empty without an interval."""
        widths = [0.05, 0.03, 0.02]
        target = self.sample.target_half_width
        if target is not None:
            widths = [target, *(w for w in widths if abs(w - target) > 1e-12)]
        human = answers_needed(self.support.human_only, available=self.answers, half_widths=widths)
        if human is None:
            return []
        ppi = ppi_answers_needed(self.support, available=self.answers, half_widths=widths) \
            if self.judge is not None else None
        return [(h, ppi[i] if ppi else None) for i, h in enumerate(human)]


# Per answer of a run: factual claims, cited factual claims, those the judge (%s) calls
# SUPPORTED and those it labeled, and whether any claim (factual or not) is cited (an
# abstention cites nothing, SPEC §4.2). Aggregated in the database: 10k rows for a
# 50k-claim run instead of 50k (tests/bench/test_bench_estimates.py). On PostgreSQL
# the fence (labeling.review.queue.exists_fence) keeps the derived table whole: inlined, its
# EXISTS was planned once per use (4 subplans, a cost that switched JIT on: +1 s).
_PER_ANSWER_SQL = """
SELECT x.answer_id, SUM(x.factual), SUM(x.factual * x.cited),
       SUM(CASE WHEN x.value = %s THEN x.factual * x.cited ELSE 0 END),
       SUM(CASE WHEN x.value IS NOT NULL THEN x.factual * x.cited ELSE 0 END),
       MAX(x.cited)
FROM (
  SELECT c.answer_id, CASE WHEN c.factual THEN 1 ELSE 0 END AS factual,
         CASE WHEN EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id) THEN 1 ELSE 0 END AS cited,
         l.value AS value
  FROM {claim} c
  JOIN {answer} a ON a.id = c.answer_id
  LEFT JOIN {label} l ON l.claim_id = c.id AND l.reviewer_id = %s AND l.is_current
  WHERE a.run_id = %s
  {fence}
) x
GROUP BY x.answer_id
"""
_PER_ANSWER_COLUMNS = ["answer_id", "rate_units", "support_units", "judge_supported", "judge_labeled", "cites"]


def _per_answer(run: Run, judge: Reviewer | None) -> pd.DataFrame:
    """Per answer of ``run`` with a claim (index ``answer_id``): ``support_units``
    (cited factual claims), ``rate_units`` (factual claims), ``judge_sum`` (the
    judge's predictions on the cited factual claims: 1 SUPPORTED, 0 UNSUPPORTED,
    ``NO_VERDICT`` without a label), ``judge_supported``, ``judge_labeled``; an
    abstention's claims count nowhere. Two queries."""
    quote = connection.ops.quote_name
    tables = {name: quote(model._meta.db_table) for name, model in
              (("claim", Claim), ("answer", Answer), ("citation", Citation), ("label", Label))}
    judge_id = judge.pk if judge is not None else None
    with connection.cursor() as cursor:
        cursor.execute(_PER_ANSWER_SQL.format(fence=exists_fence(), **tables),
                       [LabelValue.SUPPORTED.value, judge_id, run.pk])
        rows = cursor.fetchall()
    frame = pd.DataFrame.from_records(rows, columns=_PER_ANSWER_COLUMNS).set_index("answer_id").astype("int64")
    unanswerable = set(Answer.objects.filter(run=run, question__answerable=False).values_list("pk", flat=True))
    abstention = frame.index.isin(list(unanswerable)) & (frame["cites"] == 0).to_numpy()
    frame.loc[abstention, ["rate_units", "support_units"]] = 0
    frame["judge_sum"] = frame["judge_supported"] + NO_VERDICT * (frame["support_units"] - frame["judge_labeled"])
    return frame.drop(columns="cites")


# The judge's labels per answer on its cited factual claims (a judge labels only cited claims;
# the EXISTS keeps a label that outlived its claim's citations out all the same).
_JUDGE_PER_ANSWER_SQL = """
SELECT c.answer_id, SUM(CASE WHEN l.value = %s THEN 1 ELSE 0 END), COUNT(*)
FROM {label} l JOIN {claim} c ON c.id = l.claim_id JOIN {answer} a ON a.id = c.answer_id
WHERE l.reviewer_id = %s AND l.is_current AND c.factual AND a.run_id = %s
  AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id)
GROUP BY c.answer_id
"""


def _per_answer_from(claims: pd.DataFrame, run: Run, judge: Reviewer | None) -> pd.DataFrame:
    """:func:`_per_answer` from a claims frame the caller already read
    (``labeling.exports.frames.claims_frame`` columns ``answer_id``, ``n_citations``,
    ``factual``, ``abstention``: ``score`` holds one), and one query for the judge."""
    scored = claims[claims["factual"].astype(bool) & ~claims["abstention"].astype(bool)]
    frame = pd.DataFrame({"rate_units": scored.groupby("answer_id").size(),
                          "support_units": scored[scored["n_citations"] > 0].groupby("answer_id").size()})
    rows = []
    if judge is not None:
        quote = connection.ops.quote_name
        tables = {name: quote(model._meta.db_table) for name, model in
                  (("claim", Claim), ("answer", Answer), ("citation", Citation), ("label", Label))}
        with connection.cursor() as cursor:
            cursor.execute(_JUDGE_PER_ANSWER_SQL.format(**tables), [LabelValue.SUPPORTED.value, judge.pk, run.pk])
            rows = cursor.fetchall()
    judged = pd.DataFrame.from_records(rows, columns=["answer_id", "judge_supported", "judge_labeled"])
    frame = frame.join(judged.set_index("answer_id"), how="left").fillna(0).astype("int64")
    # The frame was read a moment earlier: a claim edited since must not give more verdicts than units.
    frame["judge_labeled"] = frame["judge_labeled"].clip(upper=frame["support_units"])
    frame["judge_supported"] = frame["judge_supported"].clip(upper=frame["judge_labeled"])
    frame["judge_sum"] = frame["judge_supported"] + NO_VERDICT * (frame["support_units"] - frame["judge_labeled"])
    return frame


def _labeled_units(human: list[samples.HumanClaim], unanswerable: set[int]) -> pd.DataFrame:
    """``support_units`` and ``rate_units`` of the sampled answers as their human labels
    were read (the same moment: a human sum never exceeds its units)."""
    cites = {claim.answer_id for claim in human if claim.cited}
    rows = [(claim.answer_id, int(claim.cited), 1) for claim in human
            if not (claim.answer_id in unanswerable and claim.answer_id not in cites)]
    frame = pd.DataFrame.from_records(rows, columns=["answer_id", "support_units", "rate_units"])
    return frame.groupby("answer_id").sum()


def run_estimates(run: Run, *, judge: Reviewer | None, confidence: float = DEFAULT_CONFIDENCE,
                  claims: pd.DataFrame | None = None) -> RunEstimates | None:
    """The estimates of ``run`` from its sample and ``judge``'s labels (module
    docstring), ``None`` when the run has no sample. ``claims``: the run's whole
    claims frame when the caller holds one (``score``), which saves reading the
    claims again. Raises ``ValueError`` for a bad ``confidence``."""
    with consistent_read():
        sample = samples.sample_of(run)
        if sample is None:
            return None
        per_answer = _per_answer(run, judge) if claims is None else _per_answer_from(claims, run, judge)
        answers = Answer.objects.filter(run=run).count()
        members = samples.member_answer_ids(sample)
        human = samples.human_claims(members)
        unanswerable = (set(Answer.objects.filter(pk__in=members, question__answerable=False)
                            .values_list("pk", flat=True)) if claims is not None else set())
    # A sampled answer without claims still counts as labeled (no unit: it adds nothing).
    per_answer = per_answer.reindex(per_answer.index.union(members), fill_value=0)
    if claims is not None:
        units = _labeled_units(human, unanswerable).reindex(members, fill_value=0)
        for column in ("support_units", "rate_units"):
            per_answer.loc[members, column] = units[column].to_numpy()
        inside = per_answer.loc[members]
        labeled_count = inside["judge_labeled"].clip(upper=inside["support_units"])
        per_answer.loc[members, "judge_labeled"] = labeled_count.to_numpy()
        per_answer.loc[members, "judge_supported"] = inside["judge_supported"].clip(upper=labeled_count).to_numpy()
        per_answer["judge_sum"] = (per_answer["judge_supported"]
                                   + NO_VERDICT * (per_answer["support_units"] - per_answer["judge_labeled"]))
    pending = samples.pending_answer_ids(human)
    status = samples.SampleStatus(len(members), len(members) - len(pending), sample.seed, sample.target_half_width)
    labeled = [pk for pk in members if pk not in pending]
    supported = Counter(claim.answer_id for claim in human if claim.label == LabelValue.SUPPORTED.value)
    human_supported = [supported[pk] for pk in labeled]
    inside = per_answer.loc[labeled]
    outside = per_answer.drop(index=labeled)
    estimates = {}
    for name, units in (("support", "support_units"), ("supported_rate", "rate_units")):
        judged = per_answer["judge_labeled"].sum()
        denominator = judged if name == "support" else per_answer[units].sum() - (
            per_answer["support_units"].sum() - judged)
        judge_only = float(per_answer["judge_supported"].sum() / denominator) \
            if judge is not None and denominator else None
        estimate = ppi_mean(
            human_supported, inside["judge_sum"].to_numpy(), inside[units].to_numpy(),
            outside["judge_sum"].to_numpy(), outside[units].to_numpy(), confidence=confidence,
            lam=0.0 if judge is None else None, judge_only=judge_only)
        # Without a judge there is nothing to say about one (its predictions were placeholders).
        estimates[name] = estimate if judge is not None else replace(estimate, judge_only=None)
    return RunEstimates(judge.username if judge is not None else None, status, estimates["support"],
                        estimates["supported_rate"], answers)


def command_estimates(run: Run, *, judge_name: str | None, reviewer: str | None,
                      confidence: float = DEFAULT_CONFIDENCE, claims: pd.DataFrame | None = None
                      ) -> RunEstimates | None:
    """The estimates ``score`` reports for ``run`` (SPEC §4.6), ``None`` when
    there are none to report: no sample, no judge, or one reviewer's labels
    asked for (estimates use the humans' agreed labels). Raises
    :class:`EstimateError` naming the flag: ``--judge`` without a sample, with
    ``--reviewer``, naming no judge of the run, or missing where several judges
    and none promoted would be picked from. ``claims``: as :func:`run_estimates`."""
    if reviewer is not None:
        if judge_name is not None:
            raise EstimateError("--judge: the estimates use the humans' agreed labels, not one reviewer's: "
                                "drop --reviewer")
        return None
    if samples.sample_of(run) is None:
        if judge_name is not None:
            raise EstimateError(f"--judge: run {run.name!r} has no probability sample, so there is no estimate: "
                                f"draw one with manage.py sample --run {run.name} --answers N")
        return None
    judge = pick_judge(run, judge_name)
    if judge is None:
        return None
    return run_estimates(run, judge=judge, confidence=confidence, claims=claims)


def _interval_text(low: float | None, high: float | None) -> str:
    return f" ({format_value(low)}–{format_value(high)})" if low is not None and high is not None else ""


def estimates_lines(estimates: RunEstimates) -> list[str]:
    """The estimates as ``score --format table`` prints them, in the run page's words."""
    status = estimates.sample
    lines = ["", f"  estimates (PPI++, judge {estimates.judge}; sample {status.size} answers: "
                 f"{status.fully_labeled} fully labeled, seed {status.seed})"]
    for name in METRICS:
        e: PPIEstimate = getattr(estimates, name)
        title = name.replace("_", " ")
        if e.estimate is None:
            lines.append(f"  {title}: no sampled answer is fully labeled yet")
            continue
        human, judge = e.human_only, e.judge_only
        lines.append(
            f"  {title} {format_value(e.estimate)}{_interval_text(e.low, e.high)} — {e.n_human_answers} answers by "
            f"humans + judge on {e.n_human_answers + e.n_judge_answers}; humans alone "
            f"{format_value(human.estimate)}{_interval_text(human.low, human.high)}; judge alone {format_value(judge)}"
            + (f"; λ̂ {format_value(e.lam)}" if e.judge_helps else f"; λ̂ {format_value(e.lam)}: the judge does not "
               "help, the estimate "
               "is the humans' alone"))
    return lines


def target_reached(run: Run) -> bool | None:
    """Whether the support interval of ``run``'s sample is as narrow as its target
    (the queue's "target reached", SPEC §4.6), with the judge :func:`pick_judge`
    finds (the humans' alone when none can be picked); ``None`` without a target
    or an interval. Seven queries (``pick_judge``'s one, ``run_estimates``' six), two
    without a sample."""
    try:
        judge = pick_judge(run)
    except EstimateError:
        judge = None
    estimates = run_estimates(run, judge=judge)
    return estimates.target_reached if estimates is not None else None


ESTIMATE_CHOICES = ("ppi",)


def require_estimates(run: Run, estimates: RunEstimates | None) -> RunEstimates:
    """``estimates`` when they hold an interval for every metric; else
    :class:`EstimateError` saying what the run lacks (a sample, a judge, two fully
    labeled sampled answers)."""
    if estimates is None:
        raise EstimateError(f"--estimate ppi: run {run.name!r} has no estimate: it needs a probability sample "
                            f"(manage.py sample --run {run.name} --answers N) and a judge's labels on its claims")
    if not estimates.support.defined:
        raise EstimateError(f"--estimate ppi: run {run.name!r} has {estimates.sample.fully_labeled} fully labeled "
                            "sampled answer(s): an interval needs two")
    return estimates


def estimate_differences(baseline: RunEstimates, candidate: RunEstimates) -> dict[str, PairedDifference]:
    """``candidate − baseline`` of each estimate, from independent samples
    (variances add, :func:`scoring.ppi.independent_difference`)."""
    return {name: independent_difference(getattr(baseline, name), getattr(candidate, name)) for name in METRICS}


def difference_words(difference: PairedDifference, baseline: RunEstimates, candidate: RunEstimates,
                     name: str) -> str:
    """``"−0.0200 (95% interval −0.1000 to +0.0600; PPI++ estimates on 143 and 150 sampled answers)"``."""
    sizes = f"PPI++ estimates on {getattr(baseline, name).n_human_answers} and " \
            f"{getattr(candidate, name).n_human_answers} sampled answers"
    if difference.delta is None:
        return f"undefined ({sizes})"
    if not difference.defined:
        return f"{format_delta(difference.delta, 4)} (no interval; {sizes})"
    return (f"{format_delta(difference.delta, 4)} ({difference.level * 100:g}% interval "
            f"{format_delta(difference.low, 4)} to {format_delta(difference.high, 4)}; {sizes})")


def estimate_gate(baseline_name: str, candidate_name: str, baseline: RunEstimates, candidate: RunEstimates,
                  drops: dict[str, float], *, interval: bool) -> list[str]:
    """Failures of the gate on the estimates (SPEC §4.6), in the words of the
    human-only gate: with ``interval`` the non-inferiority rule (SPEC §4.5: the
    lower bound of B − A at or above −max_drop), else the point rule (B − A at or
    above −max_drop). A failure names the metric, B − A with its interval and
    what more sampled answers would do."""
    differences = estimate_differences(baseline, candidate)
    failures = []
    for name, max_drop in drops.items():
        difference = differences[name]
        label = (f"{name}: {candidate_name} vs baseline {baseline_name}: B − A "
                 f"{difference_words(difference, baseline, candidate, name)}")
        if difference.delta is None:
            failures.append(label + " (undefined on a run; cannot gate)")
            continue
        if not interval:
            if difference.delta < -max_drop - 1e-12:
                failures.append(f"{label}: dropped {format_value(-difference.delta, 4)} > "
                                f"allowed {format_value(max_drop, 4)}")
            continue
        if non_inferior(difference, max_drop):
            continue
        if difference.high < -max_drop:
            failures.append(f"{label}: the interval lies below −{max_drop:g}; the drop is beyond noise: more "
                            "answers would not change the verdict")
            continue
        budget = settle_budget(difference, max_drop)
        settle = ("the delta sits on the bound: no number of answers settles it" if budget is None else
                  f"about {budget.more} more sampled answer(s) labeled in each run (at the current variance) "
                  "would settle it")
        failures.append(f"{label}: the interval reaches below −{max_drop:g}; {settle}")
    return failures
