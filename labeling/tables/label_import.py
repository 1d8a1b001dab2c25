"""Label table imports (SPEC §5): a reviewer labels offline in an exported table
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
from django.db import IntegrityError, transaction
from django.db.models import Count, Q

from labeling.audit import audit_record
from labeling.db import lock_claims
from labeling.exports.cells import spreadsheet_text
from labeling.exports.label_table import (
    label_table_frame,
    split_citations,
)
from labeling.importers.label_table import LabelTableFile, LabelTableRow
from labeling.importers.records import ImportIssue
from labeling.models import (
    Adjudication,
    AuditAction,
    Citation,
    CitationJudgment,
    Claim,
    Label,
    Reviewer,
    ReviewerKind,
    Run,
)
from labeling.permissions import LEAD, may, role_in
from labeling.runs import claims_changed
from scoring.labels import label_problem

NEWER_LABELS = "newer_labels"  # ValidationError code of label_table_import_apply


_BATCH = 500


class LabelImportError(ValidationError):
    """An import was refused; ``issues`` lists every bad row (row, column,
    reason). Nothing was written."""

    def __init__(self, issues: list[ImportIssue]):
        self.issues = issues
        shown = [str(issue) for issue in issues[:50]]
        if len(issues) > 50:
            shown.append(f"… and {len(issues) - 50} more")
        super().__init__(shown)


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

    Queries: 2 (claims, current labels or adjudications), + 6 (current label
    table) when the file has ``labeled_at``, + 1 for the role with
    ``keep_reviewers``/``adjudicate`` (none when ``run`` carries ``my_role``, as from
    ``run_for``, or for a superuser).
    """
    if (keep_reviewers or adjudicate) and not may(role_in(user=reviewer, run=run), LEAD):
        raise ValidationError(f"{reviewer.username} does not lead project {run.project.slug}: only a lead may "
                              f"import {'adjudications' if adjudicate else 'labels under the reviewers a file names'}.",
                              code="not_lead")
    fmt = table_file.format
    preview = LabelImportPreview(run=run, reviewer=reviewer, format=fmt, rows=table_file.rows_read,
                                 issues=list(table_file.issues), file_problem=table_file.file_problem,
                                 newer_checked=table_file.has_labeled_at)
    problem = preview.issues.append
    claims: dict[int, tuple[str, int, str, int, int]] = {}
    sent: dict[int, int] = {}  # citations of passages sent with the answer: SUPPORTED needs one
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
    by_position = {(qid, index): pk for pk, (qid, index, _t, _r, _n) in claims.items()}
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
    # The claims' current adjudications, for rows that show one (adjudicated_by) outside adjudicate mode.
    adjudicated: dict[int, str] = {}
    if not adjudicate and any(row.adjudicated_by for row in table_file.rows):
        adjudicated = dict(Adjudication.objects.filter(claim__answer__run=run, is_current=True)
                           .values_list("claim_id", "value"))
    # Every reviewer's current label with its time (to the second, as exported).
    made: dict[int, dict[str, tuple[str, datetime]]] = {}
    if table_file.has_labeled_at:
        table = label_table_frame(run, with_passages=False)
        made = {
            int(pk): {item["reviewer"]: (item["label"], _exported_time(item["labeled_at"])) for item in labels}
            for pk, labels in table[["claim_id", "reviewer_labels"]].itertuples(index=False) if labels
        }
    require_supported = run.project.require_justification_for_supported
    seen: dict[tuple[int, str], int] = {}
    factual_rows: dict[int, tuple[bool, int]] = {}
    for row in table_file.rows:
        if row.run is not None and row.run.strip() and row.run.strip() != run.name:
            problem(ImportIssue(row.line, "run", f"the row is for run {row.run.strip()!r}, not {run.name!r}"))
            continue
        if row.claim_id is not None:
            claim_id = row.claim_id
            if claim_id not in claims:
                problem(ImportIssue(row.line, "claim_id", f"claim {claim_id} is not part of this run"))
                continue
        else:
            claim_id = by_position.get((row.question_id, row.claim_index))
            if claim_id is None:
                problem(ImportIssue(row.line, "claim_index", f"unknown claim: question {row.question_id!r} has "
                                                             f"no claim {row.claim_index} in run {run.name!r}"))
                continue
        named = [Reviewer.normalize_username(name) for name in split_citations(row.reviewer)]
        owner = reviewer.username
        if keep_reviewers and len(named) > 1:
            problem(ImportIssue(row.line, "reviewer", f"the row names {len(named)} reviewers ({row.reviewer}); "
                                                      "a label is recorded under one"))
            continue
        if keep_reviewers and named:
            owner = named[0]
        # With keep_reviewers a claim takes one row per reviewer (several annotators in one file);
        # otherwise every row is the importer's (or the lead's verdict), so one row per claim.
        key = (claim_id, owner) if keep_reviewers else (claim_id, "")
        if key in seen:
            whose = f" for reviewer {owner}" if keep_reviewers else ""
            problem(ImportIssue(row.line, "claim_id", f"claim {claim_id}{whose} is also on row {seen[key]}"))
            continue
        seen[key] = row.line
        if keep_reviewers and row.factual is not None:
            other = factual_rows.setdefault(claim_id, (row.factual, row.line))
            if other[0] != row.factual:
                problem(ImportIssue(row.line, "factual", f"claim {claim_id} is factual={str(other[0]).lower()} "
                                                         f"on row {other[1]}: one claim, one mark"))
                continue
        if not (keep_reviewers and named) and not adjudicate and any(name != reviewer.username for name in named):
            problem(ImportIssue(row.line, "reviewer", (
                f"the row is {row.reviewer}'s label, not {reviewer.username}'s: an import never gives one "
                f"reviewer's label to another. Export your own labels (export_labels --reviewer "
                f"{reviewer.username}), or a lead imports with --keep-reviewers to record each row under the "
                "reviewer it names")))
            continue
        question_id, index, text, revision, n_citations = claims[claim_id]
        if checked is not None:
            before = checked.get(row.line)
            if before != (claim_id, revision):
                problem(ImportIssue(row.line, "claim", _changed_since_preview(before, claim_id, revision)))
                continue
        preview.checked[row.line] = (claim_id, revision)
        if row.claim_revision is not None and row.claim_revision != revision:
            problem(ImportIssue(row.line, "claim_revision",
                                f"the claim changed since this file was exported (revision {row.claim_revision} "
                                f"→ {revision}: its text or citations were edited); export the table again"))
            continue
        if row.claim is not None and _comparable(row.claim, fmt) != _comparable(text, fmt):
            problem(ImportIssue(row.line, "claim", "the claim text differs from the stored claim; claims are "
                                                   "edited (split, merged, reworded) in the app, not in the file"))
            continue
        if not adjudicate and row.factual is not None and row.factual != factual[claim_id]:
            preview.factual_changes[claim_id] = row.factual
        if judging and row.judgments:
            unknown = sorted(set(row.judgments) - set(cited_ids.get(claim_id, {})))
            if unknown:
                problem(ImportIssue(row.line, "judgments", f"claim {index} does not cite {', '.join(unknown)}: "
                                                           "judge the citations its citations column names"))
                continue
            for cited_id, value in row.judgments.items():
                pk = cited_ids[claim_id][cited_id]
                words = (row.evidence or {}).get(cited_id, "")
                if judged_now.get((owner, pk)) != (value, words):
                    preview.judgment_changes.append(JudgmentChange(
                        line=row.line, claim_id=claim_id, claim_revision=revision, citation_id=pk, judgment=value,
                        evidence=words, reviewer=owner if owner != reviewer.username else ""))
        if row.label is None:
            preview.blank += 1
            continue
        n_sent = sent[claim_id]
        broken = label_problem(row.label, n_citations=n_citations, n_sent=n_sent)
        if broken is not None:
            problem(ImportIssue(row.line, broken.field, broken.message))
            continue
        if not n_citations:
            preview.unchanged += 1  # UNCITED is automatic: nothing to record
            continue
        if row.adjudicated_by and not adjudicate:
            if adjudicated.get(claim_id) == row.label:
                preview.unchanged += 1  # the claim's adjudication, as it stands: nobody's label to record
                continue
            problem(ImportIssue(row.line, "label", (
                f"the row shows {row.adjudicated_by}'s adjudication, not a reviewer's label, and its label was "
                f"changed (or the adjudication since): a lead records adjudications (import with --adjudicate); "
                f"a reviewer changes their own labels (export_labels --reviewer {reviewer.username})")))
            continue
        justification = (row.adjudication_reason or row.justification).strip() if adjudicate else (
            row.justification.strip())
        own = current.get((owner, claim_id))
        if own and own[0] == row.label and _comparable(own[1], fmt) == _comparable(justification, fmt):
            preview.unchanged += 1
            continue
        broken = label_problem(row.label, n_citations=n_citations, n_sent=n_sent, justification=justification,
                               supported_needs_justification=require_supported)
        if broken is not None:
            problem(ImportIssue(row.line, broken.field, broken.message))
            continue
        if adjudicate and not justification:
            problem(ImportIssue(row.line, "justification", "an adjudication needs its reason in the "
                                                           "adjudication_reason (or justification) column"))
            continue
        preview.changes.append(LabelChange(
            line=row.line, claim_id=claim_id, claim_revision=revision, question_id=question_id, claim_index=index,
            claim=text, old_label=own[0] if own else None, new_label=row.label,
            old_justification=own[1] if own else "", new_justification=justification,
            newer=_newer_label(row, made.get(claim_id, {}), owner) if made and not adjudicate else None,
            reviewer=owner if owner != reviewer.username else "",
        ))
    preview.issues.sort(key=lambda issue: issue.line)
    return preview


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


def label_table_import_apply(
    *, run: Run, reviewer: Reviewer, table_file: LabelTableFile, checked: dict[int, tuple[int, int]] | None = None,
    overwrite_newer: bool | None = None, keep_reviewers: bool = False, adjudicate: bool = False,
    source_name: str = "", command_line: bool = False,
) -> LabelImportPreview:
    """Apply ``table_file`` for ``reviewer`` on ``run``, all or nothing
    (``keep_reviewers``, ``adjudicate``: see :func:`label_table_import_preview`).
    The audit log records the import, naming the file ``source_name``, as
    done by ``reviewer`` (the browser's user), or with ``command_line`` by
    "command line" for ``reviewer`` (in the event's detail: ``labeling.audit``).

    Re-validates under a row lock on the run (the database may have moved
    since the preview; ``checked`` is that preview's, see
    :func:`label_table_import_preview`), then per change marks the
    reviewer's current label on the claim not current (history kept) and
    adds the new current label at the claim's revision. Changes that would
    turn back a newer label are written when ``overwrite_newer`` is True,
    left out (``skipped_newer``) when False. Returns the preview that was
    applied.

    Raises LabelImportError (a ValidationError) listing every bad row when
    any row is bad, and ValidationError (code ``NEWER_LABELS``) when some
    change would turn back a newer label and ``overwrite_newer`` is None;
    nothing is written then.
    """
    try:
        with transaction.atomic():
            Run.objects.select_for_update(no_key=True).filter(pk=run.pk).exists()
            preview = label_table_import_preview(run=run, reviewer=reviewer, table_file=table_file, checked=checked,
                                                 keep_reviewers=keep_reviewers, adjudicate=adjudicate)
            touched = ({change.claim_id for change in preview.changes}
                       | {change.claim_id for change in preview.judgment_changes} | set(preview.factual_changes))
            if not preview.issues and touched:
                # Lock what the changes touch as every other write does (answer, then claim, each in id
                # order), then validate again under those locks: the file's labels land on the claims
                # as they are, and a concurrent split or merge waits instead of deadlocking with us.
                lock_claims(touched)
                preview = label_table_import_preview(run=run, reviewer=reviewer, table_file=table_file,
                                                     checked=checked, keep_reviewers=keep_reviewers,
                                                     adjudicate=adjudicate)
            if preview.issues:
                raise LabelImportError(preview.issues)
            newer = preview.newer
            if newer and overwrite_newer is None:
                rows = ", ".join(str(change.line) for change in newer[:20]) + (" …" if len(newer) > 20 else "")
                raise ValidationError(
                    f"{len(newer)} row(s) would turn back a label made after this file was exported (rows {rows}): "
                    "choose to overwrite those labels or to skip those rows.", code=NEWER_LABELS,
                )
            if newer and not overwrite_newer:
                preview.skipped_newer = newer
                preview.changes = [change for change in preview.changes if change.newer is None]
            _audit_import(run=run, reviewer=reviewer, preview=preview, source_name=source_name,
                          mode="adjudicate" if adjudicate else "keep_reviewers" if keep_reviewers else "own",
                          command_line=command_line)
            if adjudicate:
                _apply_adjudications(reviewer, preview.changes)
                return preview
            owners = _owners({change.reviewer for change in preview.changes} - {""})
            by_owner: dict[int, list[int]] = {}
            for change in preview.changes:
                by_owner.setdefault(owners.get(change.reviewer, reviewer).pk, []).append(change.claim_id)
            for owner_id, ids in by_owner.items():
                for start in range(0, len(ids), _BATCH):
                    Label.objects.filter(claim_id__in=ids[start:start + _BATCH], reviewer_id=owner_id,
                                         is_current=True).update(is_current=False)
            Label.objects.bulk_create([
                Label(claim_id=change.claim_id, reviewer=owners.get(change.reviewer, reviewer),
                      value=change.new_label, justification=change.new_justification,
                      claim_revision=change.claim_revision)
                for change in preview.changes
            ], batch_size=_BATCH)
            _apply_judgments(reviewer, preview)
    except IntegrityError:
        raise ValidationError("labels of this run changed while the import was applied; preview it again") from None
    return preview


def _apply_judgments(reviewer: Reviewer, preview: LabelImportPreview) -> None:
    """Write the preview's judgment changes (each replaces its reviewer's current judgment
    of the citation, which stays in history) and factual marks (SPEC §4.3b)."""
    if preview.judgment_changes:
        owners = _owners({change.reviewer for change in preview.judgment_changes} - {""})
        for change in preview.judgment_changes:
            CitationJudgment.objects.filter(citation_id=change.citation_id, is_current=True,
                                            reviewer=owners.get(change.reviewer, reviewer)).update(is_current=False)
        CitationJudgment.objects.bulk_create([
            CitationJudgment(citation_id=change.citation_id, reviewer=owners.get(change.reviewer, reviewer),
                             judgment=change.judgment, evidence=change.evidence, claim_revision=change.claim_revision)
            for change in preview.judgment_changes
        ], batch_size=_BATCH)
    for value in (True, False):
        ids = [pk for pk, wanted in preview.factual_changes.items() if wanted is value]
        if ids:
            Claim.objects.filter(pk__in=ids).update(factual=value)
    if preview.factual_changes:
        # Which claims count changed: the run's cached cited-claim count is stale.
        claims_changed(run=preview.run)


def _audit_import(*, run: Run, reviewer: Reviewer, preview: LabelImportPreview, source_name: str,
                  mode: str, command_line: bool) -> None:
    audit_record(action=AuditAction.IMPORT_LABELS, actor=None if command_line else reviewer, run=run,
                 target=source_name,
                 detail={"format": preview.format, "rows": preview.rows, "labels": len(preview.changes),
                         # Citation judgments and factual marks (SPEC §4.3b), when the file changed any.
                         **({"judgments": len(preview.judgment_changes), "factual": len(preview.factual_changes)}
                            if preview.judgment_changes or preview.factual_changes else {}),
                         "skipped_newer": len(preview.skipped_newer), "mode": mode,
                         **({"reviewer": reviewer.username} if command_line else {})})


def _owners(names: set[str]) -> dict[str, Reviewer]:
    """The reviewers ``names`` name, an ``external`` one (no usable password) created for a new name."""
    owners = {r.username: r for r in Reviewer.objects.filter(username__in=names)}
    for name in sorted(names - set(owners)):
        owners[name] = Reviewer.objects.create_user(username=name, kind=ReviewerKind.EXTERNAL)
    return owners


def _apply_adjudications(lead: Reviewer, changes: list[LabelChange]) -> None:
    """Record each change as ``lead``'s current adjudication of its claim (history kept)."""
    ids = [change.claim_id for change in changes]
    for start in range(0, len(ids), _BATCH):
        Adjudication.objects.filter(claim_id__in=ids[start:start + _BATCH], is_current=True).update(is_current=False)
    Adjudication.objects.bulk_create([
        Adjudication(claim_id=change.claim_id, lead=lead, value=change.new_label, reason=change.new_justification,
                     claim_revision=change.claim_revision)
        for change in changes
    ], batch_size=_BATCH)
