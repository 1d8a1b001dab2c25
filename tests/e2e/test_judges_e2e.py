"""Browser test of a judge run (SPEC §4.4): a lead starts it from the run page against
the fake OpenAI-compatible server, watches its progress bar through to the end (the
task goes through django-q2's database queue to a worker thread), and opens the
judge's grading page."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection

from labeling.models import JudgeRun, Label, Membership, Run
from tests.judge_server import QUESTIONS, JudgeServer
from tests.task_worker import run_queued_tasks
from tests.waiting import BOOT_SECONDS

pytestmark = pytest.mark.e2e


@pytest.fixture
def lead_run(transactional_db, reviewer, tmp_path) -> Run:
    """Run ``judged`` (tests/conftest.py's judging_run data) with alice as lead and
    her labels: every "one." SUPPORTED, every "two." UNSUPPORTED (12 cited claims)."""
    from labeling.importers.load import project_for_import, run_import
    from tests.judge_server import judging_answers

    project = project_for_import(slug="judging")
    run_import(project=project, source=judging_answers(tmp_path / "answers.jsonl"))
    Membership.objects.create(project=project, reviewer=reviewer, role="lead")
    run = Run.objects.select_related("project").get(project=project, name="judged")
    for pk, text in run.answers.values_list("claims__pk", "claims__text"):
        if not text.endswith("three."):
            Label.objects.create(claim_id=pk, reviewer=reviewer, claim_revision=1,
                                 value="SUPPORTED" if text.endswith("one.") else "UNSUPPORTED",
                                 justification="" if text.endswith("one.") else "P2 is about something else.")
    return run


@pytest.fixture
def worker(settings):
    """A worker thread taking tasks from the database queue, as `manage.py qcluster` would."""
    from django_q.brokers import get_broker

    settings.CITELAB_TASKS_SYNC = False
    stop = threading.Event()

    def loop() -> None:
        broker = get_broker()
        try:
            while not stop.is_set():
                if not run_queued_tasks(broker):
                    stop.wait(0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=BOOT_SECONDS)
    assert not thread.is_alive(), "the worker thread did not stop"


def test_lead_runs_a_judge_watches_it_finish_and_grades_it(live_server, lead_run, logged_in_page, worker,
                                                           settings):
    """The judge agrees with alice except on "valid two." (it says SUPPORTED):
    confusion [[6, 0], [1, 5]], agreement 11/12; UNSUPPORTED precision 5/5, recall
    5/6; kappa: chance = 6·7 + 6·5 = 72, (12·11 − 72)/(144 − 72) = 60/72 ≈ 0.83."""
    from playwright.sync_api import expect

    labels = {f"{q} two.": "UNSUPPORTED" for q in QUESTIONS if q != "valid"}
    page = logged_in_page
    # The judge's replies wait for the gate: the page is seen with the run under way, then finishing.
    gate = threading.Event()
    with JudgeServer(labels=labels, gate=gate) as server:
        settings.CITELAB_JUDGE_ENDPOINTS = [server.base_url]
        page.goto(live_server.url + lead_run.get_absolute_url())
        panel = page.locator("#run-judges")
        expect(panel).to_contain_text("No judge has labeled this run")
        panel.locator("summary", has_text="Run a judge").click()
        page.fill("#judge-reviewer", "judge-e2e")
        page.fill("#judge-model", "fake-model")
        page.fill("#judge-base-url", server.base_url)
        page.click("text=Start the judge")
        bar = panel.locator("progress.judge-progress")
        expect(bar).to_have_attribute("max", "6")
        # Under way first (queued, or running and held at the gate), then the polling panel reaches the end.
        expect(page.locator("[data-judge-status]")).to_have_text(re.compile("^(Queued|Running)$"))
        assert JudgeRun.objects.get().status in ("queued", "running")
        gate.set()
        expect(page.locator("[data-judge-status]")).to_have_text("Done")
        expect(bar).to_have_attribute("value", "6")
        expect(panel).to_contain_text("6/6 answers · 12 claims labeled")
    # A reload finds the finished judge run where the job left it.
    page.reload()
    expect(page.locator("[data-judge-status]")).to_have_text("Done")
    page.locator("#run-judges a", has_text="judge-e2e").first.click()
    expect(page.locator("h1")).to_contain_text("judge-e2e")
    expect(page.locator("#figure-kappa .stat-value")).to_have_text("0.83 good")
    expect(page.locator("#figure-precision .stat-value")).to_have_text("5/5 = 1.00")
    expect(page.locator("#figure-recall .stat-value")).to_have_text("5/6 = 0.83")
    expect(page.locator("table.disagreements tbody tr")).to_have_count(1)
    expect(page.locator("table.disagreements")).to_contain_text("valid two.")
    expect(page.locator("table.judge-runs")).to_contain_text("fake-model")
