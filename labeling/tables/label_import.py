"""Applying a label table import (SPEC §5): :func:`label_table_import_apply` writes
what a preview (``labeling.tables.import_preview``) found, atomically (all or nothing),
adding a new current ``Label`` per changed row for the reviewer it is recorded under and
keeping the previous one as history; with ``adjudicate``, a lead's adjudication per row.
Nothing is written when the database moved since the preview in a way the file did not
see (module docstring of ``labeling.tables.import_preview``).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from labeling.audit import audit_record
from labeling.db import analyze_after_bulk_write, lock_claims
from labeling.importers.label_table import LabelTableFile
from labeling.importers.records import ImportIssue
from labeling.models import (
    Adjudication,
    AuditAction,
    CitationJudgment,
    Claim,
    Label,
    Reviewer,
    ReviewerKind,
    Run,
)
from labeling.runs import claims_changed, labels_changed
from labeling.tables.import_preview import LabelChange, LabelImportPreview, label_table_import_preview

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
            labels_changed(run=run)
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
            analyze_after_bulk_write((Label, CitationJudgment),
                                     rows=len(preview.changes) + len(preview.judgment_changes))
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
