"""Claim edits of the labeling screen (SPEC §2 "claim"): split a claim in two, merge
it with the next, reword it.

Each service locks run, answer and claim in that order (``labeling.db``), checks the
claim's revision against the one the reviewer saw, and marks the labels the edit
made stale; nothing is written when it raises ``ValidationError``.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Max

from labeling.audit import audit_record, claim_target
from labeling.models import (
    Answer,
    AuditAction,
    Citation,
    Claim,
    Label,
    Reviewer,
)
from labeling.review.label_writes import check_revision, claim_gone, lock_claim, mark_labels_stale
from labeling.runs import claims_changed


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
    a part that is verbatim answer text (as ``labeling.review.highlight.suggest_split``
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
        locked = lock_claim(claim)
        check_revision(locked, base_revision)
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
        mark_labels_stale(locked)
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
        check_revision(next(c for c in pair if c.pk == claim.pk), base_revision)
        if second.index != first.index + 1:
            raise ValidationError(
                f"Claims {first.index} and {second.index} are not neighbours: merge adjacent claims only.",
                code="not_adjacent",
            )
        # The claims to renumber are locked before anything is written: deleting ``second``
        # deletes its leases, and a lease_take holding a later claim's row would wait for
        # that deletion while the renumbering waited for its row (a deadlock).
        list(Claim.objects.select_for_update(no_key=True).filter(answer_id=first.answer_id, index__gt=second.index)
             .order_by("pk").values_list("pk", flat=True))
        answer_text = first.answer.text
        if first.start is not None and second.start is not None and first.end <= second.start:
            first.text = answer_text[first.start:second.end]
            first.end = second.end
        else:
            first.text = f"{first.text.rstrip()} {second.text.lstrip()}"
            first.start, first.end = _locate(answer_text, first.text, near=first.start)
        mark_labels_stale(first)
        mark_labels_stale(second)
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
        locked = lock_claim(claim)
        check_revision(locked, base_revision)
        if text == locked.text:
            return locked
        mark_labels_stale(locked)
        audit_record(action=AuditAction.EDIT, actor=actor, run=locked.answer.run, target=claim_target(locked),
                     claim_id=locked.pk, detail={"from": locked.text[:300], "to": text[:300]})
        locked.text = text
        locked.start, locked.end = _locate(locked.answer.text, text, near=locked.start)
        locked.revision += 1
        locked.save(update_fields=["text", "start", "end", "revision"])
        return locked
