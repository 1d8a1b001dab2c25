"""Project tokens for the HTTP API (SPEC §6): made by a lead for a reviewer
(or a bot account) with a role and an expiry, shown once, stored hashed,
revocable, listed with their last use.

A token reads ``clt_`` + 43 URL-safe characters (256 random bits). Only its
SHA-256 is kept (``ApiToken.digest``): a lookup is one indexed query, and a
leaked database leaks no usable token. What a token may do is its role, but
never more than its reviewer's role in the project at the time of the
request: a reviewer demoted to viewer, or removed from the project, takes
their tokens down with them.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import CharField, OuterRef, Subquery
from django.utils import timezone

from labeling.models import ApiToken, Membership, Project, Reviewer, ReviewerKind
from labeling.names import normalize_name
from labeling.permissions import LEAD, acting_role, lower_role, may, member_role
from labeling.team.memberships import role_checked

TOKEN_PREFIX = "clt_"
PREFIX_SHOWN = 12
DEFAULT_EXPIRY_DAYS = 90
MAX_EXPIRY_DAYS = 3650
# How stale ``last_used_at`` may get: refreshing it on every request would make every read a write.
LAST_USED_EVERY = timedelta(minutes=1)


def token_digest(secret: str) -> str:
    """SHA-256 of a token, hex (64 characters): what ``ApiToken.digest`` stores."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: the row, and the secret to show once (never stored)."""

    token: ApiToken
    secret: str


def _clean_name(name: str, *, reviewer: Reviewer) -> str:
    name = normalize_name(name or "")
    if not name:
        name = f"{reviewer.username}-{timezone.now():%Y%m%d-%H%M%S}"
    if len(name) > ApiToken._meta.get_field("name").max_length:
        raise ValidationError(f"Token name {name[:40]!r}… is too long (100 characters at most).", code="bad_name")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise ValidationError("A token name cannot hold control characters.", code="bad_name")
    return name


def token_create(
    *, project: Project, reviewer: Reviewer, created_by: Reviewer | None, name: str = "", role: str | None = None,
    expires_days: int = DEFAULT_EXPIRY_DAYS,
) -> IssuedToken:
    """Make a token for ``reviewer`` in ``project`` and return it with its secret.

    ``role`` defaults to the reviewer's role in the project and may not exceed
    it; ``expires_days`` (1–3650) counts from now; ``name`` (default
    ``<reviewer>-<UTC time>``) must be unique among the project's tokens that
    are not revoked. ``created_by`` is the lead making it (``None``: the
    command line).

    Raises PermissionDenied when ``created_by`` is not a lead of the project;
    ValidationError (nothing saved) when the reviewer is not a member (nor a
    superuser), is an imported labeler or inactive, for an unknown role or
    one above the reviewer's, an expiry outside 1–3650 days, or a taken name.
    """
    if created_by is not None and not may(member_role(project_id=project.pk, reviewer=created_by), LEAD):
        raise PermissionDenied(f"Only a lead of project {project.slug!r} makes its tokens.")
    if reviewer.kind != ReviewerKind.HUMAN or not reviewer.is_active:
        raise ValidationError(f"{reviewer.username} cannot hold a token: only active reviewers who are members "
                              "of the project can.", code="not_member")
    held = member_role(project_id=project.pk, reviewer=reviewer)
    if held is None:
        raise ValidationError(f"{reviewer.username} is not a member of project {project.slug}: add them on the "
                              "Members page (or with add_reviewer) first.", code="not_member")
    role = held if role is None else role_checked(role)
    if lower_role(role, held) != role:
        raise ValidationError(f"{reviewer.username} is a {held} of project {project.slug}: their token cannot be "
                              f"a {role}'s.", code="role_above_member")
    if isinstance(expires_days, bool) or not isinstance(expires_days, int) or not 1 <= expires_days <= MAX_EXPIRY_DAYS:
        raise ValidationError(f"A token expires after 1 to {MAX_EXPIRY_DAYS} days, not {expires_days!r}.",
                              code="bad_expiry")
    name = _clean_name(name, reviewer=reviewer)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            if ApiToken.objects.filter(project=project, name=name, revoked_at__isnull=True).exists():
                raise ValidationError(f"Project {project.slug} already has a token named {name!r}: choose another "
                                      "name or revoke that one.", code="exists")
            token = ApiToken.objects.create(
                project=project, reviewer=reviewer, name=name, role=role, prefix=secret[:PREFIX_SHOWN],
                digest=token_digest(secret), created_by=created_by,
                expires_at=timezone.now() + timedelta(days=expires_days))
    except IntegrityError:  # the same name taken by a concurrent request
        raise ValidationError(f"Project {project.slug} already has a token named {name!r}.", code="exists") from None
    return IssuedToken(token=token, secret=secret)


def bot_create(*, project: Project, name: str, role: str, created_by: Reviewer) -> Reviewer:
    """A bot account: a reviewer who cannot log in (no usable password) and is a
    member of ``project`` with ``role``, to hold a token for a CI job.

    Raises PermissionDenied when ``created_by`` is not a lead of the project,
    ValidationError for a bad or taken name or an unknown role (nothing saved).
    """
    from labeling.team.reviewers import reviewer_create

    if not may(member_role(project_id=project.pk, reviewer=created_by), LEAD):
        raise PermissionDenied(f"Only a lead of project {project.slug!r} adds bot accounts.")
    with transaction.atomic():
        bot, _ = reviewer_create(username=name, project_slugs=[project.slug], role=role)
        bot.set_unusable_password()
        bot.save(update_fields=["password"])
    return bot


def token_revoke(*, token: ApiToken, by: Reviewer | None) -> ApiToken:
    """Revoke ``token`` now (kept, listed as revoked; a second revoke changes
    nothing). ``by`` is the lead (``None``: the command line). Raises
    PermissionDenied when ``by`` is not a lead of the token's project."""
    if by is not None and not may(member_role(project_id=token.project_id, reviewer=by), LEAD):
        raise PermissionDenied(f"Only a lead of project {token.project.slug!r} revokes its tokens.")
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at, locked.revoked_by = timezone.now(), by
            locked.save(update_fields=["revoked_at", "revoked_by"])
    return locked


class TokenRefused(Exception):
    """The bearer token cannot be used; ``str(exc)`` says why (HTTP 401)."""


@dataclass(frozen=True)
class TokenAccess:
    """What a request's token grants: its reviewer in its project with
    ``role`` (the token's, capped by the reviewer's current role)."""

    token: ApiToken
    reviewer: Reviewer
    project: Project
    role: str

    def __str__(self) -> str:
        # ninja's throttles key on str(request.auth): one bucket per token.
        return f"token:{self.token.digest}"


def token_authenticate(secret: str) -> TokenAccess:
    """The access ``secret`` (a bearer token) grants now. One query (the token
    with its reviewer, project and the reviewer's membership role), plus an
    UPDATE of ``last_used_at`` when it is more than a minute old.

    Raises TokenRefused for an unknown, revoked or expired token, an inactive
    reviewer, or one who is no longer a member of the token's project.
    """
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        raise TokenRefused("Not a Citelab token: send Authorization: Bearer clt_….")
    membership = Membership.objects.filter(project=OuterRef("project_id"), reviewer=OuterRef("reviewer_id"))
    token = (ApiToken.objects.select_related("reviewer", "project")
             .annotate(member_role=Subquery(membership.values("role")[:1], output_field=CharField()))
             .filter(digest=token_digest(secret)).first())
    now = timezone.now()
    if token is None:
        raise TokenRefused("Unknown token.")
    if token.revoked_at is not None:
        raise TokenRefused(f"Token {token.name!r} was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC.")
    if token.expires_at <= now:
        raise TokenRefused(f"Token {token.name!r} expired on {token.expires_at:%Y-%m-%d %H:%M} UTC: ask a lead "
                           "for a new one.")
    reviewer = token.reviewer
    held = acting_role(reviewer, token.member_role)
    if not reviewer.is_active or held is None:
        raise TokenRefused(f"Token {token.name!r}: {reviewer.username} is no longer a member of project "
                           f"{token.project.slug}.")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return TokenAccess(token=token, reviewer=reviewer, project=token.project, role=lower_role(token.role, held))


def project_tokens(*, project: Project) -> list[ApiToken]:
    """The project's tokens, newest first, with their reviewer and maker. One query."""
    return list(ApiToken.objects.filter(project=project).select_related("reviewer", "created_by", "revoked_by")
                .order_by("-created_at", "-id"))


def token_state(token: ApiToken) -> str:
    """``revoked``, ``expired`` or ``active``."""
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.expires_at <= timezone.now() else "active"
