"""Previewing a label table import (SPEC §5): a reviewer labels offline in an exported table
and uploads it back. :func:`label_table_import_preview` validates every row against
the database and lists what would change; :func:`label_table_import_apply` does it
atomically (all or nothing), adding a new current ``Label`` per changed row for the
importing reviewer and keeping the previous one as history.

Whose label a row is: an import never re-attributes a label. A row whose ``reviewer``
column names someone other than the importing reviewer is refused, unless a lead
imports with ``keep_reviewers``: then each row is recorded under the reviewer it names
(an ``external`` reviewer is created for a new name). With ``adjudicate`` (leads only)
each row is the lead's adjudication of the claim, its ``adjudication_reason`` (else
its justification) the reason.

Adjudicated rows: the agreed table shows a lead's adjudication with ``adjudicated_by``
(and no reviewer). Without ``adjudicate`` such a row is nobody's label: it changes
nothing when its label is still the claim's current adjudication, and is refused when
edited (a reviewer's import never writes an adjudication, nor turns one into a
reviewer's label).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db.models import Count, Q

from labeling.exports.cells import spreadsheet_text
from labeling.exports.label_table import (
    label_table_frame,
    split_citations,
)
from labeling.importers.label_table import LabelTableFile, LabelTableRow
from labeling.importers.records import ImportIssue
from labeling.models import (
    Adjudication,
    Citation,
    CitationJudgment,
    Claim,
    Label,
    Reviewer,
    Run,
)
from labeling.permissions import LEAD, may, role_in
from scoring.labels import label_problem


@dataclass(frozen=True)
class LabelChange:
    """What applying one row does: the reviewer's label on the claim goes
    from ``old_label`` (None = none yet) to ``new_label``."""

    line: int
    claim_id: int
    claim_revision: int
    question_id: str
    claim_index: int
    claim: str
    old_label: str | None
    new_label: str
    old_justification: str
    new_justification: str
    # The label made after the file's labeled_at that this row would turn
    # back: (reviewer, value, when), or None.
    newer: tuple[str, str, datetime] | None = None
    # Whom the label is recorded under (keep_reviewers); "" = the importing reviewer.
    reviewer: str = ""

    @property
    def label_changed(self) -> bool:
        return self.old_label != self.new_label

    @property
    def justification_changed(self) -> bool:
        return self.old_justification != self.new_justification


@dataclass(frozen=True)
class JudgmentChange:
    """What applying one row does to one citation's judgment (SPEC §4.3b): ``reviewer``'s
    (``""`` = the importing reviewer) current judgment of ``citation_id`` becomes ``judgment``
    with ``evidence``."""

    line: int
    claim_id: int
    claim_revision: int
    citation_id: int
    judgment: str
    evidence: str
    reviewer: str = ""


@dataclass
class LabelImportPreview:
    """Outcome of validating a label table file for ``reviewer`` on ``run``.

    ``rows``: rows read; ``changes``: one per row that changes a label;
    ``unchanged``: rows that change nothing (see the module docstring);
    ``blank``: rows without a label; ``issues``: every bad row, sorted by row;
    ``file_problem``: why the whole file is unreadable ("" when it is not);
    ``checked``: row number → ``(claim_id, claim revision)`` of every row
    matched to a claim (what apply holds the database to);
    ``newer_checked``: False when the file has no ``labeled_at`` column (newer
    labels cannot be told apart); ``skipped_newer``: changes left out by
    ``overwrite_newer=False``.
    """

    run: Run
    reviewer: Reviewer
    format: str
    rows: int = 0
    changes: list[LabelChange] = field(default_factory=list)
    unchanged: int = 0
    blank: int = 0
    issues: list[ImportIssue] = field(default_factory=list)
    file_problem: str = ""
    checked: dict[int, tuple[int, int]] = field(default_factory=dict)
    newer_checked: bool = True
    skipped_newer: list[LabelChange] = field(default_factory=list)
    # SPEC §4.3b: citation judgments the file changes, and claims whose "factual" mark it flips.
    judgment_changes: list[JudgmentChange] = field(default_factory=list)
    factual_changes: dict[int, bool] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.issues

    @property
    def has_changes(self) -> bool:
        """Applying writes something: labels, citation judgments or factual marks."""
        return bool(self.changes or self.judgment_changes or self.factual_changes)

    @property
    def newer(self) -> list[LabelChange]:
        """Changes that would turn back a label made after the file's (module docstring)."""
        return [change for change in self.changes if change.newer is not None]


def _comparable(text: str, fmt: str) -> str:
    text = spreadsheet_text(text) if fmt == "xlsx" else text.replace("\r\n", "\n")
    return text.strip()


def label_table_import_preview(
    *, run: Run, reviewer: Reviewer, table_file: LabelTableFile, checked: dict[int, tuple[int, int]] | None = None,
    keep_reviewers: bool = False, adjudicate: bool = False,
) -> LabelImportPreview:
    """Validate every row of ``table_file`` against ``run`` and list the
    changes applying it would make for ``reviewer`` (see the module docstring
    for ``keep_reviewers`` and ``adjudicate``). Writes nothing.

    Raises ValidationError when ``keep_reviewers`` or ``adjudicate`` is asked
    by someone who does not lead the run's project.

    ``checked``: an earlier preview's ``checked`` (row → claim id, revision);
    a row whose claim is now another claim or at another revision is a bad
    row then (the claim changed since that preview). Changes that would
    turn back a newer label carry ``newer`` (module docstring).

    Row problems reported (row, column, reason): a row for another run, a
    claim id not in this run (one message whether the id exists nowhere or
    in another run: the reviewer may not see other projects), the same claim
    twice, a claim whose revision moved since the export or whose text differs, a label
    that breaks "UNCITED iff no citation" (SPEC §3), a missing justification
    (always for UNSUPPORTED; for SUPPORTED when the project requires it),
    plus the parser's own (unknown label, bad numbers …).

    Queries: 2 (claims, current labels or adjudications), + 2 (citations,
    judgments) when the file judges citations, + 1 when a row shows an
    adjudication, + 8 (current label table) when the file has ``labeled_at``,
    + 1 for the role with ``keep_reviewers``/``adjudicate`` (none when ``run``
    carries ``my_role``, as from ``run_for``, or for a superuser).
    """
    if (keep_reviewers or adjudicate) and not may(role_in(user=reviewer, run=run), LEAD):
        raise ValidationError(f"{reviewer.username} does not lead project {run.project.slug}: only a lead may "
                              f"import {'adjudications' if adjudicate else 'labels under the reviewers a file names'}.",
                              code="not_lead")
    preview = LabelImportPreview(run=run, reviewer=reviewer, format=table_file.format, rows=table_file.rows_read,
                                 issues=list(table_file.issues), file_problem=table_file.file_problem,
                                 newer_checked=table_file.has_labeled_at)
    check = _RowCheck(preview=preview, state=_run_state(run, reviewer, table_file, keep_reviewers=keep_reviewers,
                                                        adjudicate=adjudicate),
                      checked=checked, keep_reviewers=keep_reviewers, adjudicate=adjudicate)
    for row in table_file.rows:
        issue = check.row(row)
        if issue is not None:
            preview.issues.append(issue)
    preview.issues.sort(key=lambda issue: issue.line)
    return preview


@dataclass
class _RunState:
    """What the rows of an import are checked against, read once per preview.

    ``claims``: claim id → (question_id, index, text, revision, number of citations);
    ``sent``: claim id → citations of passages sent with the answer (SUPPORTED needs one);
    ``factual``: claim id → its "factual" mark; ``by_position``: (question_id, index) → claim id;
    ``cited_ids``: claim id → cited id → citation id (when the file judges citations);
    ``judged_now``: (reviewer, citation id) → (judgment, evidence), current;
    ``current``: (reviewer, claim id) → (label, justification) a row is compared with (the
    current adjudication's value and reason when adjudicating); ``adjudicated``: claim id →
    its current adjudication's value (for rows that show one); ``made``: claim id → reviewer →
    (label, labeled_at) of every current label (when the file has ``labeled_at``)."""

    claims: dict[int, tuple[str, int, str, int, int]]
    sent: dict[int, int]
    factual: dict[int, bool]
    by_position: dict[tuple[str, int], int]
    judging: bool
    cited_ids: dict[int, dict[str, int]]
    judged_now: dict[tuple[str, int], tuple[str, str]]
    current: dict[tuple[str, int], tuple[str, str]]
    adjudicated: dict[int, str]
    made: dict[int, dict[str, tuple[str, datetime]]]
    require_supported: bool


def _run_state(run: Run, reviewer: Reviewer, table_file: LabelTableFile, *, keep_reviewers: bool,
               adjudicate: bool) -> _RunState:
    """Read what ``table_file``'s rows are checked against (``_RunState``): 2 queries, + 2 when
    the file judges citations, + 1 when a row shows an adjudication, + 8 with ``labeled_at``
    (``label_table_frame`` without passages)."""
    claims: dict[int, tuple[str, int, str, int, int]] = {}
    sent: dict[int, int] = {}
    factual: dict[int, bool] = {}
    for pk, qid, index, text, revision, n, n_sent, is_factual in (
        Claim.objects.filter(answer__run=run)
        .annotate(n=Count("citations"), n_sent=Count("citations", filter=Q(citations__fabricated=False)))
        .values_list("id", "answer__question__question_id", "index", "text", "revision", "n", "n_sent", "factual")
    ):
        claims[pk] = (qid, index, text, revision, n)
        sent[pk] = n_sent
        factual[pk] = is_factual
    judging = not adjudicate and any(row.judgments for row in table_file.rows)
    cited_ids: dict[int, dict[str, int]] = {}
    judged_now: dict[tuple[str, int], tuple[str, str]] = {}
    if judging:
        for claim_id, pk, cited_id in Citation.objects.filter(claim__answer__run=run).order_by(
                "claim_id", "-position").values_list("claim_id", "pk", "cited_id"):
            cited_ids.setdefault(claim_id, {})[cited_id] = pk  # an id cited twice: its first citation
        current_judgments = CitationJudgment.objects.filter(citation__claim__answer__run=run, is_current=True)
        if not keep_reviewers:
            current_judgments = current_judgments.filter(reviewer=reviewer)
        judged_now = {(who, pk): (value, evidence) for who, pk, value, evidence in current_judgments.values_list(
            "reviewer__username", "citation_id", "judgment", "evidence")}
    # What a row is compared with: the current label of the reviewer it is recorded under.
    if adjudicate:
        current = {(reviewer.username, claim_id): (value, reason) for claim_id, value, reason in
                   Adjudication.objects.filter(claim__answer__run=run, is_current=True)
                   .values_list("claim_id", "value", "reason")}
    else:
        labels = Label.objects.filter(claim__answer__run=run, is_current=True)
        if not keep_reviewers:
            labels = labels.filter(reviewer=reviewer)
        current = {(who, claim_id): (value, justification) for who, claim_id, value, justification in
                   labels.values_list("reviewer__username", "claim_id", "value", "justification")}
    adjudicated: dict[int, str] = {}
    if not adjudicate and any(row.adjudicated_by for row in table_file.rows):
        adjudicated = dict(Adjudication.objects.filter(claim__answer__run=run, is_current=True)
                           .values_list("claim_id", "value"))
    made: dict[int, dict[str, tuple[str, datetime]]] = {}
    if table_file.has_labeled_at:
        table = label_table_frame(run, with_passages=False)
        made = {
            int(pk): {item["reviewer"]: (item["label"], _exported_time(item["labeled_at"])) for item in labels}
            for pk, labels in table[["claim_id", "reviewer_labels"]].itertuples(index=False) if labels
        }
    return _RunState(
        claims=claims, sent=sent, factual=factual,
        by_position={(qid, index): pk for pk, (qid, index, _t, _r, _n) in claims.items()},
        judging=judging, cited_ids=cited_ids, judged_now=judged_now, current=current, adjudicated=adjudicated,
        made=made, require_supported=run.project.require_justification_for_supported,
    )


@dataclass
class _RowCheck:
    """Checks the rows of one preview in file order, one :meth:`row` call each: a row
    either adds what it changes to ``preview`` or gives the first problem found."""

    preview: LabelImportPreview
    state: _RunState
    checked: dict[int, tuple[int, int]] | None
    keep_reviewers: bool
    adjudicate: bool
    seen: dict[tuple[int, str], int] = field(default_factory=dict)
    factual_rows: dict[int, tuple[bool, int]] = field(default_factory=dict)

    def row(self, row: LabelTableRow) -> ImportIssue | None:
        """Check ``row``; record its changes in the preview, or return its problem."""
        claim_id = self._claim_of(row)
        if isinstance(claim_id, ImportIssue):
            return claim_id
        owner = self._owner(row, claim_id)
        if isinstance(owner, ImportIssue):
            return owner
        issue = self._same_claim(row, claim_id)
        if issue is not None:
            return issue
        if not self.adjudicate and row.factual is not None and row.factual != self.state.factual[claim_id]:
            self.preview.factual_changes[claim_id] = row.factual
        if self.state.judging and row.judgments:
            issue = self._judgments(row, claim_id, owner)
            if issue is not None:
                return issue
        return self._label(row, claim_id, owner)

    def _claim_of(self, row: LabelTableRow) -> int | ImportIssue:
        """The claim ``row`` is about: by ``claim_id``, else by question and claim index."""
        run = self.preview.run
        if row.run is not None and row.run.strip() and row.run.strip() != run.name:
            return ImportIssue(row.line, "run", f"the row is for run {row.run.strip()!r}, not {run.name!r}")
        if row.claim_id is not None:
            if row.claim_id not in self.state.claims:
                return ImportIssue(row.line, "claim_id", f"claim {row.claim_id} is not part of this run")
            return row.claim_id
        claim_id = self.state.by_position.get((row.question_id, row.claim_index))
        if claim_id is None:
            return ImportIssue(row.line, "claim_index", f"unknown claim: question {row.question_id!r} has "
                                                        f"no claim {row.claim_index} in run {run.name!r}")
        return claim_id

    def _owner(self, row: LabelTableRow, claim_id: int) -> str | ImportIssue:
        """Whom ``row``'s label is recorded under (module docstring), once per claim and reviewer."""
        importer = self.preview.reviewer.username
        named = [Reviewer.normalize_username(name) for name in split_citations(row.reviewer)]
        if self.keep_reviewers and len(named) > 1:
            return ImportIssue(row.line, "reviewer", f"the row names {len(named)} reviewers ({row.reviewer}); "
                                                     "a label is recorded under one")
        owner = named[0] if self.keep_reviewers and named else importer
        # With keep_reviewers a claim takes one row per reviewer (several annotators in one file);
        # otherwise every row is the importer's (or the lead's verdict), so one row per claim.
        key = (claim_id, owner) if self.keep_reviewers else (claim_id, "")
        if key in self.seen:
            whose = f" for reviewer {owner}" if self.keep_reviewers else ""
            return ImportIssue(row.line, "claim_id", f"claim {claim_id}{whose} is also on row {self.seen[key]}")
        self.seen[key] = row.line
        if self.keep_reviewers and row.factual is not None:
            other = self.factual_rows.setdefault(claim_id, (row.factual, row.line))
            if other[0] != row.factual:
                return ImportIssue(row.line, "factual", f"claim {claim_id} is factual={str(other[0]).lower()} "
                                                        f"on row {other[1]}: one claim, one mark")
        if not (self.keep_reviewers and named) and not self.adjudicate and any(name != importer for name in named):
            return ImportIssue(row.line, "reviewer", (
                f"the row is {row.reviewer}'s label, not {importer}'s: an import never gives one "
                f"reviewer's label to another. Export your own labels (export_labels --reviewer "
                f"{importer}), or a lead imports with --keep-reviewers to record each row under the "
                "reviewer it names"))
        return owner

    def _same_claim(self, row: LabelTableRow, claim_id: int) -> ImportIssue | None:
        """Whether ``row`` still describes the stored claim: the revision of an earlier
        preview and of the export, and the claim text."""
        _qid, _index, text, revision, _n = self.state.claims[claim_id]
        if self.checked is not None:
            before = self.checked.get(row.line)
            if before != (claim_id, revision):
                return ImportIssue(row.line, "claim", _changed_since_preview(before, claim_id, revision))
        self.preview.checked[row.line] = (claim_id, revision)
        if row.claim_revision is not None and row.claim_revision != revision:
            return ImportIssue(row.line, "claim_revision",
                               f"the claim changed since this file was exported (revision {row.claim_revision} "
                               f"→ {revision}: its text or citations were edited); export the table again")
        if row.claim is not None and _comparable(row.claim, self.preview.format) != _comparable(
                text, self.preview.format):
            return ImportIssue(row.line, "claim", "the claim text differs from the stored claim; claims are "
                                                  "edited (split, merged, reworded) in the app, not in the file")
        return None

    def _judgments(self, row: LabelTableRow, claim_id: int, owner: str) -> ImportIssue | None:
        """The citation judgments ``row`` changes (SPEC §4.3b)."""
        _qid, index, _text, revision, _n = self.state.claims[claim_id]
        cited = self.state.cited_ids.get(claim_id, {})
        unknown = sorted(set(row.judgments) - set(cited))
        if unknown:
            return ImportIssue(row.line, "judgments", f"claim {index} does not cite {', '.join(unknown)}: "
                                                      "judge the citations its citations column names")
        importer = self.preview.reviewer.username
        for cited_id, value in row.judgments.items():
            pk = cited[cited_id]
            words = (row.evidence or {}).get(cited_id, "")
            if self.state.judged_now.get((owner, pk)) != (value, words):
                self.preview.judgment_changes.append(JudgmentChange(
                    line=row.line, claim_id=claim_id, claim_revision=revision, citation_id=pk, judgment=value,
                    evidence=words, reviewer=owner if owner != importer else ""))
        return None

    def _label(self, row: LabelTableRow, claim_id: int, owner: str) -> ImportIssue | None:
        """The label change ``row`` makes, if any (SPEC §3 label rules)."""
        preview, state = self.preview, self.state
        question_id, index, text, revision, n_citations = state.claims[claim_id]
        if row.label is None:
            preview.blank += 1
            return None
        n_sent = state.sent[claim_id]
        broken = label_problem(row.label, n_citations=n_citations, n_sent=n_sent)
        if broken is not None:
            return ImportIssue(row.line, broken.field, broken.message)
        if not n_citations:
            preview.unchanged += 1  # UNCITED is automatic: nothing to record
            return None
        if row.adjudicated_by and not self.adjudicate:
            if state.adjudicated.get(claim_id) == row.label:
                preview.unchanged += 1  # the claim's adjudication, as it stands: nobody's label to record
                return None
            return ImportIssue(row.line, "label", (
                f"the row shows {row.adjudicated_by}'s adjudication, not a reviewer's label, and its label was "
                f"changed (or the adjudication since): a lead records adjudications (import with --adjudicate); "
                f"a reviewer changes their own labels (export_labels --reviewer {preview.reviewer.username})"))
        justification = (row.adjudication_reason or row.justification).strip() if self.adjudicate else (
            row.justification.strip())
        own = state.current.get((owner, claim_id))
        if own and own[0] == row.label and _comparable(own[1], preview.format) == _comparable(
                justification, preview.format):
            preview.unchanged += 1
            return None
        broken = label_problem(row.label, n_citations=n_citations, n_sent=n_sent, justification=justification,
                               supported_needs_justification=state.require_supported)
        if broken is not None:
            return ImportIssue(row.line, broken.field, broken.message)
        if self.adjudicate and not justification:
            return ImportIssue(row.line, "justification", "an adjudication needs its reason in the "
                                                          "adjudication_reason (or justification) column")
        preview.changes.append(LabelChange(
            line=row.line, claim_id=claim_id, claim_revision=revision, question_id=question_id, claim_index=index,
            claim=text, old_label=own[0] if own else None, new_label=row.label,
            old_justification=own[1] if own else "", new_justification=justification,
            newer=_newer_label(row, state.made.get(claim_id, {}), owner) if state.made and not self.adjudicate
            else None,
            reviewer=owner if owner != preview.reviewer.username else "",
        ))
        return None


def _exported_time(text: str) -> datetime:
    """``"2025-01-31T09:15:00Z"`` (``format_labeled_at``) → aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _newer_label(row: LabelTableRow, current: dict[str, tuple[str, datetime]],
                 importer: str) -> tuple[str, str, datetime] | None:
    """The newest current label, among the importer's own and those of the
    reviewers the row names, made after the row's ``labeled_at`` (module
    docstring), as ``(reviewer, value, when)``; None when there is none.
    ``current``: reviewer → (value, when), times to the second as exported."""
    names = {importer, *split_citations(row.reviewer)}
    newest = None
    for name in sorted(names & current.keys()):
        value, moment = current[name]
        if (row.labeled_at is None or moment > row.labeled_at) and (newest is None or moment > newest[2]):
            newest = (name, value, moment)
    return newest


def _changed_since_preview(before: tuple[int, int] | None, claim_id: int, revision: int) -> str:
    if before is None:
        return "the row names another claim than at the preview; upload the file again"
    if before[0] != claim_id:
        return (f"the row named claim {before[0]} at the preview and names claim {claim_id} now (claims were "
                "split or merged since); upload the file again")
    return (f"the claim changed since the preview (revision {before[1]} → {revision}: its text or citations "
            "were edited); nothing was imported: upload the file again to see it as it is now")
