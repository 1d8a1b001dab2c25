"""Writes of a project's members and their roles (SPEC §2 "role").

Every service is keyword-only, runs inside ``transaction.atomic`` and raises
``ValidationError`` with a message a lead can act on; a project always keeps
at least one lead (else nobody could manage its members again but a
superuser), so removing or demoting the last one is refused.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from labeling.models import Assignment, Membership, Project, Reviewer, ReviewerKind, Role, Run
from labeling.permissions import LABEL, LEAD, may, roles_that_may
from labeling.runs import labels_changed


def role_checked(role: str) -> str:
    """``role`` when it is one of ``Role``; ValidationError (code ``bad_role``) otherwise."""
    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}: choose one of {', '.join(Role.values)}.", code="bad_role")
    return role


def _keep_a_lead(project: Project, membership: Membership) -> None:
    """Refuse to take the lead role from ``membership`` when it is the project's last lead."""
    leads = Membership.objects.select_for_update().filter(project=project, role__in=roles_that_may(LEAD))
    if may(membership.role, LEAD) and not leads.exclude(pk=membership.pk).exists():
        raise ValidationError(
            f"{membership.reviewer.username} is the last lead of project {project.slug}: make another member "
            "lead first, so someone can still manage the project.", code="last_lead")


def membership_set(*, project: Project, reviewer: Reviewer, role: str) -> Membership:
    """Make ``reviewer`` a member of ``project`` with ``role`` (add them, or change
    their role). Returns the membership.

    Raises ValidationError for an unknown role, an imported labeler (kind
    ``external``/``model``: they cannot log in, so a role means nothing), or
    demoting the project's last lead.
    """
    role = role_checked(role)
    if reviewer.kind != ReviewerKind.HUMAN:
        raise ValidationError(
            f"{reviewer.username} is an imported labeler ({reviewer.get_kind_display()}), not a person who "
            "logs in: only human reviewers are members.", code="not_human")
    with transaction.atomic():
        membership = (Membership.objects.select_for_update().select_related("reviewer")
                      .filter(project=project, reviewer=reviewer).first())
        # No stamp: no figure reads who is a member or their role (a blind reviewer's own figures
        # are keyed by their name; tests/test_figure_cache.py holds every figure to that).
        if membership is None:
            return Membership.objects.create(project=project, reviewer=reviewer, role=role)
        if membership.role != role:
            if not may(role, LEAD):
                _keep_a_lead(project, membership)
            membership.role = role
            membership.save(update_fields=["role"])
        return membership


def membership_remove(*, project: Project, reviewer: Reviewer) -> None:
    """Remove ``reviewer`` from ``project`` (their labels stay: history is never
    rewritten). Raises ValidationError when they are not a member, or are the
    project's last lead."""
    with transaction.atomic():
        membership = (Membership.objects.select_for_update().select_related("reviewer")
                      .filter(project=project, reviewer=reviewer).first())
        if membership is None:
            raise ValidationError(f"{reviewer.username} is not a member of project {project.slug}.",
                                  code="not_member")
        _keep_a_lead(project, membership)
        membership.delete()


def project_settings_set(*, project: Project, judge_citations: bool,
                         require_justification_for_supported: bool) -> Project:
    """Set how ``project``'s reviewers label (the project's settings page, for
    leads; the caller checks the role): ``judge_citations`` asks for a
    judgment of each citation before the claim's label (SPEC §4.3b; off: the
    one-key SUPPORTED/UNSUPPORTED flow), ``require_justification_for_supported``
    asks for a reason with SUPPORTED too. Labels and judgments already given
    stay as they are. Returns the project."""
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(
            judge_citations=bool(judge_citations),
            require_justification_for_supported=bool(require_justification_for_supported))
        # No stamp: these settings change how reviewers label from now on, not any figure.
    project.judge_citations = bool(judge_citations)
    project.require_justification_for_supported = bool(require_justification_for_supported)
    return project


def run_settings_set(*, run: Run, overlap: int, blind: bool | None = None) -> Run:
    """Set how many reviewers each claim of ``run`` needs (``overlap``, 1–5) and
    whether labeling is blind (``None``: blind exactly when overlap > 1).

    Raises ValidationError for an overlap outside 1–5.
    """
    if not isinstance(overlap, int) or not 1 <= overlap <= 5:
        raise ValidationError(f"Reviewers per claim must be a whole number from 1 to 5, not {overlap!r}.",
                              code="bad_overlap")
    with transaction.atomic():
        run.overlap, run.blind = overlap, blind
        run.save(update_fields=["overlap", "blind"])
    return run


def run_assign(*, run: Run, reviewers: list[Reviewer]) -> list[Reviewer]:
    """Make ``reviewers`` exactly the reviewers who work on ``run`` (empty: every
    member who may label). Returns them.

    Raises ValidationError when one of them is not a lead or reviewer of the
    run's project (a viewer cannot label; a non-member cannot open the run).
    """
    roles = dict(Membership.objects.filter(project_id=run.project_id, reviewer__in=reviewers)
                 .values_list("reviewer_id", "role"))
    refused = sorted(r.username for r in reviewers if not may(roles.get(r.pk), LABEL))
    if refused:
        raise ValidationError(f"Only leads and reviewers of the project can be assigned; not: {', '.join(refused)}.",
                              code="not_assignable")
    with transaction.atomic():
        Assignment.objects.filter(run=run).exclude(reviewer__in=reviewers).delete()
        Assignment.objects.bulk_create([Assignment(run=run, reviewer=r) for r in reviewers], ignore_conflicts=True)
        # The assigned reviewers are the counted ones of the run's agreement (SPEC §4.4).
        labels_changed(run=run, labels=False)
    return reviewers
