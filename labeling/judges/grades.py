"""Reads for grading a run's judges (SPEC §4.4; figures in ``scoring.judge_grading``).

A judge is a reviewer of kind ``model``. It is graded on the run's cited
claims against the label that counts for each claim from the humans alone
(SPEC §4.4): a lead's adjudication, else the label the claim's current human
reviewers (kinds ``human`` and ``external``) agree on; disputed and unlabeled
claims are left out. A promoted judge is still graded against the humans only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.db import connection
from django.db.models import Case, Count, Q, Sum, Value, When
from django.db.models.functions import Coalesce, Length

from labeling.db import id_chunks
from labeling.exports.frames import current_labels, resolved_claims_frame
from labeling.exports.structure import structure
from labeling.models import (
    COUNTED_KINDS,
    Adjudication,
    Answer,
    Claim,
    JudgeRun,
    JudgeRunStatus,
    Label,
    Reviewer,
    ReviewerKind,
    Run,
)
from scoring.judge_grading import CATEGORIES, JudgeGrade, grade_judge
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

REFERENCE = "humans"


def reference_labels(run: Run, *, labels: pd.DataFrame | None = None, justifications: bool = True) -> pd.DataFrame:
    """The humans' label of each cited factual claim of ``run`` that has one: columns
    ``claim_id``, ``label`` (SUPPORTED/UNSUPPORTED) and, with ``justifications``,
    ``justification`` (:func:`reference_justifications`). ``labels``: the run's
    ``frames.current_labels`` when the caller read them. ``resolved_claims_frame``'s
    queries (without texts), then :func:`reference_justifications`' two."""
    claims, _ = resolved_claims_frame(run, humans_only=True, text=False, labels=labels)
    # A claim marked not factual (SPEC §4.3b) is outside every count, the grade's too.
    resolved = claims[(claims["n_citations"] > 0) & claims["factual"] & claims["label"].isin(CATEGORIES)]
    frame = pd.DataFrame({
        "claim_id": resolved["claim_id"].astype("int64").to_numpy(),
        "label": resolved["label"].to_numpy(dtype=object),
    })
    if justifications:
        said = reference_justifications(run)
        frame["justification"] = [said.get(c, "") for c in frame["claim_id"].tolist()]
    return frame


def reference_justifications(run: Run, claim_ids: Iterable[int] | None = None) -> dict[int, str]:
    """The humans' justification of each claim of ``run`` (or of the claims ``claim_ids``
    only, claims of ``run``), by claim id: the current adjudication's reason, else the
    non-empty justifications of the labels that count (``counted_q()``: people, without the
    promoted judge) joined by " | " in reviewer name order; claims with neither are left
    out. Two queries (with ``claim_ids``, two a :func:`_chunks` of them)."""
    kinds = ", ".join(["%s"] * len(COUNTED_KINDS))
    reasons = dict(_rows("SELECT claim_id, reason FROM {adjudication} WHERE is_current AND {claims}", claim_ids,
                         run=run))
    said: dict[int, list[str]] = {}
    # counted_q() as SQL: the reviewer's kind is a person's.
    for claim_id, text in _rows(
            "SELECT l.claim_id, l.justification FROM {label} l JOIN {reviewer} r ON r.id = l.reviewer_id "
            f"WHERE l.is_current AND r.kind IN ({kinds}) AND l.justification <> '' AND {{claims}} "
            "ORDER BY l.claim_id, r.username", claim_ids, [str(kind) for kind in COUNTED_KINDS], run=run,
            column="l.claim_id"):
        said.setdefault(claim_id, []).append(text)
    out = {claim_id: " | ".join(texts) for claim_id, texts in said.items()}
    out.update({claim_id: reason for claim_id, reason in reasons.items() if reason})
    return out


def _rows(sql: str, claim_ids: Iterable[int] | None, params: list | None = None, *, run: Run | None = None,
          column: str = "claim_id") -> list[tuple]:
    """The rows of ``sql`` for the claims ``claim_ids`` (None: every claim of ``run``), a
    :func:`_chunks` a statement. ``sql`` names tables as ``{label}``, ``{claim}``, ``{answer}``,
    ``{adjudication}``, ``{reviewer}`` and puts ``{claims}`` where the claims are chosen (on
    ``column``), after its own ``params``. Plain statements: the ORM took about
    90 ms to build the lookups of 4.4k ids, longer than the database took to run them."""
    quote = connection.ops.quote_name
    tables = {name: quote(model._meta.db_table) for name, model in (
        ("label", Label), ("claim", Claim), ("answer", Answer), ("adjudication", Adjudication),
        ("reviewer", Reviewer))}
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        for ids in _chunks(claim_ids):
            if ids is None:
                chosen = (f"{column} IN (SELECT c.id FROM {tables['claim']} c "
                          f"JOIN {tables['answer']} a ON a.id = c.answer_id WHERE a.run_id = %s)")
                ids = [getattr(run, "pk", None)]
            elif connection.vendor == "postgresql":
                # One array parameter: planning a list of 4.4k parameters took longer than running it.
                chosen, ids = f"{column} IN (SELECT unnest(%s::bigint[]))", [ids]
            else:
                # By id alone: joined to the run's answers, SQLite walks every answer for each id (seconds).
                chosen = f"{column} IN ({', '.join(['%s'] * len(ids))})"
            cursor.execute(sql.format(claims=chosen, **tables), [*(params or []), *ids])
            rows += cursor.fetchall()
    return rows


def _chunks(claim_ids: Iterable[int] | None) -> Iterator[list[int] | None]:
    """``None`` (the whole run) as is; else ``labeling.db.id_chunks``."""
    if claim_ids is None:
        yield None
        return
    yield from id_chunks(claim_ids)


def judge_labels(run: Run, judge: Reviewer, *, judge_run: JudgeRun | None = None) -> pd.DataFrame:
    """The judge's labels on the cited claims of ``run``: ``claim_id``,
    ``label``, ``reason``. Without ``judge_run``, its current labels; with
    one, the latest non-stale label that judge run gave each claim. One query."""
    labels = Label.objects.filter(claim__answer__run=run, reviewer=judge, value__in=CATEGORIES)
    if judge_run is not None:  # the latest of each claim first
        labels = labels.filter(judge_run=judge_run, is_stale=False).order_by("claim_id", "-created_at", "-id")
    else:  # one current label a claim: sorted here, not by the database's sort of the label rows
        labels = labels.filter(is_current=True).order_by()
    frame = pd.DataFrame.from_records(list(labels.values_list("claim_id", "value", "justification")),
                                      columns=["claim_id", "label", "reason"])
    if judge_run is None:
        frame = frame.sort_values("claim_id", kind="stable")
    return frame.drop_duplicates("claim_id", keep="first").reset_index(drop=True)


def claim_texts(run: Run, claim_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """``claim_id``, ``claim`` (text) and ``cited_chars`` (characters of its cited
    texts: spans, else passages; a fabricated citation has none), by claim id, of every claim of
    ``run``, or of the claims ``claim_ids`` only (claims of ``run``: what a grade
    shows, its disagreements). The texts are read on every call (``claim_edit`` moves no claims
    version); the characters, summed by the database so no passage text is read
    (the texts of ``citations_frame``, whose ``text`` column they count), once per
    claims version (``labeling.exports.structure``). Two queries (the version, the
    texts; with ``claim_ids``, one a :func:`_chunks` of them, none for no
    claim), three when the characters are not cached."""
    from labeling.models import Citation

    wanted = None if claim_ids is None else list(claim_ids)
    if wanted == []:  # a grade without disagreements shows no text: nothing to read
        return pd.DataFrame({"claim_id": pd.Series(dtype="int64"), "claim": pd.Series(dtype=object),
                             "cited_chars": pd.Series(dtype="int64")})

    def read() -> dict[int, int]:
        each = Case(When(~Q(span=""), then=Length("span")), default=Coalesce(Length("passage__text"), Value(0)))
        return dict(Citation.objects.filter(claim__answer__run=run).values("claim_id")
                    .annotate(chars=Sum(each)).values_list("claim_id", "chars"))

    chars = structure("cited_chars", run, read)
    # Without Claim's default ordering: the frame is merged by claim id.
    if wanted is None:
        rows = list(Claim.objects.filter(answer__run=run).order_by().values_list("pk", "text"))
    else:
        rows = _rows("SELECT id, text FROM {claim} WHERE {claims}", wanted, column="id")
    # By claim id: the same order on every database (the statement sorts nothing).
    frame = pd.DataFrame.from_records(rows, columns=["claim_id", "claim"]).sort_values("claim_id", kind="stable")
    frame = frame.reset_index(drop=True)
    frame["cited_chars"] = frame["claim_id"].map(chars).fillna(0).astype("int64")
    return frame


def texts_of(run: Run) -> Callable[[list[int]], pd.DataFrame]:
    """The ``claims`` argument of ``scoring.judge_grading.grade_judge`` for ``run``:
    reads the texts of the claims a grade shows (its disagreements) only, when it
    shows them (:func:`claim_texts`)."""
    return lambda claim_ids: claim_texts(run, claim_ids)


def run_judge_grade(*, run: Run, judge: Reviewer, reference: pd.DataFrame | None = None,
                    claims: pd.DataFrame | Callable[[list[int]], pd.DataFrame] | None = None) -> JudgeGrade:
    """``judge`` graded against the humans on ``run`` (module docstring);
    ``reference`` (:func:`reference_labels`) and ``claims`` (:func:`claim_texts` or
    :func:`texts_of`) may be passed when already read.

    The run's current labels are read once, for the humans' labels and the judge's;
    the words a grade shows (the claims' texts, the judge's reasons, the humans'
    justifications) are read for its disagreements only, after it is graded.
    ``resolved_claims_frame``'s queries, then, when claims differ, the texts and the
    words of those claims (:func:`texts_of`, :func:`reference_justifications`)."""
    labels = current_labels(run)
    if reference is None:
        reference = reference_labels(run, labels=labels, justifications=False)
    mine = labels[(labels["reviewer"] == judge.username) & labels["label"].isin(CATEGORIES)]
    judged = pd.DataFrame({"claim_id": mine["claim_id"].to_numpy(dtype="int64"),
                           "label": mine["label"].to_numpy(dtype=object)})
    texts = claims if claims is not None else texts_of(run)
    justified = "justification" in reference.columns

    def shown(claim_ids: list[int]) -> pd.DataFrame:
        frame = (texts(claim_ids) if callable(texts) else texts[texts["claim_id"].isin(claim_ids)]).copy()
        reasons = _current_reasons(judge, claim_ids)
        frame["reason"] = [reasons.get(c, "") for c in frame["claim_id"].tolist()]
        if not justified:
            said = reference_justifications(run, claim_ids)
            frame["justification"] = [said.get(c, "") for c in frame["claim_id"].tolist()]
        return frame

    return grade_judge(reference, judged, claims=shown, judge_name=judge.username, reference_name=REFERENCE)


def _current_reasons(judge: Reviewer, claim_ids: list[int]) -> dict[int, str]:
    """The justification of ``judge``'s current label on each of ``claim_ids``."""
    return dict(_rows("SELECT claim_id, justification FROM {label} WHERE reviewer_id = %s AND is_current "
                      "AND {claims}", claim_ids, [judge.pk]))


def judge_self_agreement(*, run: Run, judge: Reviewer, claims: pd.DataFrame | None = None) -> JudgeGrade | None:
    """The judge's two latest finished judge runs on ``run`` that labeled claims,
    the later graded against the earlier on the claims both labeled (same
    figures as a grade: kappa with its interval, confusion, flips); ``None``
    when the judge has not run twice. Three queries (the passes, each pass's
    labels), ``claim_texts``' two or three more without ``claims``; one with fewer
    than two passes."""
    passes = list(JudgeRun.objects.filter(run=run, reviewer=judge, status=JudgeRunStatus.DONE)
                  .filter(Q(labels__isnull=False)).annotate(n=Count("labels")).filter(n__gt=0)
                  .order_by("-created_at", "-id")[:2])
    if len(passes) < 2:
        return None
    later, earlier = passes
    return grade_judge(judge_labels(run, judge, judge_run=earlier).rename(columns={"reason": "justification"}),
                       judge_labels(run, judge, judge_run=later),
                       claims=claims if claims is not None else texts_of(run),
                       judge_name=f"judge run {later.pk}", reference_name=f"judge run {earlier.pk}")


@dataclass(frozen=True)
class JudgeRow:
    """A judge of a run for the run page: its reviewer, current labels on the run, latest judge run (or None)."""

    reviewer: Reviewer
    labels: int
    latest: JudgeRun | None


def run_judges(*, run: Run) -> list[JudgeRow]:
    """The judges of ``run`` (reviewers of kind ``model`` with a current label on
    it or a judge run), by name. Two queries (judge runs, label counts), one more
    when a judge has labels but no judge run (imported labels)."""
    latest: dict[int, JudgeRun] = {}
    for judge_run in JudgeRun.objects.filter(run=run).select_related("reviewer").order_by("created_at", "id"):
        latest[judge_run.reviewer_id] = judge_run
    counts = dict(Label.objects.filter(claim__answer__run=run, is_current=True, reviewer__kind=ReviewerKind.MODEL)
                  .order_by().values("reviewer").annotate(n=Count("id")).values_list("reviewer", "n"))
    reviewers = {j.reviewer_id: j.reviewer for j in latest.values()}
    missing = set(counts) - set(reviewers)
    if missing:
        reviewers.update({r.pk: r for r in Reviewer.objects.filter(pk__in=missing)})
    return sorted((JudgeRow(reviewer, counts.get(pk, 0), latest.get(pk)) for pk, reviewer in reviewers.items()),
                  key=lambda row: row.reviewer.username)
