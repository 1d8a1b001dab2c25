"""``permissions.visible_run`` (one hand-written statement, the read every run page
starts with) gives what ``permissions.visible_runs`` gives (the ORM form of the rule):
the same run, project, role, ``works_on`` and label state for every kind of user,
and nothing where the ORM gives nothing."""

from __future__ import annotations

import pytest

from labeling.models import Assignment, LabelStateStamp, Membership, Project, Run
from labeling.permissions import visible_run, visible_runs
from tests.factories import ProjectFactory, ReviewerFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    """Project ``pa`` (runs ``open``: no assignments, ``assigned``: to rita, blind, with
    metadata, two label state stamps) and project ``pb`` (run ``open``); lead lena,
    reviewers rita and remy, viewer vera, outsider otto (no membership), superuser sue."""
    pa, pb = ProjectFactory(slug="pa"), ProjectFactory(slug="pb")
    names = {name: ReviewerFactory(username=name) for name in ("lena", "rita", "remy", "vera", "otto")}
    names["sue"] = ReviewerFactory(username="sue", is_superuser=True)
    for name, role in (("lena", "lead"), ("rita", "reviewer"), ("remy", "reviewer"), ("vera", "viewer")):
        Membership.objects.create(project=pa, reviewer=names[name], role=role)
    Membership.objects.create(project=pb, reviewer=names["remy"], role="lead")
    RunFactory(project=pa, name="open")
    assigned = RunFactory(project=pa, name="assigned", blind=True, overlap=2, metadata={"model": "m-1", "k": [1, 2]})
    Assignment.objects.create(run=assigned, reviewer=names["rita"])
    LabelStateStamp.objects.create(run=assigned)
    newest = LabelStateStamp.objects.create(run=assigned)
    RunFactory(project=pb, name="open")
    return names, newest.pk


def _seen(run: Run | None) -> tuple | None:
    if run is None:
        return None
    fields = [f.attname for f in Run._meta.concrete_fields]
    project_fields = [f.attname for f in Project._meta.concrete_fields]
    return (tuple(getattr(run, name) for name in fields), tuple(getattr(run.project, name) for name in project_fields),
            run.my_role, run.works_on, run.label_state, run.label_window)


@pytest.mark.parametrize("who", ["lena", "rita", "remy", "vera", "otto", "sue"])
@pytest.mark.parametrize("slug,name", [("pa", "open"), ("pa", "assigned"), ("pb", "open"), ("pb", "assigned"),
                                       ("pa", "nope"), ("zz", "open")])
def test_visible_run_gives_what_visible_runs_gives(people, who, slug, name):
    names, _newest = people
    orm = visible_runs(user=names[who]).filter(project__slug=slug, name=name).first()
    assert _seen(visible_run(user=names[who], project_slug=slug, run_name=name)) == _seen(orm)


def test_what_each_user_is_given(people, django_assert_num_queries):
    names, newest = people

    def given(who, slug, name):
        with django_assert_num_queries(1):
            run = visible_run(user=names[who], project_slug=slug, run_name=name)
        return None if run is None else (run.project.slug, run.name, run.my_role, run.works_on, run.label_state,
                                         run.label_window)

    assert given("rita", "pa", "assigned") == ("pa", "assigned", "reviewer", True, newest, 2)
    assert given("remy", "pa", "assigned") == ("pa", "assigned", "reviewer", False, newest, 2)
    assert given("remy", "pa", "open") == ("pa", "open", "reviewer", True, None, 0)
    assert given("remy", "pb", "open") == ("pb", "open", "lead", True, None, 0)
    assert given("vera", "pa", "open") == ("pa", "open", "viewer", True, None, 0)
    assert given("sue", "pb", "open") == ("pb", "open", "lead", True, None, 0)
    assert given("otto", "pa", "open") is None
    assert given("lena", "pb", "open") is None
    assert given("lena", "pa", "nope") is None
    run = visible_run(user=names["lena"], project_slug="pa", run_name="assigned")
    assert (run.blind, run.overlap, run.metadata) == (True, 2, {"model": "m-1", "k": [1, 2]})
    assert run.created_at.tzinfo is not None
