"""Writes of the labeling screen (STYLE §3): labels, undo, claim edits, reviewers,
and renaming or deleting a run.

Every service is keyword-only, runs inside ``transaction.atomic`` and raises
``ValidationError`` with a message a reviewer can act on; nothing is written
when it raises. Concurrency: each service locks
the claim row it changes (``select_for_update``; on SQLite the IMMEDIATE
transaction mode serializes writers instead), and ``label_save`` refuses to
overwrite a label its caller has not seen (``LabelConflict``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, Max, OuterRef, Subquery
from django.utils import timezone

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.memberships import role_checked
from labeling.models import (
    Adjudication,
    Answer,
    AuditAction,
    Citation,
    CitationJudgment,
    Claim,
    ClaimLease,
    GoldClaim,
    Guidelines,
    Label,
    LabelTableVersion,
    LabelValue,
    Membership,
    Project,
    Resolution,
    Reviewer,
    ReviewerKind,
    Role,
    Run,
    SendBack,
)
from labeling.names import normalize_name, validate_run_name
from labeling.selectors import LEAD, may, visible_projects
from scoring.labels import label_problem


class LabelConflict(ValidationError):
    """The label (or the claim) changed since the reviewer's form was rendered.

    ``newer`` is the reviewer's current label that the form did not know about
    (``None`` when the conflict is a claim revision or a removed label);
    ``claim`` is the claim the form was for.
    """

    def __init__(self, message: str, *, claim: Claim, newer: Label | None):
        super().__init__(message, code="conflict")
        self.claim = claim
        self.newer = newer


def claims_changed(*, run: Run | int) -> None:
    """Say that ``run``'s claims or their citations changed: call it inside the
    transaction of every write that adds, removes, splits or merges claims or
    changes which claims are cited (``answers_import.run_import``,
    ``claim_split``, ``claim_merge``; a new write of that kind must call it
    too; ``claim_edit`` changes a claim's text only, so it need not). One
    UPDATE: ``Run.claims_version`` + 1, which makes the run's cached cited-claim
    count stale (``selectors.run_cited_claims`` recounts it once, on the next
    read). ``run`` is a Run or its id."""
    Run.objects.filter(pk=getattr(run, "pk", run)).update(claims_version=F("claims_version") + 1)


def claim_gone(claim: Claim) -> ValidationError:
    """The conflict of a write to ``claim`` after someone else merged it into
    its neighbour (the claim no longer exists): nothing was written."""
    return ValidationError(
        f"Claim {claim.index} was merged into its neighbour by someone else after you opened it: nothing was "
        "saved. Read the answer's claims as they are now and try again.", code="conflict")


def _lock_claim(claim: Claim) -> Claim:
    """Re-read ``claim`` under a row lock, with its answer, run and project, and
    ``is_cited`` (whether it has a citation) in the same query. Raises
    :func:`claim_gone` when a concurrent merge deleted it."""
    locked = (
        Claim.objects.select_for_update(of=("self",))
        .select_related("answer__run__project")
        .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))))
        .filter(pk=claim.pk).first()
    )
    if locked is None:
        raise claim_gone(claim)
    return locked


def _claims_will_change(claim: Claim) -> None:
    """Start a split or merge of ``claim``'s answer: mark the run's claims
    changed (``claims_changed``, which locks the run's row), then lock the
    answer's row, so splits and merges of one answer (which renumber its
    claims) happen one at a time. Run, then answer, then claims: the order
    every writer takes them (``labeling.db.lock_claims``; label table imports
    and snapshots lock the run first), so none waits for another in a circle.
    Label saves lock only their claim and never wait for these locks (FOR NO
    KEY UPDATE). ``claim.answer`` is loaded by the views (else one query)."""
    claims_changed(run=claim.answer.run_id)
    Answer.objects.select_for_update(no_key=True).filter(pk=claim.answer_id).exists()


def label_save(
    *, claim: Claim, reviewer: Reviewer, value: str, justification: str, base_revision: int,
    base_label_id: int | None,
) -> Label:
    """Record ``reviewer``'s label on ``claim`` (SPEC §3).

    ``base_revision`` is the claim revision the reviewer saw and
    ``base_label_id`` the id of their current label on the claim when the form
    was rendered (``None``: they had none). The previous current label stays in
    history (``is_current=False``). Saving exactly the current value and
    justification again returns the current label unchanged (a double submit
    is harmless), unless a lead sent that label back (issue 25 §4): then it is
    saved anew and resolves the send-back. The label records the project's
    guidelines version in force (``Label.guidelines_version``).

    Raises:
    - ``LabelConflict`` when the claim was edited since (revision differs) or
      the reviewer's current label is not ``base_label_id`` (another tab saved
      or undid one): nothing is saved, ``exc.newer`` is the label now current.
    - ``ValidationError`` for an unknown value, UNCITED on a cited claim,
      SUPPORTED/UNSUPPORTED on a claim without citations, or a blank
      justification where required (always for UNSUPPORTED; for SUPPORTED when
      ``Project.require_justification_for_supported``).
    - ``LabelConflict`` too when the claim no longer exists (merged into its
      neighbour by someone else meanwhile).
    """
    justification = (justification or "").strip()
    if value not in LabelValue.values:
        raise ValidationError(
            f"Unknown label value {value!r}: choose SUPPORTED or UNSUPPORTED.", code="invalid_value"
        )
    if len(justification) > MAX_JUSTIFICATION_CHARS:
        raise ValidationError(
            f"The justification is {len(justification):,} characters long; the limit is "
            f"{MAX_JUSTIFICATION_CHARS:,}. Shorten it and save again.", code="justification_too_long",
        )
    with transaction.atomic():
        # Only what can change under us is re-read (revision, index, citations), under the row lock.
        # The guidelines version in force comes with the lock (a subquery on the project id
        # the caller holds, so no join widens the lock): no query more a save.
        guidelines = (Guidelines.objects.filter(project_id=claim.answer.run.project_id).order_by("-number")
                      .values("number")[:1])
        state = (
            Claim.objects.select_for_update().filter(pk=claim.pk)
            .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))),
                      cites_sent=Exists(Citation.objects.filter(claim=OuterRef("pk"), fabricated=False)),
                      guidelines=Subquery(guidelines))
            .values_list("revision", "index", "is_cited", "cites_sent", "guidelines").first()
        )
        if state is None:
            raise LabelConflict(claim_gone(claim).messages[0], claim=claim, newer=None)
        revision, index, cited, cites_sent, guidelines_version = state
        if base_revision != revision:
            raise LabelConflict(
                f"Claim {index} was edited (split, merged or reworded) after you opened it: "
                "nothing was saved. Read the claim as it is now and label it again.",
                claim=claim, newer=None,
            )
        current = Label.objects.select_for_update().filter(claim_id=claim.pk, reviewer=reviewer,
                                                           is_current=True).first()
        if current is not None:
            current.reviewer = reviewer
        if (current is not None and current.value == value and current.justification == justification
                # Confirming a label a lead sent back is a relabel (issue 25 §4), not a double submit.
                and not SendBack.objects.filter(claim_id=claim.pk, reviewer=reviewer,
                                                resolved_at__isnull=True).exists()):
            return current
        current_id = current.pk if current is not None else None
        if current_id != base_label_id:
            if current is None:
                message = (f"Your label on claim {index} was undone in another tab after you opened "
                           "it: nothing was saved. Check the claim and save again.")
            else:
                message = (f"You labeled claim {index} {current.value} in another tab after you opened "
                           "this one: nothing was saved. Compare with the newer label below and save again "
                           "to replace it.")
            raise LabelConflict(message, claim=claim, newer=current)
        problem = label_problem(
            value, n_citations=int(cited), n_sent=int(cites_sent), justification=justification,
            supported_needs_justification=claim.answer.run.project.require_justification_for_supported,
        )
        if problem is not None:
            raise ValidationError(f"Claim {index}: {problem.message}.", code=problem.code)
        if current is not None:
            current.is_current = False
            current.save(update_fields=["is_current"])
        label = Label.objects.create(
            claim=claim, reviewer=reviewer, value=value, justification=justification,
            claim_revision=revision, is_current=True, is_stale=False, supersedes=current,
            guidelines_version=guidelines_version,
        )
        # The label takes the place of the reviewer's lease on the claim (labeling.queue): the
        # claim's overlap counts it once, under the claim's lock.
        ClaimLease.objects.filter(claim_id=claim.pk, reviewer=reviewer).delete()
        # Relabeling a claim a lead sent back resolves the send-back (issue 25 §4): one UPDATE.
        reworked = SendBack.objects.filter(claim_id=claim.pk, reviewer=reviewer, resolved_at__isnull=True).update(
            resolved_at=timezone.now(), resolution=Resolution.RELABEL)
        # The one query the audit log adds to a save (its run is the one read above).
        detail = {"value": value, "previous": current.value if current is not None else None}
        if reworked:
            detail["resolves_send_back"] = True
        audit_record(action=AuditAction.LABEL, actor=reviewer, run=claim.answer.run,
                     target=claim_target(claim, index=index), claim_id=claim.pk, detail=detail)
        if reworked:
            audit_record(action=AuditAction.REWORK, actor=reviewer, run=claim.answer.run,
                         target=claim_target(claim, index=index), claim_id=claim.pk,
                         detail={"resolution": Resolution.RELABEL.value, "value": value,
                                 "previous": current.value if current is not None else None})
        return label


def label_undo(*, claim: Claim, reviewer: Reviewer) -> Label | None:
    """Undo ``reviewer``'s current label on ``claim`` by flipping ``is_current``
    (SPEC §3: every label stays in history).

    The current label stops being current and stays in history (a non-current,
    non-stale label newer than the current one reads as "undone"); the label
    it replaced (``supersedes``), if still on the same claim revision, becomes
    current again and is returned. ``None`` means the claim is back in the
    reviewer's queue. Undoing again walks further back through history.

    Raises ValidationError when the reviewer has no current label on the claim.
    """
    with transaction.atomic():
        locked = _lock_claim(claim)
        current = (
            Label.objects.select_for_update(of=("self",))
            .filter(claim=locked, reviewer=reviewer, is_current=True).first()
        )
        if current is None:
            raise ValidationError(f"You have no label on claim {locked.index} to undo.", code="nothing_to_undo")
        # The label this one replaced, not merely the one before it: after
        # save, undo, save, undo the first label comes back, never the undone one.
        previous = (
            Label.objects.select_for_update(of=("self",))
            .filter(pk=current.supersedes_id, is_stale=False, claim_revision=locked.revision).first()
            if current.supersedes_id is not None else None
        )
        current.is_current = False
        current.save(update_fields=["is_current"])
        audit_record(action=AuditAction.UNDO, actor=reviewer, run=locked.answer.run, target=claim_target(locked),
                     claim_id=locked.pk,
                     detail={"undone": current.value, "restored": previous.value if previous is not None else None})
        if previous is None:
            return None
        previous.is_current = True
        previous.save(update_fields=["is_current"])
        return previous


def _check_revision(claim: Claim, base_revision: int | None) -> None:
    if base_revision is not None and base_revision != claim.revision:
        raise ValidationError(
            f"Claim {claim.index} was changed by someone else after you opened it: nothing was changed. "
            "Read it as it is now and try again.", code="conflict",
        )


def _stale_labels(claim: Claim) -> int:
    """Mark every label of ``claim`` stale (SPEC §3: kept in history, no longer current); a lead's
    adjudication of the claim as it was ends too, and so do its citations' judgments (SPEC §4.3b),
    its gold label and the send-backs of its labels (issue 25: they were about the claim as it was)."""
    Adjudication.objects.filter(claim=claim, is_current=True).update(is_current=False)
    GoldClaim.objects.filter(claim=claim, is_current=True).update(is_current=False)
    SendBack.objects.filter(claim=claim, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolution=Resolution.CLAIM_CHANGED)
    CitationJudgment.objects.filter(citation__claim=claim, is_stale=False).update(is_current=False, is_stale=True)
    return Label.objects.filter(claim=claim, is_stale=False).update(is_current=False, is_stale=True)


def _shift_indexes(*, answer_id: int, from_index: int, delta: int) -> None:
    """Add ``delta`` to the index of the answer's claims at ``from_index`` and above.

    PostgreSQL checks ``unique (answer, index)`` row by row and the column is
    unsigned, so the block first moves above every existing index, then to its
    final place: no two claims ever share an index on the way.
    """
    block = Claim.objects.filter(answer_id=answer_id, index__gte=from_index)
    top = Claim.objects.filter(answer_id=answer_id).aggregate(top=Max("index"))["top"] or 0
    out_of_the_way = top + abs(delta) + 1
    if block.update(index=F("index") + out_of_the_way):
        Claim.objects.filter(answer_id=answer_id, index__gt=top).update(
            index=F("index") - out_of_the_way + delta
        )


def _locate(answer_text: str, text: str, *, near: int | None,
            within: tuple[int | None, int | None] = (None, None)) -> tuple[int | None, int | None]:
    """Offsets of ``text`` in the answer, the occurrence closest to ``near``; ``(None, None)``
    when the claim text is not a verbatim part of the answer. An occurrence inside
    ``within`` (the ``start, end`` a claim had before a split) wins over any other."""
    if not text:
        return None, None
    starts = []
    index = answer_text.find(text)
    while index >= 0:
        starts.append(index)
        index = answer_text.find(text, index + 1)
    if not starts:
        return None, None
    low, high = within
    if low is not None and high is not None:
        starts = [s for s in starts if low <= s and s + len(text) <= high] or starts
    best = min(starts, key=lambda s: abs(s - near)) if near is not None else starts[0]
    return best, best + len(text)


def claim_split(
    *, claim: Claim, at: int | None = None, first_text: str | None = None, second_text: str | None = None,
    first_citation_ids: Iterable[int] | None = None, second_citation_ids: Iterable[int] | None = None,
    base_revision: int | None = None, actor: Reviewer | None = None,
) -> tuple[Claim, Claim]:
    """Split ``claim`` into two claims that follow each other (SPEC §3: claims are atomic).

    Where: either ``at`` (a character offset into the claim text, 0 < at <
    len) or the text of each part (``first_text``, ``second_text``). Which
    citations each part keeps: ids of the claim's citations
    (default: both parts keep all); a citation may go to both parts but must
    go to at least one. The first part keeps the claim's id, gets revision + 1
    and its labels become stale; the second part is a new claim at ``index +
    1`` (revision 1), later claims move down by one. Offsets are recomputed:
    a part that is verbatim answer text (as ``labeling.highlight.suggest_split``
    and a split ``at`` an offset make them) gets the ``start``/``end`` of its
    occurrence inside the claim's old span (else the one nearest to it), so
    ``answer.text[start:end] == part``; ``None`` when a part is not verbatim
    answer text. Line breaks sent as CRLF count as LF. A part left without
    citations is UNCITED.

    Returns ``(first, second)``. Raises ValidationError for a bad offset, an
    empty part, a citation that is not the claim's, a dropped citation, or a
    ``base_revision`` (the revision the reviewer saw) that is no longer current.
    ``actor`` (None: the command line) is who the audit log names.
    """
    with transaction.atomic():
        _claims_will_change(claim)
        locked = _lock_claim(claim)
        _check_revision(locked, base_revision)
        if at is not None:
            if not 0 < at < len(locked.text):
                raise ValidationError(
                    f"Split claim {locked.index} at a character between 1 and {len(locked.text) - 1} "
                    f"(got {at}).", code="bad_offset",
                )
            first, second = locked.text[:at].strip(), locked.text[at:].strip()
        else:
            # A browser sends a textarea's line breaks as CRLF; the answer text has LF.
            first, second = ((part or "").replace("\r\n", "\n").strip() for part in (first_text, second_text))
        if not first or not second:
            raise ValidationError(
                f"Both parts of claim {locked.index} need text: write what each part asserts.", code="empty_part"
            )
        citations = list(locked.citations.order_by("position"))
        by_id = {c.pk: c for c in citations}
        keep_first = set(by_id) if first_citation_ids is None else {int(i) for i in first_citation_ids}
        keep_second = set(by_id) if second_citation_ids is None else {int(i) for i in second_citation_ids}
        unknown = (keep_first | keep_second) - set(by_id)
        if unknown:
            raise ValidationError(
                f"Citation(s) {sorted(unknown)} do not belong to claim {locked.index}.", code="unknown_citation"
            )
        dropped = [c.cited_id for c in citations if c.pk not in keep_first and c.pk not in keep_second]
        if dropped:
            raise ValidationError(
                f"Citation(s) [{', '.join(dropped)}] would be lost: give each citation to the first part, "
                "the second part, or both.", code="dropped_citation",
            )
        answer_text = locked.answer.text
        near, span = locked.start, (locked.start, locked.end)
        first_start, first_end = _locate(answer_text, first, near=near, within=span)
        second_start, second_end = _locate(
            answer_text, second, near=first_end if first_end is not None else near, within=span
        )
        _shift_indexes(answer_id=locked.answer_id, from_index=locked.index + 1, delta=1)
        _stale_labels(locked)
        locked.text, locked.start, locked.end = first, first_start, first_end
        locked.revision += 1
        locked.save(update_fields=["text", "start", "end", "revision"])
        Citation.objects.filter(claim=locked).exclude(pk__in=keep_first).delete()
        new = Claim.objects.create(
            answer_id=locked.answer_id, index=locked.index + 1, text=second, start=second_start,
            end=second_end, revision=1,
        )
        Citation.objects.bulk_create([
            Citation(claim=new, passage_id=c.passage_id, position=position, cited_id=c.cited_id, span=c.span,
                     fabricated=c.fabricated)
            for position, c in enumerate(c for c in citations if c.pk in keep_second)
        ])
        audit_record(action=AuditAction.SPLIT, actor=actor, run=locked.answer.run, target=claim_target(locked),
                     claim_id=locked.pk, detail={"first": first, "second": second, "second_claim_id": new.pk})
        return locked, new


def claim_merge(*, claim: Claim, other: Claim, base_revision: int | None = None,
                actor: Reviewer | None = None) -> Claim:
    """Merge two adjacent claims of one answer into the first (SPEC §3).

    The merged claim keeps the lower index and id; its text is the answer text
    from the first claim's start to the second's end when both are located,
    else the two texts joined by a space. It gets the citations of both
    (a citation of the same passage with the same span is kept once),
    revision + 1, and every label of both claims becomes stale and stays in its
    history. Later claims move up by one.

    Returns the merged claim. Raises ValidationError when the claims are the
    same, belong to different answers or are not neighbours, or when
    ``base_revision`` (the revision of ``claim`` the reviewer saw) is stale.
    ``actor`` (None: the command line) is who the audit log names.
    """
    with transaction.atomic():
        _claims_will_change(claim)
        # Locked in id order, as every writer locks claims (no circular wait), then taken in index order.
        pair = sorted(
            Claim.objects.select_for_update(of=("self",)).select_related("answer__run")
            .filter(pk__in=[claim.pk, other.pk]).order_by("pk"), key=lambda c: c.index,
        )
        if claim.pk != other.pk and len(pair) < 2:
            raise claim_gone(claim if all(c.pk != claim.pk for c in pair) else other)
        if len(pair) != 2 or pair[0].answer_id != pair[1].answer_id:
            raise ValidationError("Only two different claims of the same answer can be merged.", code="not_pair")
        first, second = pair
        _check_revision(next(c for c in pair if c.pk == claim.pk), base_revision)
        if second.index != first.index + 1:
            raise ValidationError(
                f"Claims {first.index} and {second.index} are not neighbours: merge adjacent claims only.",
                code="not_adjacent",
            )
        answer_text = first.answer.text
        if first.start is not None and second.start is not None and first.end <= second.start:
            first.text = answer_text[first.start:second.end]
            first.end = second.end
        else:
            first.text = f"{first.text.rstrip()} {second.text.lstrip()}"
            first.start, first.end = _locate(answer_text, first.text, near=first.start)
        _stale_labels(first)
        _stale_labels(second)
        Label.objects.filter(claim=second).update(claim=first)
        kept = {(c.passage_id, c.cited_id, c.span) for c in first.citations.all()}
        position = (first.citations.aggregate(top=Max("position"))["top"] or 0) + 1
        for citation in second.citations.order_by("position"):
            key = (citation.passage_id, citation.cited_id, citation.span)
            if key in kept:
                continue
            kept.add(key)
            Citation.objects.filter(pk=citation.pk).update(claim=first, position=position)
            position += 1
        second_id = second.pk
        second.delete()
        first.revision += 1
        first.save(update_fields=["text", "start", "end", "revision"])
        _shift_indexes(answer_id=first.answer_id, from_index=second.index + 1, delta=-1)
        audit_record(action=AuditAction.MERGE, actor=actor, run=first.answer.run,
                     target=f"{first.answer.question_key} · claims {first.index} and {second.index}",
                     claim_id=first.pk, detail={"merged_claim_id": second_id, "text": first.text[:300]})
        return first


def claim_edit(*, claim: Claim, text: str, base_revision: int | None = None, actor: Reviewer | None = None) -> Claim:
    """Replace the text of ``claim`` (SPEC §3: a changed claim loses its labels' validity).

    Same text (after stripping): nothing changes. Otherwise revision + 1, every
    label becomes stale (kept in history) and offsets are recomputed (``None``
    when the new text is not verbatim answer text). Raises ValidationError on
    an empty text or a stale ``base_revision``. ``actor`` (None: the command
    line) is who the audit log names.
    """
    text = (text or "").strip()
    if not text:
        raise ValidationError(
            "A claim needs text. To drop a claim, merge it into its neighbour.", code="empty_text"
        )
    with transaction.atomic():
        locked = _lock_claim(claim)
        _check_revision(locked, base_revision)
        if text == locked.text:
            return locked
        _stale_labels(locked)
        audit_record(action=AuditAction.EDIT, actor=actor, run=locked.answer.run, target=claim_target(locked),
                     claim_id=locked.pk, detail={"from": locked.text[:300], "to": text[:300]})
        locked.text = text
        locked.start, locked.end = _locate(locked.answer.text, text, near=locked.start)
        locked.revision += 1
        locked.save(update_fields=["text", "start", "end", "revision"])
        return locked


def reviewer_create(
    *, username: str, password: str | None = None, project_slugs: list[str] | None = None,
    role: str = Role.REVIEWER,
) -> tuple[Reviewer, str]:
    """Create a human reviewer who can log in, member of the given projects with ``role``.

    ``project_slugs`` ``None`` (or empty) means every existing project. When
    ``password`` is ``None`` a random one is generated. Returns ``(reviewer,
    password)`` so the caller can show a generated password once.

    Raises ValidationError for an invalid or taken name, a password the
    validators reject, an unknown role, or unknown project slugs (nothing is
    created then).
    """
    role_checked(role)
    # The normal form the login form applies too (labeling.names): "ｒｅｖ０１" is rev01.
    username = Reviewer.normalize_username(username or "")
    if not username:
        raise ValidationError("Give the reviewer a name.", code="empty_name")
    try:
        Reviewer.username_validator(username)
    except ValidationError:
        raise ValidationError(
            f"Reviewer name {username!r} may contain only letters, digits and @/./+/-/_.", code="bad_name"
        ) from None
    if len(username) > Reviewer._meta.get_field("username").max_length:
        raise ValidationError(f"Reviewer name {username!r} is too long (150 characters at most).", code="bad_name")
    with transaction.atomic():
        if Reviewer.objects.filter(username=username).exists():
            raise ValidationError(f"Reviewer {username!r} already exists.", code="exists")
        if project_slugs:
            projects = list(Project.objects.filter(slug__in=project_slugs))
            unknown = sorted(set(project_slugs) - {p.slug for p in projects})
            if unknown:
                raise ValidationError(f"Unknown project(s): {', '.join(unknown)}.", code="unknown_project")
        else:
            projects = list(Project.objects.all())
        reviewer = Reviewer(username=username, kind=ReviewerKind.HUMAN)
        if password is None:
            password = secrets.token_urlsafe(12)
        validate_password(password, reviewer)
        reviewer.set_password(password)
        reviewer.save()
        Membership.objects.bulk_create([Membership(project=p, reviewer=reviewer, role=role) for p in projects])
        return reviewer, password


# ------------------------------------------------------------------ runs


def run_manage_allowed(*, user: Reviewer, run: Run) -> bool:
    """Whether ``user`` may rename or delete ``run``: a lead of its project
    (or a superuser), by the role table of ``labeling.selectors.may``. The one
    place that decides it (the run page shows the buttons by it, the services
    refuse by it). A run from ``labeling.views.projects.run_for`` carries the
    user's role already; otherwise one query."""
    role = getattr(run, "my_role", None)
    if role is None:
        role = visible_projects(user=user).filter(pk=run.project_id).values_list("my_role", flat=True).first()
    return may(role, LEAD)


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
        role = getattr(project, "my_role", None)
        if role is None:
            role = visible_projects(user=user).filter(pk=project.pk).values_list("my_role", flat=True).first()
        if not may(role, LEAD):
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
