"""Finding the project and run a management command names (``--project``, ``--run``).

Shared by every command so they all answer a wrong name the same way.
"""

from __future__ import annotations

from django.core.management.base import CommandError

from labeling.models import Project, Reviewer, Run
from labeling.names import normalize_name


def find_project(slug: str | None) -> Project:
    """``--project SLUG``, or the only project there is. CommandError otherwise."""
    if slug:
        # Names are stored in their normal form (labeling.names); typed ones meet them there.
        slug = normalize_name(slug)
        try:
            return Project.objects.get(slug=slug)
        except Project.DoesNotExist:
            raise CommandError(f"no project {slug!r}") from None
    projects = list(Project.objects.order_by("slug").values_list("slug", flat=True)[:21])
    if len(projects) == 1:
        return Project.objects.get(slug=projects[0])
    if not projects:
        raise CommandError("no project yet: import answers first")
    # Name them, so the user can copy one (the demo has two: demo and demo-judged).
    shown = ", ".join(projects[:20]) + (" …" if len(projects) > 20 else "")
    raise CommandError(f"several projects exist ({shown}): pass --project SLUG, e.g. --project {projects[0]}")


def find_run(project: Project, name: str) -> Run:
    """Run ``name`` of ``project``; CommandError listing the project's runs otherwise."""
    name = normalize_name(name)
    try:
        return Run.objects.select_related("project").get(project=project, name=name)
    except Run.DoesNotExist:
        names = ", ".join(project.runs.values_list("name", flat=True)) or "none"
        raise CommandError(f"project {project.slug!r} has no run {name!r} (runs: {names})") from None


def reviewer_name(value: str) -> str:
    """argparse ``type`` of every ``--reviewer``/``--author``/``--judge`` option: the name
    in the normal form login uses (``Reviewer.normalize_username``: NFKC, format
    characters removed, stripped), so ``--reviewer ｒｅｖ０１`` finds ``rev01``."""
    return Reviewer.normalize_username(value)
