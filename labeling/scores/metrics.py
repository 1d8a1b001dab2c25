"""Scores of a run: reads the run's frames and hands them to ``scoring``.

Which label counts for a claim (SPEC §3, §4.4): a claim without citations is
UNCITED; a cited claim takes the label its current reviewers agree on (or
only ``reviewer``'s when given); disagreement leaves it pending. Computed in
``labeling.exports.frames.resolved_claims_frame`` (re-exported here; the
label table exports read it too, and exports never import this higher
layer). The pages count the same in SQL (``labeling.review.tallies``, a fixed
number of aggregate queries at any size); ``tests/test_label_counts_agree.py``
holds the two to each other on every answers file in ``fixtures/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from labeling.exports import frames
from labeling.exports.frames import resolved_claims_frame
from labeling.exports.structure import one_version
from labeling.models import Answer, CitationJudgment, Project, Run
from labeling.models.counted import Exclusion, run_exclusion
from labeling.scores.figure_cache import cached_figure, label_state, run_state_of
from scoring.citation_ids import (
    AbstentionMetrics,
    CitationIdMetrics,
    abstention_metrics,
    citation_id_metrics,
)
from scoring.claims import ClaimMetrics, claim_metrics
from scoring.figures import FigureInterval, RunFigures, intervals_dict, run_figures, run_intervals
from scoring.gold import GoldMetrics, gold_metrics
from scoring.intervals import DEFAULT_CONFIDENCE, check_confidence
from scoring.judgments import DEFAULT_RULE, JudgmentMetrics, citation_judgments
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.matching import DEFAULT_MATCH_METHOD, get_matcher
from scoring.ratio import Ratio
from scoring.summary import RATIO_COLUMNS, RunSummary


@dataclass
class RunScores:
    """Every metric of one run (SPEC §4), ready for the CLI, pages and exports.

    ``claims_frame`` is the run's claims (without their texts) with the resolved
    ``label`` column and ``disagreement`` (bool); ``gold`` is ``None`` when no question of the run
    has reference passages or expected sources.
    """

    run: Run
    reviewer: str | None
    claims: ClaimMetrics
    citation_ids: CitationIdMetrics
    abstention: AbstentionMetrics
    gold: GoldMetrics | None
    claims_frame: pd.DataFrame
    disagreements: int
    judgments: JudgmentMetrics | None = None
    confidence: float = DEFAULT_CONFIDENCE
    # The labels of unqualified reviewers the figures leave out (SPEC §4.4; empty: none).
    exclusion: Exclusion = field(default_factory=Exclusion)

    def figures(self) -> RunFigures:
        """Per-answer units and values of every figure of the run (``scoring.figures``)."""
        return run_figures(claims=self.claims, citation_ids=self.citation_ids, abstention=self.abstention,
                           judgments=self.judgments, gold=self.gold)

    def intervals(self) -> dict[str, FigureInterval]:
        """Every figure with its interval at ``confidence`` and its label budget (SPEC §4.5)."""
        return run_intervals(self.figures(), confidence=self.confidence)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``score --format json`` (``intervals``: one entry per
        figure, ``scoring.figures.FigureInterval.as_dict``)."""
        per_answer = self.per_answer_records()
        result: dict[str, Any] = {
            "run": self.run.name,
            "project": self.run.project.slug,
            "reviewer": self.reviewer,
            "answers": self.claims.answers,
            # Beside pending: how many cited claims are disputed (no verdict yet) and adjudicated by a lead.
            "claims": {**self.claims.to_dict(), "disputed": self.disagreements,
                       "adjudicated": int(self.claims_frame["adjudicated"].sum())},
            "disagreements": self.disagreements,
            "citation_ids": self.citation_ids.to_dict(),
            "abstention": self.abstention.to_dict(),
        }
        if self.judgments is not None:
            result["citation_judgments"] = self.judgments.to_dict()
        if self.gold is not None:
            gold = self.gold.to_dict()
            result["context"] = gold["context"]
            result["source"] = gold["source"]
        if self.exclusion:
            # SPEC §4.4: how many labels the run's figures leave out, and whose.
            result["excluded"] = {"reviewers": list(self.exclusion.names), "labels": self.exclusion.labels}
        result["intervals"] = intervals_dict(self.intervals())
        result["per_answer"] = per_answer
        return result


    def per_answer_records(self) -> list[dict[str, Any]]:
        """One dict per answer: the claim counts and ratios of
        ``ClaimMetrics.per_answer_records`` plus citation-id ``tp, fp, fn,
        precision, recall``, citation judgments ``judged_citations,
        precise_citations, judged_precision`` (SPEC §4.3b) and, with gold,
        ``context_*`` and ``source_*``."""
        ids = {r["answer_id"]: r for r in self.citation_ids.per_answer_records()}
        judged = ({r["answer_id"]: r for r in self.judgments.per_answer_records()}
                  if self.judgments is not None else {})
        gold = {r["answer_id"]: r for r in self.gold.per_answer_records()} if self.gold is not None else {}
        records = []
        for record in self.claims.per_answer_records():
            id_row = ids.get(record["answer_id"], {})
            merged = dict(record)
            merged.update({key: id_row.get(key) for key in ("tp", "fp", "fn", "precision", "recall")})
            if self.judgments is not None:
                judged_row = judged.get(record["answer_id"], {})
                merged.update({"judged_citations": judged_row.get("judged", 0),
                               "precise_citations": judged_row.get("precise", 0),
                               "judged_precision": judged_row.get("precision")})
            gold_row = gold.get(record["answer_id"])
            if gold_row is not None:
                merged.update({k: v for k, v in gold_row.items() if k.startswith(("context_", "source_"))})
            records.append(merged)
        return records


@one_version()
def run_scores(
    run: Run, *, reviewer: str | None = None, match_method: str = DEFAULT_MATCH_METHOD,
    match_threshold: float | None = None, question_ids: set[str] | None = None,
    citation_precision_rule: str = DEFAULT_RULE, with_gold: bool = True, confidence: float = DEFAULT_CONFIDENCE,
) -> RunScores:
    """Compute every metric of ``run`` (SPEC §4.1–§4.3).

    ``reviewer`` restricts labels to one reviewer's. ``match_method`` and
    ``match_threshold`` select the passage matcher for the gold metrics.
    ``question_ids`` limits the scores to the answers of those questions (run
    comparison and the CI gate use the questions both runs answered, SPEC §5).
    ``citation_precision_rule`` (``strict``, ``union``, ``lenient``) decides
    which judged citations are precise (SPEC §4.3b, ``scoring.judgments``).
    ``with_gold=False`` skips the passage/source metrics against gold
    references (``gold`` is ``None``): the project summary does not show them.
    ``confidence``: the level of the intervals (SPEC §4.5).
    Raises ValueError for an unknown match method or rule or a level outside
    (0, 1), ImportError when the method's optional extra is missing.
    """
    check_confidence(confidence)
    answers = frames.answers_frame(run)
    claims, disagreements = resolved_claims_frame(run, reviewer=reviewer, answers=answers, text=False)
    # The passages' texts only for the gold metrics (most of what a citations read reads).
    compare_gold = with_gold and bool(answers["has_references"].any() or answers["has_expected_sources"].any())
    citations = frames.citations_frame(run, text=compare_gold)
    gold_ids = frames.gold_ids_frame(run)
    if question_ids is not None:
        answers = answers[answers["question_id"].isin(question_ids)]
        kept = set(answers["answer_id"])
        claims = claims[claims["answer_id"].isin(kept)]
        citations = citations[citations["answer_id"].isin(kept)]
        gold_ids = gold_ids[gold_ids["answer_id"].isin(kept)]
        disagreements = int(claims["disagreement"].sum())
    claim_result = _claim_metrics(claims, answers)
    judgments = run_judgment_metrics(run, claims, citations, reviewer=reviewer, rule=citation_precision_rule)
    id_citations = citations[["answer_id", "passage_id", "fabricated"]]
    ids = citation_id_metrics(answers, id_citations, gold_ids)
    abstention = abstention_metrics(answers, id_citations)
    gold = None
    if compare_gold and (answers["has_references"].any() or answers["has_expected_sources"].any()):
        matcher = get_matcher(match_method, threshold=match_threshold)
        kept = set(answers["answer_id"])
        references = frames.references_frame(run)
        expected = frames.expected_sources_frame(run)
        gold = gold_metrics(
            answers, citations[["answer_id", "citation_id", "source", "text"]],
            references[references["answer_id"].isin(kept)], expected[expected["answer_id"].isin(kept)],
            matcher=matcher,
        )
    return RunScores(run=run, reviewer=reviewer, claims=claim_result, citation_ids=ids, abstention=abstention,
                     gold=gold, claims_frame=claims, disagreements=disagreements, judgments=judgments,
                     confidence=confidence,
                     exclusion=run_exclusion(run=run) if reviewer is None else Exclusion())


def _claim_metrics(claims: pd.DataFrame, answers: pd.DataFrame) -> ClaimMetrics:
    """Coverage, support and gap (SPEC §4.1) of ``resolved_claims_frame``'s claims over ``answers_frame``'s answers."""
    return claim_metrics(
        claims[["answer_id", "question_id", "claim_index", "n_citations", "label", "abstention", "factual"]],
        answers[["answer_id", "question_id"]],
    )


def run_judgment_metrics(run: Run, claims: pd.DataFrame, citations: pd.DataFrame, *, reviewer: str | None,
                         rule: str = DEFAULT_RULE) -> JudgmentMetrics:
    """Citation precision of ``run`` from its citation judgments (SPEC §4.3b).

    ``claims``: the frame of ``resolved_claims_frame`` (its label decides the
    union rule), ``citations``: ``frames.citations_frame`` (both possibly cut
    to some questions). Which judgments count follows the labels: people's
    (kinds human and external) and the run's promoted judge's, or only
    ``reviewer``'s; a citation whose
    reviewers differ is disputed (not judged). One query.
    """
    rows = frames.resolved_judgments_frame(run, citations, reviewer=reviewer)
    return citation_judgments(claims[["claim_id", "answer_id", "question_id", "label", "factual", "abstention"]],
                              rows, rule=rule)


@one_version()
def run_judgments(run: Run, *, reviewer: str | None = None, rule: str = DEFAULT_RULE) -> JudgmentMetrics | None:
    """Citation precision of ``run`` from its judgments (SPEC §4.3b), or ``None`` when
    no citation of the run is judged (one query then; else six more). ``reviewer``:
    only that reviewer's judgments and labels count (blind labeling)."""
    if not CitationJudgment.objects.filter(citation__claim__answer__run=run, is_current=True).exists():
        return None
    claims, _disagreements = resolved_claims_frame(run, reviewer=reviewer, text=False)
    return run_judgment_metrics(run, claims, frames.citations_frame(run, text=False), reviewer=reviewer, rule=rule)


def project_summary(project: Project, *, reviewer: str | None = None, rule: str = DEFAULT_RULE,
                    own_labels_runs: frozenset[int] = frozenset(), me: str | None = None,
                    confidence: float = DEFAULT_CONFIDENCE) -> list[RunSummary]:
    """Every run of ``project`` (creation order) with its pooled figures (``scoring.summary``)
    and their intervals at ``confidence`` (SPEC §4.5): the one row per run of the project
    summary page and ``score --all-runs``. Each row is computed once per label state of its
    run (``labeling.scores.figure_cache``): one query for the runs, then about ten a run
    whose state changed since its row was last computed (``run_scores`` without gold).
    ``reviewer``: only that reviewer's labels count; on the runs of ``own_labels_runs``
    (a blind reviewer's) only ``me``'s do. Raises ValueError for an unknown rule or level."""
    check_confidence(confidence)
    return [run_summary_row(run, reviewer=me if run.pk in own_labels_runs else reviewer, rule=rule,
                            confidence=confidence)
            for run in (Run.objects.filter(project=project).select_related("project").annotate(**label_state())
                        .order_by("created_at", "name"))]


def run_summary_row(run: Run, *, reviewer: str | None = None, rule: str = DEFAULT_RULE,
                    confidence: float = DEFAULT_CONFIDENCE) -> RunSummary:
    """The project summary's row of ``run`` (:func:`project_summary`; ``reviewer``: only that
    reviewer's labels count), computed once per label state of the run and shared with that page
    (``labeling.scores.figure_cache``). ``run`` annotated with ``label_state`` (as ``run_for``
    loads it): no query on a hit; else the state is read (one query). Raises ValueError for an
    unknown rule or level."""
    check_confidence(confidence)
    state = run_state_of(run) if hasattr(run, "label_state") else None
    return cached_figure("summary_row", run, lambda: _summary_row(run, reviewer, rule, confidence),
                         parts=(reviewer, rule, confidence), state=state)


@one_version()
def _summary_row(run: Run, counted: str | None, rule: str, confidence: float) -> RunSummary:
    """The row of ``run``: :func:`run_scores`' claim figures and judged citation precision with their
    pooled intervals, and nothing the row does not show (citation ids against gold, abstention,
    per-answer means: a third of a row's time). ``tests/test_figure_cache.py`` holds it to the row
    made from ``run_scores``."""
    answers = frames.answers_frame(run)
    claims, _disagreements = resolved_claims_frame(run, reviewer=counted, answers=answers, text=False)
    c = _claim_metrics(claims, answers)
    judged = run_judgment_metrics(run, claims, frames.citations_frame(run, text=False), reviewer=counted, rule=rule)
    intervals = run_intervals(run_figures(claims=c, judgments=judged), confidence=confidence, means=False)
    intervals["citation_precision"] = intervals.get("judged_precision")
    return RunSummary(
        run=run.name, answers=c.answers, claims=c.claims, pending=c.pending, coverage=c.coverage,
        support=c.support, supported_rate=c.supported_rate,
        citation_precision=judged.precision if judged is not None else Ratio(0, 0), gap=c.gap,
        intervals={name: intervals[name] for name in (*RATIO_COLUMNS, "gap") if intervals.get(name)},
    )


def run_has_gold(run: Run) -> bool:
    """Whether any question answered in ``run`` has gold ids, references or
    expected sources, or is marked unanswerable (one query)."""
    return Answer.objects.filter(run=run).filter(
        Q(question__gold_ids_given=True) | Q(question__gold_references_given=True)
        | Q(question__gold_sources_given=True) | Q(question__answerable=False)
    ).exists()


@dataclass(frozen=True)
class GoldRow:
    """One line of the run page's gold panel: a metric with its pooled
    fraction (``Ratio`` or ``None`` for F1, which has none) and value, and its
    per-answer mean (float or None) with the number of answers skipped; each
    with its interval where it has one (``scoring.figures``, SPEC §4.5)."""

    group: str
    metric: str
    fraction: Ratio | None
    value: float | None
    mean: float | None
    interval: FigureInterval | None = None
    mean_interval: FigureInterval | None = None


def gold_rows(scores: RunScores) -> list[GoldRow]:
    """The gold-based metrics of ``scores`` for display (SPEC §4.2, §4.3):
    citation ids vs gold ids when any question has gold ids, context and
    source precision/recall/F1 when any has references or expected sources,
    and abstention when any question is unanswerable."""
    rows: list[GoldRow] = []
    ids = scores.citation_ids
    iv = scores.intervals()

    def row(group: str, metric: str, fraction: Ratio | None, value: float | None, mean: float | None,
            key: str) -> GoldRow:
        return GoldRow(group, metric, fraction, value, mean, iv.get(key), iv.get(f"mean_{key}"))

    if ids.gold_answers:
        rows += [
            row("Cited ids vs gold ids", "precision", ids.precision, ids.precision.value, ids.mean_precision,
                "precision"),
            row("Cited ids vs gold ids", "recall", ids.recall, ids.recall.value, ids.mean_recall, "recall"),
        ]
    rows.append(row("Cited ids vs gold ids", "fabricated", ids.fabricated_rate, ids.fabricated_rate.value, None,
                    "fabricated_rate"))
    if scores.gold is not None:
        gold = scores.gold.to_dict()
        c, s = gold["context"], gold["source"]
        rows += [
            row("Passages (context)", "precision", Ratio(c["matched_citations"], c["citations"]),
                c["precision"], c["mean_precision"], "context_precision"),
            row("Passages (context)", "recall", Ratio(c["matched_references"], c["references"]),
                c["recall"], c["mean_recall"], "context_recall"),
            row("Passages (context)", "F1", None, c["f1"], c["mean_f1"], "context_f1"),
            row("Sources", "precision", Ratio(s["matched_cited_sources"], s["cited_sources"]),
                s["precision"], s["mean_precision"], "source_precision"),
            row("Sources", "recall", Ratio(s["matched_expected_sources"], s["expected_sources"]),
                s["recall"], s["mean_recall"], "source_recall"),
            row("Sources", "F1", None, s["f1"], s["mean_f1"], "source_f1"),
        ]
    if scores.abstention.unanswerable:
        rate = scores.abstention.rate
        rows.append(row("Unanswerable questions", "abstention", rate, rate.value, None, "abstention"))
    return rows
