"""Who may do what (SPEC §2 "role"): the role table every view, command and service asks
through :func:`may`, which projects and runs a user may open, and who labels a run blind.

The one home of these rules: a superuser may do everything; a member's role decides the
rest (``ROLE_MAY``); a blind run hides other people's labels from its reviewers.
"""

from __future__ import annotations

from typing import Any

from django.db.models import (
    CharField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)

from labeling.models import (
    Membership,
    Project,
    Reviewer,
    Role,
    Run,
)
from labeling.review.queue import works_on


def _may_open(user: Reviewer, project: str = "") -> Q:
    """The one rule of who may open a project and everything in it: a
    superuser, or a member. ``project`` is the lookup path to the project
    (``"project__"`` from a run)."""
    return Q() if user.is_superuser else Q(**{f"{project}members": user})


# What each role may do in its project (SPEC §2 "role"), the one table every view asks
# through ``may``: READ opens pages; LABEL saves, undoes, splits, merges and edits claims;
# LEAD imports, snapshots, manages members, assigns and adjudicates; ALL_LABELS sees every
# reviewer's labels (label tables, versions, exports, comparisons) — a reviewer loses it
# on a blind run (``may_on_run``), where they see only their own labels.
# QUALITY reads the reviewer dashboards (SPEC §4.4): leads and viewers, not the reviewers graded there.
READ, LABEL, LEAD, ALL_LABELS, QUALITY = "read", "label", "lead", "all_labels", "quality"


ROLE_MAY = {
    Role.LEAD: frozenset({READ, LABEL, LEAD, ALL_LABELS, QUALITY}),
    Role.REVIEWER: frozenset({READ, LABEL, ALL_LABELS}),
    Role.VIEWER: frozenset({READ, ALL_LABELS, QUALITY}),
}


def may(role: str | None, action: str) -> bool:
    """Whether a member of role ``role`` (``None``: not a member) may do ``action``
    (``READ``, ``LABEL`` or ``LEAD``)."""
    return action in ROLE_MAY.get(role, frozenset())


def _role(user: Reviewer, project: str = "") -> Any:
    """An expression for ``user``'s role in the project at lookup path ``project``
    (``"project__"`` from a run): ``lead`` for a superuser, else their membership's."""
    if user.is_superuser:
        return Value(Role.LEAD.value, output_field=CharField())
    target = OuterRef("project_id") if project else OuterRef("pk")
    return Subquery(Membership.objects.filter(project=target, reviewer=user).values("role")[:1])


def visible_projects(*, user: Reviewer) -> QuerySet[Project]:
    """Projects ``user`` may open: all for a superuser, else those they are a member of;
    each with ``my_role`` (the user's role there, see ``may``) annotated."""
    return Project.objects.filter(_may_open(user)).annotate(my_role=_role(user))


def visible_runs(*, user: Reviewer) -> QuerySet[Run]:
    """Runs (with their project) of the projects ``user`` may open, with ``my_role`` and
    ``works_on`` (``user`` works on the run: the queue's rule, ``review.queue.works_on``)
    annotated."""
    return (Run.objects.select_related("project").filter(_may_open(user, "project__"))
            .annotate(my_role=_role(user, "project__"), works_on=works_on(OuterRef("pk"), user)))


def may_on_run(run: Run, action: str) -> bool:
    """Whether the user a run of ``visible_runs`` was read for may do ``action``
    on it: ``may`` for their role, and to LABEL a reviewer (not a lead) must
    work on the run — be assigned to it, or nobody is."""
    if not may(run.my_role, action):
        return False
    if action == LABEL and run.my_role != Role.LEAD:
        return run.works_on
    if action == ALL_LABELS:
        return not blind_for(run, role=run.my_role)
    return True


def blind_for(run: Run, *, role: str | None) -> bool:
    """Whether a member of ``role`` labels ``run`` blind: the run is blind
    (``Run.is_blind``) and they are a reviewer. They then see no one else's
    label (human or model) on any claim of the run, on any page or export;
    leads see everything, viewers do not label."""
    return run.is_blind and role == Role.REVIEWER


def blind_for_reviewer(run: Run, reviewer: Reviewer) -> bool:
    """``blind_for`` with the role read from ``run.my_role`` (``visible_runs``) or, when the run
    was loaded another way, from the membership (one query, only for a blind run)."""
    if not run.is_blind or reviewer.is_superuser:
        return False
    role = getattr(run, "my_role", None)
    if role is None:
        role = Membership.objects.filter(project_id=run.project_id, reviewer=reviewer).values_list(
            "role", flat=True).first()
    return blind_for(run, role=role)



def run_manage_allowed(*, user: Reviewer, run: Run) -> bool:
    """Whether ``user`` may rename or delete ``run``: a lead of its project
    (or a superuser), by the role table of ``labeling.permissions.may``. The one
    place that decides it (the run page shows the buttons by it, the services
    refuse by it). A run from ``labeling.views.projects.run_for`` carries the
    user's role already; otherwise one query."""
    role = getattr(run, "my_role", None)
    if role is None:
        role = visible_projects(user=user).filter(pk=run.project_id).values_list("my_role", flat=True).first()
    return may(role, LEAD)
