"""The Content-Security-Policy in a real browser (SPEC §7): a superuser opens
the app's pages and the admin's, with a run whose names and texts are hostile
HTML; Chromium reports no policy violation (the ``page`` fixture fails the test
on any, and on any JavaScript error) and runs none of the injected markup.
Screenshots go to ``CITELAB_SCREENSHOTS`` when that is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse

from labeling.models import Answer, Claim, Label, Run
from tests.e2e.conftest import PASSWORD

pytestmark = pytest.mark.e2e

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


@pytest.fixture
def hostile_run(transactional_db, reviewer, settings, tmp_path):
    """The seed run renamed to hostile HTML, its first answer and claim too; ``reviewer``
    (alice) a superuser."""
    from labeling.importers.load import project_for_import, run_import
    from tests.conftest import FIXTURES_DIR

    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="seed")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl", default_reviewer="alice")
    Label.objects.update(reviewer=reviewer)
    reviewer.is_superuser = reviewer.is_staff = True
    reviewer.save()
    run = Run.objects.get(project=project)
    Run.objects.filter(pk=run.pk).update(name='run "<b>x" & \'y\' <i>')
    answer = Answer.objects.filter(run=run).first()
    Answer.objects.filter(pk=answer.pk).update(text=HOSTILE + " " + answer.text)
    Claim.objects.filter(answer=answer, index=1).update(text=HOSTILE)
    run.refresh_from_db()
    return run, answer


def _shot(page, name: str) -> None:
    folder = os.environ.get("CITELAB_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_app_and_admin_pages_break_no_policy_and_run_no_injected_markup(live_server, hostile_run, strict_page):
    from playwright.sync_api import expect

    page = strict_page
    run, answer = hostile_run
    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + reverse("project_list"))
    kwargs = {"project_slug": run.project.slug, "run_name": run.name}
    urls = [
        reverse("project_detail", args=[run.project.slug]),
        reverse("run_detail", kwargs=kwargs),
        reverse("answer_review", kwargs={**kwargs, "answer_id": answer.pk}),
        reverse("version_list", kwargs=kwargs),
        reverse("run_agreement", kwargs=kwargs),
        reverse("project_members", args=[run.project.slug]),
        reverse("admin:index"),
        reverse("admin:labeling_run_changelist"),
        reverse("admin:labeling_project_change", args=[run.project.pk]),
        reverse("admin:labeling_claim_changelist"),
        reverse("admin:labeling_answer_change", args=[answer.pk]),
    ]
    for url in urls:
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.pwned") is None, url
    assert page.locator("img[src=x]").count() == 0
    page.goto(live_server.url + reverse("answer_review", kwargs={**kwargs, "answer_id": answer.pk}))
    assert HOSTILE in page.inner_text("main")  # shown as text, as written
    _shot(page, "hostile-text-review.png")

    # app.js and htmx work under the policy: on claim 3 (alice's UNSUPPORTED) key 1
    # saves SUPPORTED and htmx swaps in the panel saying so.
    third = Claim.objects.get(answer=answer, index=3)
    page.goto(live_server.url + reverse("answer_review", kwargs={**kwargs, "answer_id": answer.pk})
              + f"?claim={third.pk}")
    progress_url = reverse("run_progress", kwargs=kwargs)
    progress_gets = []
    page.on("request", lambda request: progress_gets.append(request.url) if progress_url in request.url else None)
    page.keyboard.press("1")
    expect(page.get_by_role("status")).to_contain_text("Saved SUPPORTED on claim 3")
    assert Label.objects.get(claim=third, is_current=True).value == "SUPPORTED"
    # The save said how far the bar moved (0: the claim was labeled already): no
    # progress request, and no hx-trigger filter that would need eval.
    expect(page.locator("#run-progress .metric")).to_have_text("5/5")
    assert progress_gets == []
    # A write that says nothing about the bar (a split, a merge, an edit) has it reloaded.
    with page.expect_response(lambda response: progress_url in response.url and response.status == 200):
        page.evaluate("document.body.dispatchEvent(new CustomEvent('labelSaved', {detail: {}}))")
    expect(page.locator("#run-progress .metric")).to_have_text("5/5")
    assert len(progress_gets) == 1
