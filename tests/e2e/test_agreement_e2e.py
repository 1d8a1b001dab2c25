"""Browser test of the agreement page: reached from the run page, its figures read as a
lead reads them, and a disagreement's link opens the claim on the review page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Claim, Run
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ReviewerFactory

pytestmark = pytest.mark.e2e


@pytest.fixture
def judged_run(transactional_db, reviewer):
    """The seed's 5 claims: seed-reviewer S S U S U, a second annotator (kind external: a
    judge's labels would stay out of alpha and AC1) S S S S U (differs on claim 3)."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    judge = ReviewerFactory(username="judge", kind="external")
    for claim in Claim.objects.order_by("index"):
        LabelFactory(claim=claim, reviewer=judge, value="UNSUPPORTED" if claim.index == 5 else "SUPPORTED")
    project.members.add(reviewer)
    return Run.objects.select_related("project").get(project=project, name="seed-coverage-support")


def test_lead_reads_agreement_and_opens_the_disputed_claim(live_server, judged_run, logged_in_page):
    """Alpha: n_S = 3 + 4 = 7, n_U = 3, N = 10, o_SU + o_US = 2: 1 − 9·2/(2·7·3) = 4/7 ≈ 0.57.
    AC1: p_a = 4/5, π_S = 0.7, π_U = 0.3, p_e = 2·0.21 = 0.42: (0.8 − 0.42)/0.58 = 19/29 ≈ 0.66.
    Kappa 6/11 ≈ 0.55 (tests/test_agreement_command.py)."""
    from playwright.sync_api import expect

    page = logged_in_page
    page.goto(live_server.url + judged_run.get_absolute_url())
    page.click("text=Reviewer agreement")

    expect(page.locator("h1")).to_contain_text("Reviewer agreement")
    expect(page.locator("#figure-alpha .stat-value")).to_have_text("0.57 low")
    expect(page.locator("#figure-ac1 .stat-value")).to_have_text("0.66 low")
    expect(page.locator("table.pairs tbody tr")).to_contain_text("4/5 = 0.80")
    expect(page.locator("table.pairs tbody tr")).to_contain_text("0.55")
    expect(page.locator("table.confusion td.disagree.heat-1")).to_have_count(1)

    claim = Claim.objects.get(index=3)
    page.click(f"#claim-{claim.pk} a")
    review = reverse("answer_review", kwargs={"project_slug": "seed", "run_name": judged_run.name,
                                              "answer_id": claim.answer_id})
    page.wait_for_url(f"**{review}?claim={claim.pk}")
    expect(page.locator("body")).to_contain_text(claim.text[:40])
