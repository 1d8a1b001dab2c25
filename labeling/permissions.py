"""Who may do what (SPEC §2 "role"): the role table every view, command and service asks
through :func:`may`, which projects and runs a user may open, and who labels a run blind.

The one home of these rules: a superuser may do everything (:func:`_superuser`, the one
place that says so); a member's role decides the rest (``ROLE_MAY``); a blind run hides
other people's labels from its reviewers. Nothing outside this module compares roles or
asks ``is_superuser`` (``tests/test_permission_home.py`` greps for it).
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import (
    CharField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)

from labeling.models import (
    Assignment,
    LabelStateStamp,
    Membership,
    Project,
    Reviewer,
    Role,
    Run,
)
from labeling.models.content import LATE_STAMP_WINDOW, label_state
from labeling.review import rows
from labeling.review.queue import works_on
from labeling.review.queue_sql import _WORKS_ON_SQL, _fragment


def _superuser(user: Reviewer) -> bool:
    """The superuser exception, written once: a superuser acts as a lead of every
    project, member or not, and labels no run blind."""
    return bool(user.is_superuser)


def reader_of_everything() -> Reviewer:
    """An unsaved stand-in who sees every label of every run (a superuser: never blind,
    nothing "their own"), for counts that no person asks for (a webhook's)."""
    return Reviewer(pk=0, is_superuser=True)


def _may_open(user: Reviewer, project: str = "") -> Q:
    """The one rule of who may open a project and everything in it: a
    superuser, or a member. ``project`` is the lookup path to the project
    (``"project__"`` from a run)."""
    return Q() if _superuser(user) else Q(**{f"{project}members": user})


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


# Roles from least to most (a token's role is capped by its holder's; of several roles
# granted at once, the most wins).
ROLE_ORDER = (Role.VIEWER, Role.REVIEWER, Role.LEAD)


def may(role: str | None, action: str) -> bool:
    """Whether a member of role ``role`` (``None``: not a member) may do ``action``
    (``READ``, ``LABEL``, ``LEAD``, ``ALL_LABELS`` or ``QUALITY``)."""
    return action in ROLE_MAY.get(role, frozenset())


def roles_that_may(action: str) -> list[str]:
    """The roles that may do ``action``, least first: for queries over memberships
    (``role__in=``), as ``may`` answers for one role."""
    return [role for role in ROLE_ORDER if may(role, action)]


def lower_role(a: str, b: str) -> str:
    """The lesser of two roles (``viewer`` < ``reviewer`` < ``lead``)."""
    return a if ROLE_ORDER.index(a) <= ROLE_ORDER.index(b) else b


def higher_role(a: str | None, b: str) -> str:
    """The greater of two roles, ``a`` ``None`` counting as below every role."""
    return b if a is None or ROLE_ORDER.index(b) > ROLE_ORDER.index(a) else a


def acting_role(user: Reviewer, member_role: str | None) -> str | None:
    """The role ``user`` acts with in a project where their membership gives
    ``member_role`` (``None``: not a member): ``lead`` for a superuser."""
    return Role.LEAD if _superuser(user) else member_role


def member_role(*, project_id: int, reviewer: Reviewer) -> str | None:
    """``reviewer``'s role in project ``project_id``: ``lead`` for a superuser, else
    their membership's, else ``None``. One query (none for a superuser)."""
    if _superuser(reviewer):
        return Role.LEAD
    return Membership.objects.filter(project_id=project_id, reviewer=reviewer).values_list("role", flat=True).first()


def role_in(*, user: Reviewer, project: Project | None = None, run: Run | None = None) -> str | None:
    """``user``'s role in ``project``, or in ``run``'s project: the ``my_role`` the object
    carries when it was read for ``user`` (``visible_projects``/``visible_runs``, or the
    API's token role), else :func:`member_role`."""
    target = run if run is not None else project
    role = getattr(target, "my_role", None)
    if role is not None:
        return role
    return member_role(project_id=run.project_id if run is not None else project.pk, reviewer=user)


def _role(user: Reviewer, project: str = "") -> Any:
    """An expression for ``user``'s role in the project at lookup path ``project``
    (``"project__"`` from a run): ``lead`` for a superuser, else their membership's."""
    if _superuser(user):
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
    # The label state too: the run's figures are keyed on it (labeling.scores.figure_cache).
    return (Run.objects.select_related("project").filter(_may_open(user, "project__"))
            .annotate(my_role=_role(user, "project__"), works_on=works_on(OuterRef("pk"), user), **label_state()))


def visible_run(*, user: Reviewer, project_slug: str, run_name: str) -> Run | None:
    """The run ``run_name`` of project ``project_slug`` as :func:`visible_runs` gives it
    to ``user`` (with its project, ``my_role``, ``works_on``, ``label_state`` and ``label_window``), or
    ``None`` when there is no such run or ``user`` may not open its project. One
    hand-written statement: every page of a run reads it first, and the ORM took
    longer to build :func:`visible_runs`' query than the database to run it (about
    3 ms of a label step). ``tests/test_visible_run.py`` holds the two together."""
    run_cols, project_cols = rows.columns(Run, "r"), rows.columns(Project, "p")
    tables = {name: connection.ops.quote_name(model._meta.db_table) for name, model in (
        ("run", Run), ("project", Project), ("member", Membership), ("stamp", LabelStateStamp),
        ("assignment", Assignment))}
    if _superuser(user):
        role, params = "%s", [Role.LEAD.value]
        may_open = ""
    else:
        role, params = "(SELECT m.role FROM {member} m WHERE m.project_id = p.id AND m.reviewer_id = %s)", [user.pk]
        may_open = "AND EXISTS (SELECT 1 FROM {member} m WHERE m.project_id = p.id AND m.reviewer_id = %s)"
    sql = (f"SELECT {run_cols.select}, {project_cols.select}, {role}, "
           f"{_fragment(_WORKS_ON_SQL, run_id='r.id')}, "
           "(SELECT st.id FROM {stamp} st WHERE st.run_id = r.id ORDER BY st.id DESC LIMIT 1), "
           "(SELECT count(*) FROM {stamp} sw WHERE sw.run_id = r.id AND sw.id > "
           "(SELECT st.id FROM {stamp} st WHERE st.run_id = r.id ORDER BY st.id DESC LIMIT 1) - %s) "
           "FROM {run} r JOIN {project} p ON p.id = r.project_id "
           f"WHERE p.slug = %s AND r.name = %s {may_open}").format(**tables)
    params += [user.pk, LATE_STAMP_WINDOW, project_slug, run_name] + ([] if _superuser(user) else [user.pk])
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run = rows.instance(run_cols, row, 0)
    run.project = rows.instance(project_cols, row, run_cols.width)
    run.my_role, works, run.label_state, run.label_window = row[run_cols.width + project_cols.width:]
    run.works_on = bool(works)  # SQLite gives the EXISTS as 0/1
    return run


def may_on_run(run: Run, action: str) -> bool:
    """Whether the user a run of ``visible_runs`` was read for may do ``action``
    on it: ``may`` for their role, and to LABEL a reviewer (not a lead) must
    work on the run — be assigned to it, or nobody is."""
    if not may(run.my_role, action):
        return False
    if action == LABEL and not may(run.my_role, LEAD):
        return run.works_on
    if action == ALL_LABELS:
        return not blind_for(run, role=run.my_role)
    return True


def blind_for(run: Run, *, role: str | None) -> bool:
    """Whether a member of ``role`` labels ``run`` blind: the run is blind
    (``Run.is_blind``) and they are a reviewer. They then see no one else's
    label (human or model) on any claim of the run, on any page or export;
    leads see everything, viewers do not label."""
    return run.is_blind and labels_blind(role)


def labels_blind(role: str | None) -> bool:
    """Whether a member of ``role`` labels a blind run blind: a reviewer (they
    may label but not lead); for queries that filter blind runs themselves."""
    return may(role, LABEL) and not may(role, LEAD)


def blind_for_reviewer(run: Run, reviewer: Reviewer) -> bool:
    """``blind_for`` with the role read from ``run.my_role`` (``visible_runs``) or, when the run
    was loaded another way, from the membership (one query, only for a blind run)."""
    if not run.is_blind:
        return False
    return blind_for(run, role=acting_role(reviewer, role_in(user=reviewer, run=run)))


def admin_rows(rows: QuerySet, *, user: Reviewer, project: str, own: str | None = None) -> QuerySet:
    """``rows`` (labels, judgments, audit events) that ``user`` sees in the admin: every
    row for a superuser; else the rows of projects they lead (``project``: lookup path
    to the row's project id) and, with ``own`` (lookup path to the row's reviewer),
    their own. Blind labeling holds there too: no fellow reviewer's label on a run
    they label blind."""
    if _superuser(user):
        return rows
    led = Membership.objects.filter(reviewer=user, role__in=roles_that_may(LEAD)).values("project_id")
    where = Q(**{f"{project}__in": led})
    return rows.filter(where | Q(**{own: user}) if own else where)



def run_manage_allowed(*, user: Reviewer, run: Run) -> bool:
    """Whether ``user`` may rename or delete ``run``: a lead of its project
    (or a superuser), by the role table of ``labeling.permissions.may``. The one
    place that decides it (the run page shows the buttons by it, the services
    refuse by it). A run from ``labeling.views.projects.run_for`` carries the
    user's role already; otherwise one query (none for a superuser)."""
    return may(role_in(user=user, run=run), LEAD)
