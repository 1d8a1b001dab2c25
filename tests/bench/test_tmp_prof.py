import cProfile, pstats
import pytest
from django.test import Client
from django.urls import reverse
from django.template.base import Template
from tests.bench.test_bench_team_pages import team_run, SLUG  # noqa: F401
from tests.bench.test_bench_review import PLAIN_RENDER

pytestmark = pytest.mark.bench

@pytest.mark.django_db
def test_prof(team_run, monkeypatch):
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)
    client = Client(); client.force_login(team_run["lead"])
    run = team_run["run"]
    for name, url in (("summary", reverse("project_summary", kwargs={"project_slug": SLUG})),
                      ("grade", reverse("judge_grade", kwargs={"project_slug": SLUG, "run_name": run.name, "judge_name": "judge-a"}))):
        client.get(url)
        pr = cProfile.Profile(); pr.enable(); client.get(url); pr.disable()
        print("=====", name)
        pstats.Stats(pr).sort_stats("cumulative").print_stats(40)
