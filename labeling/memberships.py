"""Writes of a project's members and their roles (SPEC §2 "role").

Every service is keyword-only, runs inside ``transaction.atomic`` and raises
``ValidationError`` with a message a lead can act on; a project always keeps
at least one lead (else nobody could manage its members again but a
superuser), so removing or demoting the last one is refused.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from labeling.models import Membership, Project, Reviewer, ReviewerKind, Role


def _role(role: str) -> str:
    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}: choose one of {', '.join(Role.values)}.", code="bad_role")
    return role


def _keep_a_lead(project: Project, membership: Membership) -> None:
    """Refuse to take the lead role from ``membership`` when it is the project's last lead."""
    leads = Membership.objects.select_for_update().filter(project=project, role=Role.LEAD)
    if membership.role == Role.LEAD and not leads.exclude(pk=membership.pk).exists():
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
    role = _role(role)
    if reviewer.kind != ReviewerKind.HUMAN:
        raise ValidationError(
            f"{reviewer.username} is an imported labeler ({reviewer.get_kind_display()}), not a person who "
            "logs in: only human reviewers are members.", code="not_human")
    with transaction.atomic():
        membership = (Membership.objects.select_for_update().select_related("reviewer")
                      .filter(project=project, reviewer=reviewer).first())
        if membership is None:
            return Membership.objects.create(project=project, reviewer=reviewer, role=role)
        if membership.role != role:
            if role != Role.LEAD:
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
