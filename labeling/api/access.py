"""What a token may reach: its own project only, and there what its role may
do — the role table of the pages (``labeling.permissions.may`` /
``may_on_run``), with the token's role in place of the member's."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.errors import HttpError

from labeling import permissions
from labeling.integrations.tokens import TokenAccess
from labeling.models import Claim, Project, Run
from labeling.review import screen
from labeling.views.projects import blind_refusal

ACTION_WORDS = {permissions.READ: "read", permissions.LABEL: "label claims", permissions.LEAD: "lead the project",
                permissions.ALL_LABELS: "read everyone's labels"}


class FieldRefused(HttpError):
    """A 4xx (422 unless said) naming the request field at fault (``errors: [{"field", "reason"}]``)."""

    def __init__(self, field: str, reason: str, *, status: int = 422):
        super().__init__(status, f"Invalid request ({field}): {reason.rstrip('.')}.")
        self.field, self.reason = field, reason


def access_of(request: HttpRequest) -> TokenAccess:
    """The request's token access (set by ``main.BearerToken``)."""
    return request.auth  # type: ignore[attr-defined]


def project_of(request: HttpRequest, slug: str, action: str = permissions.READ) -> Project:
    """The token's project when ``slug`` names it, else 404 (a token never
    learns whether another project exists); 403 when the token's role may not
    do ``action``."""
    access = access_of(request)
    if slug != access.project.slug:
        raise HttpError(404, f"No project {slug!r} for this token (it opens project {access.project.slug!r}).")
    check_role(access, action)
    return access.project


def check_role(access: TokenAccess, action: str) -> None:
    """403 naming the role when ``access`` may not do ``action``."""
    if not permissions.may(access.role, action):
        raise PermissionDenied(f"This token's role in project {access.project.slug!r} is {access.role}: it may not "
                               f"{ACTION_WORDS.get(action, action)}.")


def run_of(request: HttpRequest, slug: str, name: str, action: str = permissions.READ) -> Run:
    """Run ``name`` of the token's project ``slug``, else 404; 403 when the
    token's role may not do ``action`` there, or (to label) its reviewer is
    not assigned to the run, or (to read everyone's labels) the run is blind
    to them. One query."""
    access = access_of(request)
    project = project_of(request, slug)
    run = permissions.visible_runs(user=access.reviewer).filter(project=project, name=name).first()
    if run is None:
        raise HttpError(404, f"Project {slug!r} has no run {name!r}.")
    run.my_role = access.role
    run.project = project
    check_role(access, action)
    if not permissions.may_on_run(run, action):
        if action == permissions.LABEL:
            raise PermissionDenied(f"{access.reviewer.username} is not assigned to run {run.name!r}: a lead of "
                                   f"project {project.slug!r} assigns the reviewers of each run.")
        raise PermissionDenied(blind_refusal(run))
    return run


def claim_of(run: Run, claim_id: int) -> Claim:
    """Claim ``claim_id`` of ``run`` (with its answer and question), else 404."""
    claim = screen.claim_in_run(run=run, claim_id=claim_id)
    if claim is None:
        raise HttpError(404, f"Claim {claim_id} is not a claim of run {run.name!r}: nothing was changed.")
    return claim


def sees_all_labels(run: Run) -> bool:
    """Whether the token sees every reviewer's labels on ``run`` (not blind to it)."""
    return permissions.may_on_run(run, permissions.ALL_LABELS)
