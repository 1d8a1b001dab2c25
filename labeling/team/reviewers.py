"""Creating reviewer accounts (SPEC §2 "reviewer") with their project roles."""

from __future__ import annotations

import secrets

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from labeling.models import (
    Membership,
    Project,
    Reviewer,
    ReviewerKind,
    Role,
)
from labeling.team.memberships import role_checked


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
