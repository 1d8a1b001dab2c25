"""Writes of a run as a whole (SPEC §2 "run"): create, rename, delete, and the
version stamp every write that changes a run's claims must bump.

Every service is keyword-only, runs inside ``transaction.atomic`` and raises
``ValidationError`` with a message a lead can act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from labeling.audit import audit_record
from labeling.models import (
    Answer,
    AuditAction,
    Claim,
    Label,
    LabelStateStamp,
    LabelTableVersion,
    Project,
    Reviewer,
    Run,
)
from labeling.names import normalize_name, validate_run_name
from labeling.permissions import LEAD, may, role_in, run_manage_allowed


def claims_changed(*, run: Run | int) -> None:
    """Say that ``run``'s claims or their citations changed: call it inside the
    transaction of every write that adds, removes, splits or merges claims or
    changes which claims are cited (``answers_import.run_import``,
    ``claim_split``, ``claim_merge``; a new write of that kind must call it
    too; ``claim_edit`` changes a claim's text only, so it need not). One
    UPDATE: ``Run.claims_version`` + 1, which makes the run's cached cited-claim
    count stale (``tallies.run_cited_claims`` recounts it once, on the next
    read) and its cached answers, claims and citations
    (``labeling.exports.structure``; ``tests/test_frame_cache.py`` fails on a
    module that writes those rows without calling it). ``run`` is a Run or its id."""
    Run.objects.filter(pk=getattr(run, "pk", run)).update(claims_version=F("claims_version") + 1)


def labels_changed(*, run: Run | int, claim: int | None = None, labels: bool = True) -> None:
    """Say that something ``run``'s figures read changed (a ``LabelStateStamp``):
    call it inside the transaction of every write of labels, citation
    judgments, adjudications, factual marks, gold checks, send-backs, samples,
    assignments or a claim's text; ``tests/test_figure_cache.py`` walks every
    such writer and fails on one that forgets. One INSERT, which waits for no
    lock and makes every figure cached for the run's previous state
    unreachable once the write commits (``labeling.scores.figure_cache``).
    ``run`` is a Run or its id. ``claim``: the id of the one claim whose labels
    the write may have changed, when that is all it changed of the labels; the
    run's label table then re-reads that claim's labels only
    (``labeling.exports.current_labels``). Leave it out when any other claim's
    label may have moved: the table is read whole then. ``labels=False``: the
    write changed no label and no claim's factual mark (a member, an
    assignment, a sample): the table reads nothing again for it."""
    LabelStateStamp.objects.create(run_id=getattr(run, "pk", run), claim=claim, labels=labels)


def project_labels_changed(*, project: Project | int, labels: bool = True) -> None:
    """:func:`labels_changed` for every run of ``project``: for writes whose
    effect is project-wide (a question's gold or answerability, shared by
    every run that answers it). Members, roles and project settings need
    none: no figure reads them. ``labels``: as for :func:`labels_changed`
    (an import may have written labels too). One INSERT … SELECT."""
    table, runs = LabelStateStamp._meta.db_table, Run._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (run_id, labels) SELECT id, %s FROM {runs} WHERE project_id = %s",
                       [labels, getattr(project, "pk", project)])


def run_name_clean(name: str, *, project: Project, run: Run | None = None) -> str:
    """``name`` in normal form, if it can name a run of ``project``; else ValidationError.

    The rules of every run name (``labeling.names``: normal form, 1–200
    characters, no ``/`` or ``\\``, not ``.``/``..``, no control
    characters), plus: unique in the project (``run``, when given, is the run
    being renamed and may keep its name).
    """
    name = normalize_name(name or "")
    try:
        validate_run_name(name)
    except ValidationError as exc:
        message = " ".join(exc.messages)
        raise ValidationError(message[:1].upper() + message[1:] + ".", code=exc.code) from None
    taken = Run.objects.filter(project=project, name=name)
    if run is not None:
        taken = taken.exclude(pk=run.pk)
    if taken.exists():
        raise ValidationError(f"Project {project.slug!r} already has a run named {name!r}.", code="exists")
    return name


def run_rename(*, run: Run, user: Reviewer, name: str) -> Run:
    """Rename ``run`` to ``name`` (checked by :func:`run_name_clean`).

    Only the name changes: answers, labels and versions stay attached to the
    run (version files are named by the run's id, not its name). Raises
    PermissionDenied when :func:`run_manage_allowed` says no, ValidationError
    for a bad or taken name; nothing changes then.
    """
    if not run_manage_allowed(user=user, run=run):
        raise PermissionDenied("Only a lead of the project can rename its runs.")
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(pk=run.pk)
        name = run_name_clean(name, project=locked.project, run=locked)
        if name != locked.name:
            old, locked.name = locked.name, name
            try:
                with transaction.atomic():
                    locked.save(update_fields=["name"])
            except IntegrityError:  # the same name taken by a concurrent rename or import
                raise ValidationError(f"Project {locked.project.slug!r} already has a run named {name!r}.",
                                      code="exists") from None
            audit_record(action=AuditAction.RENAME, actor=user, run=locked, target=f"{old} → {name}",
                         detail={"from": old, "to": name})
        return locked


def run_create(*, project: Project, user: Reviewer | None, name: str, metadata: dict | None = None) -> Run:
    """Create the empty run ``name`` (checked by :func:`run_name_clean`) in
    ``project``, with free ``metadata`` (a JSON object); its answers come with
    an import. ``user`` is the lead creating it (``None``: the command line),
    recorded in the audit log; ``project.my_role``, when the caller set it
    (the HTTP API: its token's role), is their role there.

    Raises PermissionDenied when ``user`` is not a lead of the project,
    ValidationError for a bad or taken name or metadata that is not an
    object; nothing is created then.
    """
    if user is not None:
        if not may(role_in(user=user, project=project), LEAD):
            raise PermissionDenied("Only a lead of the project can create runs.")
    if not isinstance(metadata or {}, dict):
        raise ValidationError("A run's metadata is a JSON object.", code="bad_metadata")
    with transaction.atomic():
        name = run_name_clean(name, project=project)
        try:
            with transaction.atomic():
                run = Run.objects.create(project=project, name=name, metadata=metadata or {})
        except IntegrityError:  # the same name taken by a concurrent create or import
            raise ValidationError(f"Project {project.slug!r} already has a run named {name!r}.",
                                  code="exists") from None
        audit_record(action=AuditAction.CREATE, actor=user, run=run, target=name)
    return run


@dataclass(frozen=True)
class RunContents:
    """What deleting a run removes: its answers, claims, labels (every label,
    history included, and how many of them are current) and label table
    versions."""

    answers: int
    claims: int
    labels: int
    current_labels: int
    versions: int


def run_contents(*, run: Run) -> RunContents:
    """Counts of :class:`RunContents` for ``run`` (5 queries)."""
    labels = Label.objects.filter(claim__answer__run=run)
    return RunContents(
        answers=Answer.objects.filter(run=run).count(),
        claims=Claim.objects.filter(answer__run=run).count(),
        labels=labels.count(),
        current_labels=labels.filter(is_current=True).count(),
        versions=LabelTableVersion.objects.filter(run=run).count(),
    )


def run_delete(*, run: Run, user: Reviewer) -> RunContents:
    """Delete ``run`` with its answers, passages, claims, citations, labels
    and label table version records, all or nothing; returns what was
    removed. Questions stay (they belong to the project and other runs).

    The version *files* stay in storage (``label_tables/<project>/run-<id>/``):
    a version is an immutable, hashed artifact, and keeping its file means a
    deletion never destroys the record of what was labeled (an administrator
    removes them by hand if wanted). Raises PermissionDenied when
    :func:`run_manage_allowed` says no.
    """
    if not run_manage_allowed(user=user, run=run):
        raise PermissionDenied("Only a lead of the project can delete its runs.")
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        contents = run_contents(run=locked)
        # Recorded first: deleting the run keeps its events (run set null, run_name kept).
        audit_record(action=AuditAction.DELETE, actor=user, run=locked, target=locked.name,
                     detail={"answers": contents.answers, "claims": contents.claims, "labels": contents.labels,
                             "versions": contents.versions})
        # Versions protect their run (no version disappears by accident): remove them on purpose.
        LabelTableVersion.objects.filter(run=locked).delete()
        locked.delete()
    return contents
