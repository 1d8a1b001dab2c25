"""Single sign-on with OpenID Connect (SPEC §6), beside password login,
through mozilla-django-oidc (authorization code flow, state and nonce, ID
token signature checked against the provider's keys).

On when ``CITELAB_OIDC_CLIENT_ID`` is set (settings: ``CITELAB_OIDC_*``). The
first login creates the reviewer: a human who cannot log in with a password,
named by the username claim (``preferred_username`` by default; a name an
existing account holds gets ``@sso``), tied to the provider's ``sub`` (later
logins find them by it, never by name or e-mail, so a provider account named
``admin`` never becomes the local admin). They are a member of no project
until a lead adds them — or the role mapping says otherwise:
``CITELAB_OIDC_ROLE_MAP="rag-leads=rag:lead,rag-team=rag:reviewer"`` makes a
user whose ``CITELAB_OIDC_ROLE_CLAIM`` (default ``groups``) holds
``rag-team`` a reviewer of project ``rag``, at their first login to it (a role
a lead set later is never overwritten).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from labeling.models import Membership, Project, Reviewer, ReviewerKind, SsoIdentity
from labeling.names import normalize_name
from labeling.permissions import higher_role
from labeling.team.memberships import role_checked

SSO_SUFFIX = "@sso"


def role_map(text: str) -> dict[str, list[tuple[str, str]]]:
    """``"rag-leads=rag:lead,rag-team=rag:reviewer"`` → claim value → [(project slug,
    role)]. ImproperlyConfigured naming a bad item."""
    mapping: dict[str, list[tuple[str, str]]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        value, _, target = item.partition("=")
        slug, _, role = target.partition(":")
        if not value.strip() or not slug.strip():
            raise ImproperlyConfigured(f"CITELAB_OIDC_ROLE_MAP item {item!r}: write CLAIM_VALUE=PROJECT:ROLE")
        try:
            mapping.setdefault(value.strip(), []).append((slug.strip(), role_checked(role.strip())))
        except Exception:
            raise ImproperlyConfigured(f"CITELAB_OIDC_ROLE_MAP item {item!r}: the role is lead, reviewer or "
                                       "viewer") from None
    return mapping


class CitelabOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, matching reviewers by the provider's ``sub``."""

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub")) and bool(str(claims.get(settings.CITELAB_OIDC_USERNAME_CLAIM) or "").strip())

    def filter_users_by_claims(self, claims: dict[str, Any]):
        return self.UserModel.objects.filter(sso_identity__subject=self._subject(claims), is_active=True)

    @staticmethod
    def _subject(claims: dict[str, Any]) -> str:
        return f"{settings.CITELAB_OIDC_ISSUER}|{claims['sub']}"

    def create_user(self, claims: dict[str, Any]) -> Reviewer:
        name = normalize_name(str(claims[settings.CITELAB_OIDC_USERNAME_CLAIM]))[:140]
        try:
            Reviewer.username_validator(name)
        except Exception:
            raise SuspiciousOperation(f"The provider's {settings.CITELAB_OIDC_USERNAME_CLAIM} {name!r} is not a "
                                      "reviewer name") from None
        with transaction.atomic():
            username = name
            while Reviewer.objects.filter(username=username).exists():
                username += SSO_SUFFIX
            user = Reviewer(username=username, email=str(claims.get("email") or ""), kind=ReviewerKind.HUMAN)
            user.set_unusable_password()
            user.save()
            SsoIdentity.objects.create(reviewer=user, subject=self._subject(claims))
            self._grant_roles(user, claims)
        return user

    def update_user(self, user: Reviewer, claims: dict[str, Any]) -> Reviewer:
        self._grant_roles(user, claims)
        return user

    def _grant_roles(self, user: Reviewer, claims: dict[str, Any]) -> None:
        """Memberships from ``CITELAB_OIDC_ROLE_MAP`` in projects where ``user`` has none yet."""
        values = claims.get(settings.CITELAB_OIDC_ROLE_CLAIM) or []
        values = [values] if isinstance(values, str) else [str(v) for v in values]
        grants: dict[str, str] = {}
        for value in values:
            for slug, role in role_map(settings.CITELAB_OIDC_ROLE_MAP).get(value, []):
                grants[slug] = higher_role(grants.get(slug), role)
        held = set(Membership.objects.filter(reviewer=user).values_list("project__slug", flat=True))
        projects = {p.slug: p for p in Project.objects.filter(slug__in=set(grants) - held)}
        Membership.objects.bulk_create([Membership(project=projects[slug], reviewer=user, role=role)
                                        for slug, role in grants.items() if slug in projects])

