"""Probability samples of a run's answers (SPEC §4.6): drawing and
growing one, a lead's target half-width, and how far the sample is labeled.

A sample is what makes the humans' figures estimates: Citelab draws the
answers uniformly at random from a permutation seeded with a stored seed, so
the draw can be repeated and checked; a hand-picked subset never is one.

Writes (:func:`sample_draw`, :func:`sample_target_set`) lock the run row,
record an audit event (``sample``) and run in one transaction. Reads
(:func:`sample_status`) count in three queries.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery

from labeling.audit import audit_record
from labeling.models import (
    Adjudication,
    Answer,
    AuditAction,
    Citation,
    Claim,
    LabelValue,
    Reviewer,
    Run,
    Sample,
    SampleMember,
)
from labeling.models.counted import counted_q, counted_values
from labeling.runs import labels_changed
from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)

# Seeds Citelab picks: small enough to type back (``--seed``) and to fit every integer column.
_SEED_BOUND = 2**31
MAX_SEED = 2**63 - 1


def permutation(answer_ids: list[int], seed: int) -> list[int]:
    """``answer_ids`` (the run's answers in ``question_id`` order) shuffled by
    numpy's PCG64 generator seeded with ``seed``: the sample order (SPEC §4.6)."""
    order = np.random.default_rng(seed).permutation(len(answer_ids))
    return [answer_ids[i] for i in order]


@dataclass(frozen=True)
class DrawResult:
    """What :func:`sample_draw` did: the sample, how many answers it holds now
    and how many this draw added (0: it already held that many)."""

    sample: Sample
    size: int
    added: int


def sample_draw(*, run: Run, answers: int, seed: int | None = None, actor: Reviewer | None = None) -> DrawResult:
    """Draw a probability sample of ``answers`` answers of ``run``, or grow its
    sample to that many (SPEC §4.6).

    The first draw stores ``seed`` (a random one when ``None``); the sample is
    the first ``answers`` of :func:`permutation` of the run's answers. Growing
    keeps every member and appends the next answers of the permutation of the
    run's answers now (the same ones when the run is unchanged). Asking for the
    size it already has adds nothing and records nothing.

    Raises ValidationError (keyed by ``answers`` or ``seed``) when ``answers`` is below 1, above the run's answers
    or below the sample's size (a sample never shrinks), or ``seed`` is
    negative, too large or differs from the stored one.
    """
    if answers < 1:
        raise ValidationError({"answers": f"a sample needs at least 1 answer, not {answers}"})
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise ValidationError({"seed": f"the seed must be a whole number from 0 to {MAX_SEED}, not {seed}"})
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).exists()
        answer_ids = list(Answer.objects.filter(run=run).order_by("question_key").values_list("pk", flat=True))
        if answers > len(answer_ids):
            raise ValidationError({"answers": f"run {run.name!r} has {len(answer_ids)} answers: a sample of "
                                              f"{answers} answers cannot be drawn from it"})
        sample = Sample.objects.filter(run=run).first()
        if sample is not None and seed is not None and seed != sample.seed:
            raise ValidationError({"seed": f"the sample of run {run.name!r} was drawn with seed {sample.seed}: "
                                           "growing it keeps that seed (leave the seed out)"})
        members = [] if sample is None else list(sample.members.values_list("answer_id", flat=True))
        if len(members) > answers:
            raise ValidationError({"answers": f"the sample of run {run.name!r} already holds {len(members)} "
                                              f"answers: a sample only grows (ask for more than {len(members)})"})
        if sample is not None and len(members) == answers:
            return DrawResult(sample, answers, 0)
        if sample is None:
            sample = Sample.objects.create(run=run, seed=secrets.randbelow(_SEED_BOUND) if seed is None else seed,
                                           created_by=actor)
        taken = set(members)
        fresh = [pk for pk in permutation(answer_ids, sample.seed) if pk not in taken][:answers - len(members)]
        last = sample.members.order_by("-position").values_list("position", flat=True).first() or 0
        SampleMember.objects.bulk_create([SampleMember(sample=sample, answer_id=pk, position=last + i)
                                          for i, pk in enumerate(fresh, start=1)])
        verb = "drew" if not members else "grew"
        labels_changed(run=run, labels=False)
        audit_record(action=AuditAction.SAMPLE, actor=actor, run=run, target=f"sample of {answers} answers",
                     detail={"event": verb, "seed": sample.seed, "answers": answers, "added": len(fresh)})
    return DrawResult(sample, answers, len(fresh))


def sample_target_set(*, run: Run, half_width: float | None, actor: Reviewer | None = None) -> Sample:
    """Set (``None``: clear) the target half-width of the support estimate of
    ``run``'s sample (SPEC §4.6). Raises ValidationError keyed by ``sample``
    when the run has none, by ``target_half_width`` when ``half_width`` is not
    between 0 and 0.5 (exclusive)."""
    if half_width is not None and not 0 < half_width < 0.5:
        raise ValidationError({"target_half_width": "the target half-width must be between 0 and 0.5 (e.g. "
                                                    f"0.03), not {half_width:g}"})
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).exists()
        sample = Sample.objects.filter(run=run).first()
        if sample is None:
            raise ValidationError({"sample": f"run {run.name!r} has no sample: draw one before setting its "
                                             "target"})
        before = sample.target_half_width
        sample.target_half_width = half_width
        sample.save(update_fields=["target_half_width"])
        labels_changed(run=run, labels=False)
        audit_record(action=AuditAction.SAMPLE, actor=actor, run=run,
                     target=f"target ±{half_width:g}" if half_width is not None else "no target",
                     detail={"event": "target", "target_half_width": half_width, "previous": before})
    return sample


@dataclass(frozen=True)
class SampleStatus:
    """A run's sample at a glance: ``size`` answers, ``fully_labeled`` of them
    with a human label that counts on every cited claim (SPEC §4.6), the
    ``seed`` and the ``target_half_width`` (or None)."""

    size: int
    fully_labeled: int
    seed: int
    target_half_width: float | None


def sample_of(run: Run) -> Sample | None:
    """The run's sample, or ``None`` (one query)."""
    return Sample.objects.filter(run=run).first()


def member_answer_ids(sample: Sample) -> list[int]:
    """The sample's answers in sample order (one query)."""
    return list(sample.members.order_by("position").values_list("answer_id", flat=True))


@dataclass(frozen=True)
class HumanClaim:
    """One factual claim of a sampled answer with the human label that counts
    (SPEC §4.4): ``label`` is the lead's adjudication, else the value every
    current human reviewer (kinds human and external; never a judge, promoted
    or not) gives, else ``None`` (unlabeled or disputed: pending). ``cited``:
    the claim has a citation."""

    answer_id: int
    claim_id: int
    cited: bool
    label: str | None


def human_claims(answer_ids: list[int]) -> list[HumanClaim]:
    """The factual claims of ``answer_ids`` with their human label (one query)."""
    if not answer_ids:
        return []
    # The humans' labels alone (labeling.models.counted.counted_q without a promoted judge): the
    # estimates set them against a judge's (SPEC §4.6).
    supported, unsupported = counted_values(counted_q())
    adjudication = Adjudication.objects.filter(claim=OuterRef("pk"), is_current=True).values("value")[:1]
    rows = (Claim.objects.filter(answer_id__in=answer_ids, factual=True)
            .annotate(cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))),
                      adjudicated=Subquery(adjudication),
                      supported=supported, unsupported=unsupported)
            .order_by("answer_id", "index")
            .values_list("answer_id", "pk", "cited", "adjudicated", "supported", "unsupported"))
    claims = []
    for answer_id, claim_id, cited, adjudicated, supported, other in rows:
        if not cited:
            label = LabelValue.UNCITED.value  # SPEC §3: whoever labeled it
        elif adjudicated:
            label = adjudicated
        elif supported != other:  # every human gives one value
            label = LabelValue.SUPPORTED.value if supported else LabelValue.UNSUPPORTED.value
        else:
            label = None
        claims.append(HumanClaim(answer_id, claim_id, bool(cited), label))
    return claims


def pending_answer_ids(claims: list[HumanClaim]) -> set[int]:
    """Answers of ``claims`` (:func:`human_claims`) with a cited claim still pending."""
    return {claim.answer_id for claim in claims if claim.cited and claim.label is None}


def sample_status(run: Run) -> SampleStatus | None:
    """The run's sample with how many of its answers are fully labeled, or
    ``None`` without a sample. Three queries (the sample, its members, their
    claims' human labels); one without a sample."""
    sample = sample_of(run)
    if sample is None:
        return None
    members = member_answer_ids(sample)
    pending = pending_answer_ids(human_claims(members))
    return SampleStatus(len(members), len(members) - len(pending), sample.seed, sample.target_half_width)
