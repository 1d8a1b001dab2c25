"""The label table of a run (SPEC §2, §6): ORM → one DataFrame row per claim.

Columns, in export order (``LABEL_TABLE_COLUMNS``):

==============  ==========================================================
run             run name (str)
question_id     str, stable across runs
answer_id       int, the answer's database id
claim_index     int, 1-based position of the claim in its answer
claim           claim text (str)
citations       cited passage ids as the answer cites them, in citation
                order, joined with ``", "`` ("" = the claim cites nothing)
cited_span      the quoted spans, one line ``[id] span`` per citation that
                has one ("" when none)
passage         text of each cited passage, ``[id] text`` blocks separated
                by a blank line; a fabricated id reads ``[id] (not among the
                passages sent with this answer)``
label           SUPPORTED / UNSUPPORTED / UNCITED, or ``None`` = pending
justification   str ("" when none; "" on an adjudicated row, whose reason
                is ``adjudication_reason``)
reviewer        the reviewer(s) whose label the row shows, ``", "``-joined
                usernames in name order ("" when none, and on an
                adjudicated row: the label is the lead's, not theirs)
labeled_at      latest ``created_at`` of those labels, ISO 8601 UTC to the
                second (``"2025-01-31T09:15:00Z"``), or ``None``
status          ``labeled`` (cited, label agreed), ``adjudicated`` (cited,
                the label is a lead's adjudication, SPEC §4.4), ``pending``
                (cited, no label yet), ``disagreement`` (cited, the counted
                reviewers disagree: label ``None``), ``uncited`` (no citation: UNCITED
                automatically, SPEC §3), ``abstention`` (claim of an answer
                that abstains, SPEC §4.2: not scored), ``non_factual``
                (marked not a factual claim, SPEC §4.3b: not scored)
claim_id        int, the claim's database id (round-trip key)
claim_revision  int, the claim's revision when the table was read (an
                import refuses rows whose claim changed since)
factual         bool: False for a claim marked "not a factual claim"
                (SPEC §4.3b; its status is ``non_factual``)
judgments       the citations' judgments (SPEC §4.3b), one line ``[id]
                JUDGMENT`` per judged citation in citation order (FULL,
                PARTIAL, NONE, UNJUDGEABLE): the row's reviewer's, or the
                value every current reviewer whose labels count gives (a
                disputed citation is left out); "" when none
evidence        the evidence of those judgments, one line ``[id] words``
                per judgment that has some ("" when none)
adjudicated_by  the lead whose current adjudication is the row's label
                (SPEC §4.4; "" when none, and always "" in one reviewer's
                table, which leaves adjudications out)
adjudicated_at  when that adjudication was recorded, as ``labeled_at``, or
                ``None``
adjudication_reason  the lead's reason ("" when none)
guidelines_     the number of the project's guidelines version the row's
version         label(s) were made under (SPEC §4.4), ``", "``-joined
                when its reviewers labeled under different versions, in
                order ("" when none: no label, or made before the project
                had guidelines, or from a file)
in_sample       bool: the claim's answer is in the run's probability sample
                (SPEC §4.6); ``None`` in a saved version (versions do not
                record the sample: its draws are in the audit log)
==============  ==========================================================

Besides those, the frame has ``reviewer_labels``: every current label on the
claim, one per reviewer, whatever the row shows — a list of objects
``{"reviewer", "label", "justification", "labeled_at"}`` sorted by reviewer
(``[]`` when none). Versions store it so a diff can show one reviewer's
change that the agreed label hides (two reviewers who disagree show the same
pending row before and after either of them relabels); the file exports
(XLSX, CSV, JSONL) leave it out.

Which label a row shows: the label that counts for scoring, as decided by
:func:`labeling.exports.frames.resolved_claims_frame` — the value every current
reviewer agrees on (pending when they disagree), UNCITED for a claim without
citations — or, with ``reviewer=NAME``, that one reviewer's current label.
``justification`` is the counted reviewer's, or, when several reviewers
agree and more than one wrote one, ``"name: text"`` paragraphs in name order.
A claim a lead adjudicated shows the adjudicated label with
``adjudicated_by``, ``adjudicated_at`` and ``adjudication_reason``, and no
reviewer, time or justification: a reviewer who happened to agree did not
decide it (their labels stay in ``reviewer_labels``).

The canonical serialization of a table (what a label table version stores and
hashes) is :func:`canonical_bytes`: UTF-8 JSON Lines of ``CANONICAL_COLUMNS``
(every column but ``passage``, which is answer content fixed at import, and
``in_sample``, neither being labeling state, plus ``reviewer_labels``), one
object per row, keys sorted, separators ``,`` and ``:`` without spaces,
non-ASCII kept as is, rows sorted by ``question_id``, ``claim_index``,
``claim_id``, every line ending in ``\\n``. No value in it depends on when it
is written except ``labeled_at``, so two snapshots of an unchanged table have
the same SHA-256. Versions written before ``reviewer_labels`` existed read
back with ``reviewer_labels`` ``None``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from labeling.db import consistent_read
from labeling.exports import frames
from labeling.models import Citation, CitationJudgment, Claim, Passage, Run, SampleMember
from labeling.models.counted import counted_q
from scoring.claims import ClaimMetrics, claim_metrics, to_native
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

LABEL_TABLE_COLUMNS = (
    "run", "question_id", "answer_id", "claim_index", "claim", "citations", "cited_span", "passage",
    "label", "justification", "reviewer", "labeled_at", "status", "claim_id", "claim_revision",
    "factual", "judgments", "evidence", "adjudicated_by", "adjudicated_at", "adjudication_reason",
    "guidelines_version", "in_sample",
)
JUDGMENT_COLUMNS = frozenset({"factual", "judgments", "evidence"})
ADJUDICATION_COLUMNS = frozenset({"adjudicated_by", "adjudicated_at", "adjudication_reason"})
GUIDELINES_COLUMN = "guidelines_version"
REVIEWER_LABELS = "reviewer_labels"
# The sample is not labeling state: drawing one leaves the table's SHA-256 as it was.
CANONICAL_COLUMNS = (*(column for column in LABEL_TABLE_COLUMNS if column not in ("passage", "in_sample")),
                     REVIEWER_LABELS)
# The keys of the first versions: later ones added reviewer_labels, the judgments (SPEC §4.3b), the
# adjudications (SPEC §7), then the guidelines version (SPEC §4.4).
_EARLIEST_CANONICAL_COLUMNS = (frozenset(CANONICAL_COLUMNS) - {REVIEWER_LABELS, GUIDELINES_COLUMN} - JUDGMENT_COLUMNS
                               - ADJUDICATION_COLUMNS)
INT_COLUMNS = ("answer_id", "claim_index", "claim_id", "claim_revision")
CITATION_SEPARATOR = ", "
FABRICATED_PASSAGE = "(not among the passages sent with this answer)"

STATUS_LABELED = "labeled"
STATUS_ADJUDICATED = "adjudicated"
STATUS_PENDING = "pending"
STATUS_DISAGREEMENT = "disagreement"
STATUS_UNCITED = "uncited"
STATUS_ABSTENTION = "abstention"
STATUS_NON_FACTUAL = "non_factual"


def format_labeled_at(value: datetime | None) -> str | None:
    """ISO 8601 in UTC to the second with a ``Z``: ``"2025-01-31T09:15:00Z"``."""
    if value is None or value is pd.NaT:
        return None
    if value.utcoffset():
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def split_citations(value: str) -> list[str]:
    """The ids of a ``citations`` cell: ``"1, 3"`` → ``["1", "3"]``, ``""`` → ``[]``."""
    return [item.strip() for item in value.split(",") if item.strip()] if value else []


def label_table_frame(run: Run, *, reviewer: str | None = None, with_passages: bool = True) -> pd.DataFrame:
    """The label table of ``run`` as it stands now (module docstring for columns).

    ``reviewer`` shows that reviewer's labels instead of the agreed ones;
    ``with_passages=False`` leaves the ``passage`` column empty and
    ``in_sample`` ``None``, skipping their reads (snapshots store neither). Rows are sorted by
    ``question_id``, ``claim_index``. Text columns are object dtype, ""
    when empty; ``label``/``labeled_at`` are ``None`` when absent.

    Queries: the labels, read once + resolved_claims_frame's (one fewer with
    ``reviewer``, which leaves adjudications out) + claim revisions + citations +
    judgments (+ passages and sampled answers), whatever the number of claims; all as of one moment
    (``labeling.db.consistent_read``), so a split or merge committed
    meanwhile is in every part or in none.
    """
    with consistent_read():
        return _label_table_frame(run, reviewer=reviewer, with_passages=with_passages)


def _label_table_frame(run: Run, *, reviewer: str | None, with_passages: bool) -> pd.DataFrame:
    labels = frames.labels_frame(run)
    claims, _disagreements = frames.resolved_claims_frame(run, reviewer=reviewer, labels=labels)
    revisions = dict(Claim.objects.filter(answer__run=run).values_list("id", "revision"))
    cited: dict[int, list[tuple[str, str, bool, int | None]]] = defaultdict(list)
    for claim_id, cited_id, span, fabricated, passage_pk in (
        Citation.objects.filter(claim__answer__run=run)
        .order_by("claim_id", "position")
        .values_list("claim_id", "cited_id", "span", "fabricated", "passage_id")
    ):
        cited[claim_id].append((cited_id, span, fabricated, passage_pk))
    judged = _judgment_cells(run, reviewer=reviewer)
    sampled = (set(SampleMember.objects.filter(sample__run=run).values_list("answer_id", flat=True))
               if with_passages else None)
    passage_text: dict[int, str] = {}
    if with_passages:
        passage_text = dict(Passage.objects.filter(answer__run=run).values_list("id", "text"))

    # ISO strings in UTC sort like the times they stand for: max() works on them.
    times = [format_labeled_at(value) for value in labels["labeled_at"].dt.to_pydatetime()] if len(labels) else []
    every_label: dict[int, list[tuple[str, str, str, str]]] = defaultdict(list)
    versions: dict[tuple[int, str], int | None] = {}
    for claim_id, name, value, justification, labeled_at, version in zip(
        labels["claim_id"].tolist(), labels["reviewer"].tolist(), labels["label"].tolist(),
        labels["justification"].tolist(), times, labels["guidelines_version"].tolist(), strict=True,
    ):
        every_label[claim_id].append((name, value, justification or "", labeled_at))
        # None, or NaN in a float column: pd.isna value by value cost ~0.1 s at 50k labels.
        versions[(claim_id, name)] = None if version is None or version != version else int(version)

    columns: dict[str, list[Any]] = {column: [] for column in (*LABEL_TABLE_COLUMNS, REVIEWER_LABELS)}
    add = {column: values.append for column, values in columns.items()}
    # Who adjudicated, when and why (SPEC §4.4; one reviewer's table has no adjudications).
    adjudications = [
        (lead, format_labeled_at(pd.Timestamp(at).to_pydatetime()), reason) if is_adjudicated and lead else None
        for is_adjudicated, lead, at, reason in zip(*(claims[column].tolist() for column in (
            "adjudicated", "adjudicated_by", "adjudicated_at", "adjudication_reason")), strict=True)
    ]
    for (claim_id, answer_id, question_id, claim_index, text, n_citations, abstention, label, disagreement,
         factual), adjudication in zip(zip(
        *(claims[column].tolist() for column in ("claim_id", "answer_id", "question_id", "claim_index", "claim",
                                                 "n_citations", "abstention", "label", "disagreement", "factual")),
        strict=True), adjudications, strict=True,
    ):
        citations = cited.get(claim_id, [])
        label = to_native(label)
        everyone = sorted(every_label.get(claim_id, []))
        given = everyone if reviewer is None else [item for item in everyone if item[0] == reviewer]
        # An adjudicated label is the lead's: no reviewer who happened to agree is shown as its author.
        counted = [] if adjudication else given if disagreement else [item for item in given if item[1] == label]
        if abstention:
            status = STATUS_ABSTENTION
        elif not factual:
            status = STATUS_NON_FACTUAL
        elif n_citations == 0:
            status = STATUS_UNCITED
        elif adjudication:
            status = STATUS_ADJUDICATED
        elif disagreement:
            status = STATUS_DISAGREEMENT
        elif label is None:
            status = STATUS_PENDING
        else:
            status = STATUS_LABELED
        add["run"](run.name)
        add["question_id"](str(question_id))
        add["answer_id"](answer_id)
        add["claim_index"](claim_index)
        add["claim"](text)
        add["citations"](CITATION_SEPARATOR.join([c[0] for c in citations]) if citations else "")
        add["cited_span"]("\n".join([f"[{c[0]}] {c[1]}" for c in citations if c[1]]) if citations else "")
        add["passage"](_passage_cell(citations, passage_text) if with_passages and citations else "")
        add["label"](label)
        add["justification"]("" if disagreement or not counted else _justification(counted))
        add["reviewer"](CITATION_SEPARATOR.join([item[0] for item in counted]) if counted else "")
        add["labeled_at"](max(item[3] for item in counted) if counted else None)
        add["status"](status)
        add["claim_id"](claim_id)
        add["claim_revision"](revisions[claim_id])
        add["factual"](bool(factual))
        judgment_cell, evidence_cell = judged.get(claim_id, ("", ""))
        add["judgments"](judgment_cell)
        add["evidence"](evidence_cell)
        add["adjudicated_by"](adjudication[0] if adjudication else "")
        add["adjudicated_at"](adjudication[1] if adjudication else None)
        add["adjudication_reason"](adjudication[2] if adjudication else "")
        made_under = sorted({versions[(claim_id, item[0])] for item in counted} - {None})
        add[GUIDELINES_COLUMN](CITATION_SEPARATOR.join(str(number) for number in made_under))
        add["in_sample"](answer_id in sampled if sampled is not None else None)
        add[REVIEWER_LABELS]([{"reviewer": name, "label": value, "justification": text, "labeled_at": at}
                              for name, value, text, at in everyone])
    return _frame(columns)


def _judgment_cells(run: Run, *, reviewer: str | None) -> dict[int, tuple[str, str]]:
    """Per claim id, the ``judgments`` and ``evidence`` cells (module docstring): ``reviewer``'s
    current judgments, or those every reviewer whose labels count agrees on (``counted_q``:
    people and the run's promoted judge, as for labels). One query."""
    per_citation: dict[tuple[int, int], list[tuple[str, str, str, str, int]]] = defaultdict(list)
    judgments = CitationJudgment.objects.filter(citation__claim__answer__run=run, is_current=True)
    judgments = (judgments.filter(reviewer__username=reviewer) if reviewer is not None
                 else judgments.filter(counted_q(promoted=run.promoted_judge_id)))
    for claim_id, position, cited_id, name, value, evidence in judgments.order_by(
            "citation__claim_id", "citation__position", "reviewer__username").values_list(
            "citation__claim_id", "citation__position", "citation__cited_id", "reviewer__username", "judgment",
            "evidence"):
        per_citation[(claim_id, position)].append((cited_id, name, value, evidence, claim_id))
    lines: dict[int, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for (claim_id, _position), given in sorted(per_citation.items()):
        values = {value for _cited, _name, value, _evidence, _claim in given}
        if len(values) != 1:
            continue  # reviewers differ: disputed, not in the agreed table
        cited_id = given[0][0]
        judgment_lines, evidence_lines = lines[claim_id]
        judgment_lines.append(f"[{cited_id}] {values.pop()}")
        words = " / ".join(dict.fromkeys(evidence for _c, _n, _v, evidence, _claim in given if evidence))
        if words:
            evidence_lines.append(f"[{cited_id}] {words}")
    return {claim_id: ("\n".join(j), "\n".join(e)) for claim_id, (j, e) in lines.items()}


def _passage_cell(citations: list[tuple[str, str, bool, int | None]], passage_text: dict[int, str]) -> str:
    blocks: list[str] = []
    seen: set[str] = set()
    for cited_id, _span, fabricated, passage_pk in citations:
        if cited_id in seen:
            continue
        seen.add(cited_id)
        text = FABRICATED_PASSAGE if fabricated or passage_pk is None else passage_text.get(passage_pk, "")
        blocks.append(f"[{cited_id}] {text}")
    return "\n\n".join(blocks)


def _justification(counted: list[tuple[str, str, str, datetime]]) -> str:
    written = [(name, justification) for name, _value, justification, _at in counted if justification]
    if len(written) == 1:
        return written[0][1]
    return "\n\n".join(f"{name}: {justification}" for name, justification in written)


def _frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    """Columns → DataFrame with int64 id columns and object text columns
    (pandas' own string dtype would turn ``None`` into NaN)."""
    return pd.DataFrame({
        column: pd.Series(values, dtype="int64" if column in INT_COLUMNS else object)
        for column, values in columns.items()
    })


def canonical_bytes(table: pd.DataFrame) -> bytes:
    """The canonical serialization of a label table (module docstring).

    In: a label table frame (``CANONICAL_COLUMNS`` at least; ``passage`` is
    ignored). Out: UTF-8 bytes, deterministic for equal tables.
    """
    ordered = table.sort_values(["question_id", "claim_index", "claim_id"], kind="stable")
    data = {column: ordered[column].tolist() for column in CANONICAL_COLUMNS}
    lines = []
    for i in range(len(ordered)):
        row = {column: to_native(data[column][i]) for column in CANONICAL_COLUMNS if column != REVIEWER_LABELS}
        row[REVIEWER_LABELS] = data[REVIEWER_LABELS][i] or []
        lines.append(json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
        lines.append("\n")
    return "".join(lines).encode("utf-8")


def table_from_canonical(data: bytes) -> pd.DataFrame:
    """Parse :func:`canonical_bytes` output back into a label table frame
    (``passage`` column empty). Raises ValueError on malformed content."""
    columns: dict[str, list[Any]] = {column: [] for column in (*LABEL_TABLE_COLUMNS, REVIEWER_LABELS)}
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not _EARLIEST_CANONICAL_COLUMNS <= set(row) <= set(CANONICAL_COLUMNS):
            raise ValueError(f"line {number}: expected an object with keys {', '.join(CANONICAL_COLUMNS)}")
        # A version from before judgments were kept: every claim factual, nothing judged; from before
        # adjudications were in the table: none shown; from before guidelines: no version.
        defaults = {"factual": True, "judgments": "", "evidence": "", "adjudicated_by": "",
                    "adjudicated_at": None, "adjudication_reason": "", GUIDELINES_COLUMN: ""}
        for column in CANONICAL_COLUMNS:
            columns[column].append(row.get(column, defaults.get(column)))
        columns["passage"].append("")
        columns["in_sample"].append(None)
    return _frame(columns)


def passage_texts(run: Run, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its ``passage`` column filled from the run's stored
    passages (answers are immutable after import, so this is what the table
    showed when it was written). One query (+1 for citations)."""
    text_of = dict(Passage.objects.filter(answer__run=run).values_list("id", "text"))
    cited: dict[int, list[tuple[str, str, bool, int | None]]] = defaultdict(list)
    for claim_id, cited_id, fabricated, passage_pk in (
        Citation.objects.filter(claim__answer__run=run)
        .order_by("claim_id", "position")
        .values_list("claim_id", "cited_id", "fabricated", "passage_id")
    ):
        cited[claim_id].append((cited_id, "", fabricated, passage_pk))
    filled = table.copy()
    filled["passage"] = pd.Series(
        [_passage_cell(cited.get(int(claim_id), []), text_of) for claim_id in table["claim_id"].tolist()],
        dtype=object, index=table.index,
    )
    return filled


def passages_frame(run: Run) -> pd.DataFrame:
    """The passages sent with each answer of ``run`` (the workbook's
    Passages sheet). Columns ``question_id``, ``answer_id`` (int),
    ``passage_id``, ``source``, ``text``; sorted by question, position. One query.
    """
    rows = (
        Passage.objects.filter(answer__run=run)
        .order_by("answer__question__question_id", "answer_id", "position")
        .values_list("answer__question__question_id", "answer_id", "passage_id", "source", "text")
    )
    columns: dict[str, list[Any]] = {c: [] for c in ("question_id", "answer_id", "passage_id", "source", "text")}
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            columns[column].append(value)
    return pd.DataFrame({
        column: pd.Series(values, dtype="int64" if column == "answer_id" else object)
        for column, values in columns.items()
    })


def table_claim_metrics(table: pd.DataFrame) -> ClaimMetrics:
    """Coverage, support and gap of a label table, pooled and per answer
    (SPEC §4.1), computed from the table alone so a version scores the same
    forever. A claim is cited when its ``citations`` cell names an id;
    ``status == "abstention"`` rows are left out as scoring.claims documents.
    """
    claims = pd.DataFrame({
        "answer_id": table["answer_id"].astype("int64"),
        "question_id": table["question_id"].astype(object),
        "claim_index": table["claim_index"].astype("int64"),
        "n_citations": pd.Series([len(split_citations(v)) for v in table["citations"].tolist()], dtype="int64",
                                 index=table.index),
        "label": table["label"].astype(object),
        "abstention": (table["status"] == STATUS_ABSTENTION).astype(bool),
        "factual": (table["status"] != STATUS_NON_FACTUAL).astype(bool),
    })
    return claim_metrics(claims)


def label_count(table: pd.DataFrame) -> int:
    """Claims of the table carrying a label (UNCITED included)."""
    return int(table["label"].notna().sum())
