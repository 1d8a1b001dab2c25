"""Frames of one run, read from the ORM in a constant number of queries, in
the shapes ``scoring`` documents (SPEC §4).

Every function here returns plain pandas DataFrames; none of them computes a
metric. :func:`resolved_claims_frame` is the one place that decides which
label counts for a claim (SPEC §3): a claim without citations is UNCITED; a
cited claim takes the label its current reviewers agree on (or only
``reviewer``'s when given); disagreement leaves it pending. It lives here, in
the lowest layer, so the label table exports, the metrics and the run
comparison all read it without an export importing a higher module.

Column names follow the contracts in ``scoring.claims``, ``scoring.labels``,
``scoring.citation_ids`` and ``scoring.gold``.

What only an import, a split or a merge changes (which claims and answers the
run has, their order and citations, the cited passages) is read once per
``Run.claims_version`` and kept in Django's cache (:func:`structure`); what
other writes change (a claim's text and factual mark, a question's gold and
answerability, labels, judgments) is read on every call and joined; the labels
come from the run's label table, kept up to date claim by claim
(:mod:`labeling.exports.current_labels`). A label write therefore re-reads the
labels of the claim it wrote, and the judgments.
"""

from __future__ import annotations

from django.db.models import Count, Q

from labeling.exports.current_labels import current_labels
from labeling.exports.structure import one_version, structure
from labeling.models import (
    Adjudication,
    Answer,
    Citation,
    CitationJudgment,
    Claim,
    ExpectedSource,
    GoldPassageId,
    GoldReference,
    Label,
    LabelValue,
    Question,
    Run,
)
from labeling.models.counted import run_exclusion
from scoring.judgments import resolve_judgments
from scoring.labels import apply_adjudications, counted_labels, resolve_labels
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

# Who adjudicated a claim, when and why (resolved_claims_frame's columns beside the label).
ADJUDICATION_DETAILS = ("adjudicated_by", "adjudicated_at", "adjudication_reason")


def answers_frame(run: Run) -> pd.DataFrame:
    """One row per answer of ``run``, by question id.

    Columns: ``answer_id`` (int), ``question_id`` (str), ``answerable``
    (True/False/None), ``has_gold`` (gold supporting ids given),
    ``has_references``, ``has_expected_sources`` (bool), ``cited`` (int:
    citations over all its claims). Two queries (the claims version and the
    questions with gold or an answerability, a project-wide write that moves no
    claims version), three when the answers are not cached (:func:`structure`).
    """
    frame = _answer_rows(run)
    flags = list(Question.objects.filter(project_id=run.project_id).filter(
        Q(answerable__isnull=False) | Q(gold_ids_given=True) | Q(gold_references_given=True)
        | Q(gold_sources_given=True)).values_list(
        "pk", "answerable", "gold_ids_given", "gold_references_given", "gold_sources_given"))
    by_question = {row[0]: row[1:] for row in flags}
    given = [by_question.get(pk, (None, False, False, False)) for pk in frame["question_pk"].tolist()]
    frame = frame.drop(columns=["question_pk"])
    for position, column in enumerate(("answerable", "has_gold", "has_references", "has_expected_sources")):
        frame.insert(2 + position, column, pd.Series([row[position] for row in given], index=frame.index,
                                                     dtype=object if column == "answerable" else bool))
    return frame


def _answer_rows(run: Run) -> pd.DataFrame:
    """``answer_id``, ``question_id``, ``question_pk`` and ``cited`` of each answer of
    ``run`` by question id: what an import alone changes, read once per claims version."""
    def read() -> pd.DataFrame:
        rows = (Answer.objects.filter(run=run).annotate(n_citations=Count("claims__citations"))
                .values_list("id", "question__question_id", "question_id", "n_citations")
                .order_by("question__question_id"))
        return pd.DataFrame.from_records(list(rows), columns=["answer_id", "question_id", "question_pk", "cited"])
    return structure("answers", run, read)


def labels_frame(run: Run, *, details: bool = True) -> pd.DataFrame:
    """Current (non-stale) labels on the claims of ``run``.

    Columns: ``claim_id`` (int), ``reviewer`` (username), ``label`` (value),
    ``kind`` (the reviewer's kind: ``human``, ``external`` or ``model``) and,
    with ``details``, ``justification``, ``labeled_at`` (aware datetime) and
    ``guidelines_version`` (the project's guidelines version the label was
    made under, or None), each claim's labels newest first. ``details=False``
    is what the figures need (:func:`current_labels`: no text, no timestamp
    converted row by row, by claim only): two queries; with ``details``, one.
    """
    if not details:
        return current_labels(run)
    columns = ["claim_id", "reviewer", "label", "kind", "justification", "labeled_at", "guidelines_version"]
    fields = ["claim_id", "reviewer__username", "value", "reviewer__kind", "justification", "created_at",
              "guidelines_version"]
    rows = Label.objects.filter(claim__answer__run=run, is_current=True).values_list(*fields)
    return pd.DataFrame.from_records(list(rows), columns=columns)


@one_version()
def claims_frame(run: Run, *, answers: pd.DataFrame | None = None, text: bool = True) -> pd.DataFrame:
    """One row per claim of ``run`` without labels, by question id and index.

    Columns: ``claim_id``, ``answer_id`` (int), ``question_id`` (str),
    ``claim_index`` (int, 1-based), ``claim`` (text; left out with ``text=False``,
    which the figures need not read), ``n_citations`` (int),
    ``factual`` (bool: False for a claim marked "not a factual claim", SPEC
    §4.3b), ``abstention`` (bool: the answer is to an unanswerable question and
    cites nothing, SPEC §4.2). Queries: the claims version (none inside
    ``structure.one_version`` once read), the texts and factual marks (only the
    claims not factual without ``text``), the claims when not cached
    (:func:`structure`) and :func:`answers_frame`'s unless the caller passes it
    as ``answers``.
    """
    frame = _claim_rows(run)
    # A claim's text (claim_edit) and factual mark move no claims version: read now.
    if text:
        texts, factual = {}, {}
        for pk, claim_text, is_factual in (Claim.objects.filter(answer__run=run).order_by()
                                           .values_list("pk", "text", "factual")):
            texts[pk], factual[pk] = claim_text, is_factual
        frame.insert(4, "claim", frame["claim_id"].map(texts))
        frame["factual"] = frame["claim_id"].map(factual).astype(bool)
    else:  # the few claims marked not factual: an index probe a claim, no text read
        not_factual = set(Claim.objects.filter(answer__run=run, factual=False).order_by()
                          .values_list("pk", flat=True))
        frame["factual"] = ~frame["claim_id"].isin(not_factual)
    if answers is None:
        answers = answers_frame(run)
    abstained = answers.loc[(answers["answerable"] == False) & (answers["cited"] == 0), "answer_id"]  # noqa: E712
    frame["abstention"] = frame["answer_id"].isin(set(abstained))
    return frame


def _claim_rows(run: Run) -> pd.DataFrame:
    """``claim_id``, ``answer_id``, ``question_id``, ``claim_index`` and ``n_citations`` of
    each claim of ``run`` by question id and index: what an import, a split or a merge
    alone changes, read once per claims version (the Count over every claim's citations
    is most of a claims read)."""
    def read() -> pd.DataFrame:
        rows = (Claim.objects.filter(answer__run=run).annotate(n_citations=Count("citations"))
                .values_list("id", "answer_id", "answer__question__question_id", "index", "n_citations")
                .order_by("answer__question__question_id", "index"))
        return pd.DataFrame.from_records(
            list(rows), columns=["claim_id", "answer_id", "question_id", "claim_index", "n_citations"])
    return structure("claims", run, read)


def citations_frame(run: Run, *, text: bool = True) -> pd.DataFrame:
    """One row per citation of any claim of ``run``.

    Columns: ``citation_id`` (int), ``claim_id``, ``answer_id``,
    ``passage_id`` (str as cited), ``fabricated`` (bool), ``source`` (the
    passage's source, "" when fabricated), and with ``text`` (what the gold
    metrics compare) ``text`` (the span if given, else the passage text; ""
    when fabricated): the passages' texts are most of what this reads. One query;
    without ``text``, what only an import, a split or a merge changes, read once per
    claims version (:func:`structure`: one query, two when not cached).
    """
    columns = ["citation_id", "claim_id", "answer_id", "passage_id", "fabricated", "source"]
    fields = ["id", "claim_id", "claim__answer_id", "cited_id", "fabricated", "passage__source"]
    if not text:
        def read() -> pd.DataFrame:
            frame = pd.DataFrame.from_records(
                list(Citation.objects.filter(claim__answer__run=run).values_list(*fields)), columns=columns)
            frame["source"] = frame["source"].fillna("")
            return frame
        return structure("citations", run, read)
    rows = Citation.objects.filter(claim__answer__run=run).values_list(*fields, "span", "passage__text")
    frame = pd.DataFrame.from_records(list(rows), columns=[*columns, "span", "passage_text"])
    frame["source"] = frame["source"].fillna("")
    frame["text"] = frame["span"].where(frame["span"].fillna("") != "", frame["passage_text"].fillna(""))
    return frame.drop(columns=["span", "passage_text"])


def judgments_frame(run: Run, *, details: bool = True) -> pd.DataFrame:
    """Current (non-stale) citation judgments on the claims of ``run`` (SPEC §4.3b).

    Columns: ``citation_id``, ``claim_id`` (int), ``reviewer`` (username),
    ``judgment`` (FULL/PARTIAL/NONE/UNJUDGEABLE), ``kind`` (the reviewer's kind)
    and, with ``details``, ``evidence`` (str) and ``judged_at`` (aware datetime):
    ``details=False`` is what the figures need (no text, no timestamp converted
    row by row). One query.
    """
    columns = ["citation_id", "claim_id", "reviewer", "judgment", "kind"]
    fields = ["citation_id", "citation__claim_id", "reviewer__username", "judgment", "reviewer__kind"]
    if details:
        columns += ["evidence", "judged_at"]
        fields += ["evidence", "created_at"]
    # Without the model's default ordering: nothing here reads the judgments in order.
    rows = (CitationJudgment.objects.filter(citation__claim__answer__run=run, is_current=True).order_by()
            .values_list(*fields))
    return pd.DataFrame.from_records(list(rows), columns=columns)


def resolved_judgments_frame(run: Run, citations: pd.DataFrame, *, reviewer: str | None = None) -> pd.DataFrame:
    """One row per citation of ``citations`` (``citations_frame``, possibly cut) with the
    judgment that counts (SPEC §4.3b, read like labels §4.4): the current judgments of the
    reviewers whose labels count (people and the run's promoted judge; another model's
    never count, ``scoring.labels.counted_labels``), or only ``reviewer``'s; a citation
    whose reviewers differ is ``disputed`` with a null judgment. Columns ``citation_id,
    claim_id, judgment, disputed``. One query (two with a promoted judge not yet read)."""
    judged = judgments_frame(run, details=False)
    if reviewer is None:
        judged = counted_labels(judged, promoted=run.promoted_judge.username if run.promoted_judge_id else None)
    resolved = resolve_judgments(judged[["citation_id", "reviewer", "judgment"]], reviewer=reviewer)
    rows = citations[["citation_id", "claim_id"]].copy()
    if resolved.empty:  # nothing judged (an empty frame's dtypes would not merge)
        rows["judgment"], rows["disputed"] = None, False
        return rows
    rows = rows.merge(resolved, on="citation_id", how="left")
    rows["judgment"] = rows["judgment"].astype(object).where(rows["judgment"].notna(), None)
    rows["disputed"] = rows["disputed"].astype("boolean").fillna(False).astype(bool)
    return rows


def gold_ids_frame(run: Run) -> pd.DataFrame:
    """Gold supporting ids of each answer's question. Columns ``answer_id``, ``passage_id``.
    Two queries (the project's gold ids, a project-wide write that moves no claims
    version, and the claims version), three when the answers are not cached."""
    rows = GoldPassageId.objects.filter(question__project_id=run.project_id).values_list("question_id", "passage_id")
    gold = pd.DataFrame.from_records(list(rows), columns=["question_pk", "passage_id"])
    answers = _answer_rows(run)[["answer_id", "question_pk"]]
    if gold.empty or answers.empty:  # an empty frame's dtypes would not merge
        return pd.DataFrame({"answer_id": pd.Series(dtype="int64"), "passage_id": pd.Series(dtype=object)})
    return answers.merge(gold, on="question_pk")[["answer_id", "passage_id"]].reset_index(drop=True)


def references_frame(run: Run) -> pd.DataFrame:
    """Gold reference passages per answer. Columns ``answer_id``, ``source``, ``text``."""
    rows = GoldReference.objects.filter(question__answers__run=run).values_list(
        "question__answers__id", "source", "text"
    )
    return pd.DataFrame.from_records(list(rows), columns=["answer_id", "source", "text"])


def expected_sources_frame(run: Run) -> pd.DataFrame:
    """Expected sources per answer. Columns ``answer_id``, ``source``."""
    rows = ExpectedSource.objects.filter(question__answers__run=run).values_list("question__answers__id", "source")
    return pd.DataFrame.from_records(list(rows), columns=["answer_id", "source"])


@one_version()
def resolved_claims_frame(run: Run, *, reviewer: str | None = None, humans_only: bool = False,
                          labels: pd.DataFrame | None = None, answers: pd.DataFrame | None = None,
                          text: bool = True) -> tuple[pd.DataFrame, int]:
    """Claims of ``run`` with the label that counts (SPEC §4.4).

    Returns ``(frame, disagreements)``: the claims frame of
    :func:`claims_frame` plus ``label`` (value or None = pending),
    ``disagreement`` (bool), ``adjudicated`` (bool) and the current
    adjudication's ``adjudicated_by`` (the lead's username),
    ``adjudicated_at`` (aware datetime) and ``adjudication_reason`` (None
    where the claim has none), and the number of cited
    claims whose current human reviewers disagree and no lead adjudicated (an
    automated labeler's labels never count, ``scoring.labels.counted_labels``;
    with ``reviewer`` that reviewer's labels count, whatever its kind; a judge a
    lead promoted for the run, ``Run.promoted_judge``, counts as a human
    unless ``humans_only``, as when the judge is graded; the labels of reviewers
    who do not qualify never count when the run leaves them out,
    ``Run.exclude_unqualified``, SPEC §4.4). A lead's
    current adjudication is the claim's label (``scoring.labels.apply_adjudications``);
    with ``reviewer`` (one reviewer's labels) adjudications are left out.
    ``labels``: the run's :func:`labels_frame`, ``answers`` its :func:`answers_frame`,
    when the caller already read them; ``text=False`` leaves the claims' texts out
    (:func:`claims_frame`).
    Queries: :func:`claims_frame`'s, the labels (none when given) and the
    adjudications (none with ``reviewer``); one more for the
    name of a promoted judge not loaded with the run, and ``run_exclusion``'s when
    the run leaves labels out.
    """
    claims = claims_frame(run, answers=answers, text=text)
    if labels is None:
        labels = labels_frame(run, details=False)
    if reviewer is None:
        # SPEC §4.4: the claim's label is the humans' (and the promoted judge's); a model is only
        # graded against it; a lead may leave the labels of unqualified reviewers out of the figures.
        # The pandas form of labeling.models.counted.run_counted_q.
        promoted = None if humans_only or run.promoted_judge_id is None else run.promoted_judge.username
        excluded = () if humans_only else run_exclusion(run=run).names
        labels = counted_labels(labels, promoted=promoted, excluded=excluded)
    resolved = resolve_labels(labels[["claim_id", "reviewer", "label"]], reviewer=reviewer)
    adjudications = pd.DataFrame(
        list(Adjudication.objects.filter(claim__answer__run=run, is_current=True).order_by().values_list(
            "claim_id", "value", "lead__username", "created_at", "reason"))
        if reviewer is None else [], columns=["claim_id", "label", *ADJUDICATION_DETAILS])
    resolved = apply_adjudications(resolved, adjudications[["claim_id", "label"]])
    merged = claims.merge(resolved[["claim_id", "label", "disagreement", "adjudicated"]], on="claim_id", how="left")
    merged = merged.merge(adjudications[["claim_id", *ADJUDICATION_DETAILS]], on="claim_id", how="left")
    for column in ADJUDICATION_DETAILS:
        merged[column] = merged[column].astype(object).where(merged[column].notna(), None)
    merged["disagreement"] = merged["disagreement"].fillna(False).astype(bool)
    merged["adjudicated"] = merged["adjudicated"].fillna(False).astype(bool)
    uncited = merged["n_citations"] == 0
    labels_col = merged["label"].astype(object).where(merged["label"].notna(), None)
    # SPEC §3: a claim without citations is UNCITED, whoever labeled it.
    labels_col[uncited] = LabelValue.UNCITED.value
    merged["label"] = labels_col
    merged.loc[uncited, "disagreement"] = False
    merged.loc[uncited, "adjudicated"] = False
    # SPEC §4.3b: a claim marked not factual leaves every count, its reviewers' dispute too.
    merged.loc[~merged["factual"], "disagreement"] = False
    return merged, int(merged["disagreement"].sum())
