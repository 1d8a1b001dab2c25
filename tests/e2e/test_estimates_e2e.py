"""Browser test of a judge-assisted estimate (SPEC §4.6): a lead draws a probability
sample of 20 answers on the run page, two reviewers label it from the keyboard
(their queues serve the sampled answers first, in sample order; the claim the
queue reserved for the first when she stopped lapses before the second starts),
the fake judge server labels the whole run, and the run page's headline estimate is the one
``score --format json`` prints."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from labeling.models import Claim, ClaimLease, Membership, Run, SampleMember
from tests.e2e.conftest import PASSWORD, VIEWPORT, panel_claim, wait_for_claim_after, wait_for_htmx
from tests.factories import ReviewerFactory
from tests.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

QUESTIONS = 40


def truth(text: str) -> str:
    """The label a careful reviewer gives claim ``qNN one.`` / ``qNN two.``: "one." is
    SUPPORTED but on every fourth question, "two." only on every third."""
    number, which = int(text[1:3]), text.split()[1]
    if which == "one.":
        return "UNSUPPORTED" if number % 4 == 0 else "SUPPORTED"
    return "SUPPORTED" if number % 3 == 0 else "UNSUPPORTED"


def verdict(text: str) -> str:
    """The fake judge: the truth, but SUPPORTED on "two." of every fifth question."""
    return "SUPPORTED" if text.endswith("two.") and int(text[1:3]) % 5 == 0 else truth(text)


@pytest.fixture
def estimating_run(transactional_db, reviewer, tmp_path) -> Run:
    """Run ``v1`` of project ``estimating``: 40 answers, each with "qNN one." citing P1,
    "qNN two." citing P2 and an uncited "qNN three."; alice leads the project."""
    from labeling.importers.load import project_for_import, run_import

    lines = []
    for i in range(1, QUESTIONS + 1):
        q = f"q{i:02d}"
        lines.append(json.dumps({
            "question_id": q, "question": f"Question {q}?", "run": "v1",
            "answer": f"{q} one [P1]. {q} two [P2]. {q} three.",
            "passages": [{"id": "P1", "source": "a.md", "text": f"{q} one, says the passage."},
                         {"id": "P2", "source": "b.md", "text": f"{q} two, perhaps."}],
            "claims": [{"text": f"{q} one.", "citations": [{"passage_id": "P1"}]},
                       {"text": f"{q} two.", "citations": [{"passage_id": "P2"}]},
                       {"text": f"{q} three.", "citations": []}],
        }))
    source = tmp_path / "answers.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = project_for_import(slug="estimating")
    run_import(project=project, source=source)
    Membership.objects.create(project=project, reviewer=reviewer, role="lead")
    return Run.objects.select_related("project").get(project=project, name="v1")


def _reviewer_page(browser, live_server, name: str, project):
    Membership.objects.create(project=project, reviewer=ReviewerFactory(username=name), role="reviewer")
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + "/")
    return context, page


def _label_answers(page, live_server, run: Run, answers: int, expected_order: list[int]) -> None:
    """Label ``answers`` whole answers from the run's "Start labeling", checking each
    comes in sample order: SUPPORTED with ``1``; UNSUPPORTED with ``2``, a reason, Enter."""
    page.goto(live_server.url + run.get_absolute_url())
    page.get_by_role("link", name="Start labeling").click()
    wait_for_htmx(page, painted=True)
    claim_id = panel_claim(page)
    for answer_number in range(answers):
        for _ in range(2):  # two cited claims per answer
            claim = Claim.objects.get(pk=claim_id)
            assert claim.answer_id == expected_order[answer_number], "the queue left the sample order"
            if truth(claim.text) == "SUPPORTED":
                page.keyboard.press("1")
            else:
                page.keyboard.press("2")
                page.wait_for_function("document.activeElement && document.activeElement.name === 'justification'")
                page.keyboard.type("the passage does not say it")
                page.keyboard.press("Enter")
            last = answer_number == answers - 1 and claim.index == 2
            if not last:
                claim_id = wait_for_claim_after(page, claim_id)
    wait_for_htmx(page)


def test_lead_samples_reviewers_label_judge_labels_and_the_page_shows_the_clis_estimate(
        live_server, browser, estimating_run, logged_in_page):
    from playwright.sync_api import expect

    run, page = estimating_run, logged_in_page
    page.goto(live_server.url + run.get_absolute_url())
    panel = page.locator("#run-sample")
    expect(panel).to_contain_text("No probability sample")
    page.fill("#sample-answers", "20")
    page.fill("#sample-seed", "7")
    panel.get_by_role("button", name="Draw").click()
    expect(panel).to_contain_text("sample 20 answers: 0 fully labeled")
    expect(panel).to_contain_text("seed 7")
    order = list(SampleMember.objects.filter(sample__run=run).order_by("position").values_list("answer_id", flat=True))
    assert len(order) == 20

    for name, answers in (("rev-one", order[:10]), ("rev-two", order[10:])):
        context, reviewer_page = _reviewer_page(browser, live_server, name, run.project)
        _label_answers(reviewer_page, live_server, run, len(answers), answers)
        context.close()
        # The queue reserved the next sampled claim for the reviewer who stopped (a lease):
        # let it lapse, as it does at expires_at, so the other one takes whole answers on.
        ClaimLease.objects.filter(reviewer__username=name).update(expires_at=timezone.now() - timedelta(seconds=1))
    page.reload()
    expect(panel).to_contain_text("sample 20 answers: 20 fully labeled")
    expect(panel).to_contain_text("humans alone on 20 fully labeled sampled answers")

    labels = {f"q{i:02d} {which}": verdict(f"q{i:02d} {which}")
              for i in range(1, QUESTIONS + 1) for which in ("one.", "two.")}
    with JudgeServer(labels=labels) as server:
        call_command("autolabel", "--project", "estimating", "--run", "v1", "--reviewer", "fake-judge", "--model",
                     "fake-model", "--base-url", server.base_url, stdout=io.StringIO())
    out = io.StringIO()
    call_command("score", "--project", "estimating", "--run", "v1", "--format", "json", stdout=out)
    support = json.loads(out.getvalue())["estimates"]["support"]
    assert support["judge"] == "fake-judge" and support["n_human_answers"] == 20 and support["n_judge_units"] == 40

    page.reload()
    headline = page.locator("[data-estimate=support]")
    expect(headline).to_be_visible()
    value = headline.locator("strong.metric")
    interval = headline.locator("[data-low]")
    assert float(value.get_attribute("data-value")) == support["estimate"]
    assert [float(interval.get_attribute("data-low")), float(interval.get_attribute("data-high"))] == support["ci95"]
    low, high = support["ci95"]
    human_low, human_high = support["human_only"]["ci95"]
    text = " ".join(headline.inner_text().split())
    assert text == (f"support {support['estimate']:.2f} ({low:.2f}–{high:.2f}) — 20 answers by humans + judge on "
                    f"40; humans alone {support['human_only']['estimate']:.2f} ({human_low:.2f}–{human_high:.2f}); "
                    f"judge alone {support['judge_only']:.2f}")
