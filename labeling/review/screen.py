"""What the labeling screen reads (STYLE §3): a run's answer list, and the review
context of one answer (its claims, citations, passages with the quoted spans
marked, history, gold and the claim shown).

Which claim is shown next is the queue's rule (``labeling.review.queue``), never
decided here; counts come from ``labeling.review.tallies``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Exists, OuterRef

from labeling.models import (
    Adjudication,
    Answer,
    Citation,
    CitationJudgment,
    Claim,
    GoldClaim,
    GoldReference,
    Label,
    LabelValue,
    Question,
    Reviewer,
    Run,
    SendBack,
)
from labeling.models.counted import runs_exclusions
from labeling.permissions import blind_for_reviewer
from labeling.review import queue
from labeling.review.highlight import Segment, answer_segments, passage_segments
from labeling.review.queue import unlabeled_claims
from labeling.review.rows import answer_claims as _answer_claims
from labeling.review.rows import columns, instance
from labeling.review.tallies import ClaimCounts, adjudicated_counts, answer_count_aggregates, counts_of_row
from scoring import judgments as judgments_module
from scoring.gold import answer_gold_matches
from scoring.intervals import Interval, clustered_ratio
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.matching import DEFAULT_MATCH_METHOD, get_matcher
from scoring.normalize import normalize_source
from scoring.ratio import Ratio

ANSWERS_PER_PAGE = 50


ANSWER_FILTERS = {
    "unlabeled": "cited claims you have not labeled",
    "unsupported": "a claim labeled UNSUPPORTED",
    "fabricated": "fabricated citations",
}








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
    own_only = blind_for_reviewer(run, reviewer)
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
        .annotate(**answer_count_aggregates(reviewer, own_only=own_only, exclusions=exclusions))
    )
    by_id = {answer.pk: answer for answer in rows}
    adjudicated = {} if own_only else adjudicated_counts(
        Adjudication.objects.filter(claim__answer_id__in=page_ids, claim__factual=True), "claim__answer_id",
        exclusions)
    return AnswerPage(
        page=page,
        rows=[AnswerRow(answer=by_id[pk], counts=counts_of_row(by_id[pk], adjudicated.get(pk))) for pk in page_ids],
        filter=answer_filter,
    )


def last_label(*, run: Run, reviewer: Reviewer) -> Label | None:
    """``reviewer``'s most recent current label in ``run``, with its claim (what ``u`` undoes)."""
    return (
        Label.objects.filter(reviewer=reviewer, is_current=True, claim__answer__run=run)
        .select_related("claim").order_by("-pk").first()
    )


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
    # Still needs a reviewer: fewer current human labels than the run's overlap (labeling.review.queue).
    open: bool = True
    # A lead sent the reviewer's label on this claim back for rework (SPEC §4.4), still open:
    # ``sent_back`` on every claim; ``send_back`` (comment, lead) loaded for the current one.
    sent_back: bool = False
    send_back: SendBack | None = None
    # Feedback mode (SPEC §4.4): the gold label and reason of a gold claim the reviewer
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
        queue's order (``labeling.review.queue``) decides which claim comes next."""
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


# Claim %s with its answer and question, when the answer is in run %s.
_CLAIM_IN_RUN_SQL = """
SELECT {claim_cols}, {answer_cols}, {question_cols}
FROM {claim} c JOIN {answer} a ON a.id = c.answer_id JOIN {question} q ON q.id = a.question_id
WHERE c.id = %s AND a.run_id = %s
"""


def claim_in_run(*, run: Run, claim_id: int) -> Claim | None:
    """Claim ``claim_id`` with its answer (its ``run`` set to ``run``) and question when it
    belongs to ``run`` (else ``None``: the URL names another run). One query, in SQL: every
    claim write (a label step) starts with it, and the ORM took longer to build it than
    the database to run it."""
    if not 0 < claim_id < 2 ** 63:  # no such id (SQLite refuses a number past its integers)
        return None
    claim, answer, question = columns(Claim, "c"), columns(Answer, "a"), columns(Question, "q")
    quote = connection.ops.quote_name
    sql = _CLAIM_IN_RUN_SQL.format(
        claim_cols=claim.select, answer_cols=answer.select, question_cols=question.select,
        claim=quote(Claim._meta.db_table), answer=quote(Answer._meta.db_table),
        question=quote(Question._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, [claim_id, run.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    found = instance(claim, row, 0)
    found.answer = instance(answer, row, claim.width)
    found.answer.question = instance(question, row, claim.width + answer.width)
    found.answer.run = run
    return found


def review_context(*, answer: Answer, reviewer: Reviewer, claim_id: int | None = None,
                   lease: bool = False, with_gold: bool = False) -> ReviewContext:
    """The review page of ``answer`` (with its run, project and question) for ``reviewer``
    (one query, more as listed below).

    Queries: one for the answer's claims (each marked when a lead sent the
    reviewer's label back, SPEC §4.4, and, with feedback on or ``with_gold`` (a
    lead's page), when it is a gold claim) with their citations (and passages)
    and every label on them (all reviewers, with their reviewer: the reviewer's
    current labels and the current claim's history), :func:`_answer_claims`; the
    current claim's send-back and gold label only when it has one
    (``ReviewContext.current_gold``: for ``with_gold``, or feedback once the
    reviewer labeled it, SPEC §4.4), one query each; the question's gold (ids, references, expected sources —
    only the parts it has, ``question_gold``); with citation judging on, two (the
    reviewer's judged precision, the current claim's judgments). On a run the reviewer labels blind the history
    holds their own labels only (its role is one more query when the run was not loaded
    with it). The current claim is ``claim_id`` when it is one
    of the answer's claims; else the first claim of the answer in the reviewer's
    queue, in the queue's order (``queue.first_claim_in_answer``, one query: the
    order has one home), else the first claim. With ``lease`` that first claim of
    the queue is reserved for the reviewer (``queue.lease_take``: the page hands it
    to them to label), or the next one no other reviewer took meanwhile.
    """
    feedback = answer.run.feedback
    # Which claims a lead sent back to this reviewer, and (feedback mode, or a lead's page) which
    # are gold: two subqueries of the claims, the rows read only for the current claim.
    claims = _answer_claims(answer, reviewer, gold=feedback or with_gold)
    overlap = answer.run.overlap
    blind = blind_for_reviewer(answer.run, reviewer)
    views = [
        ClaimView(claim=c, citations=c.cited, my_label=next(
            (label for label in c.all_labels if label.reviewer_id == reviewer.pk and label.is_current), None),
            open=queue.needs_reviewer(c.all_labels, overlap),
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
            # Feedback shows it once the reviewer labeled the gold claim (SPEC §4.4), never before.
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
