"""Browser test of renaming and deleting a run from its page (htmx on):
rename with a bad name (the error shows in place), rename for real (the page
moves to the new address), open the delete confirmation (what will be lost),
delete, land on the project page. Screenshots of the open rename form and of
the confirmation page go to ``CITELAB_SCREENSHOTS`` when that is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse

from labeling.models import Run
from tests.e2e import test_label_tables_e2e

pytestmark = pytest.mark.e2e

# The seed run (5 claims labeled by alice, alice a member of its project).
alices_run = test_label_tables_e2e.alices_run


def _shot(page, name: str) -> None:
    folder = os.environ.get("CITELAB_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_rename_then_delete_a_run_in_the_browser(live_server, alices_run, logged_in_page):
    seed_run = alices_run
    from playwright.sync_api import expect

    page = logged_in_page
    page.goto(live_server.url + seed_run.get_absolute_url())
    page.click("summary:has-text('Rename…')")
    page.fill("input[name=name]", "gpt4o/prompt-v2")
    page.click("button:has-text('Rename')")
    expect(page.locator(".rename-form .message.error")).to_contain_text("contains '/' or")
    _shot(page, "run-rename-error.png")

    page.fill("input[name=name]", "Prüfung – 日本")
    page.click("button:has-text('Rename')")
    new_url = live_server.url + reverse("run_detail", kwargs={"project_slug": "seed", "run_name": "Prüfung – 日本"})
    page.wait_for_url(new_url)
    expect(page.locator("h1")).to_have_text("Prüfung – 日本")
    expect(page.locator(".message.success")).to_contain_text("Renamed run “seed-coverage-support” to “Prüfung – 日本”.")

    page.click("a:has-text('Delete…')")
    expect(page.locator("#lost-claims")).to_have_text("5")
    expect(page.locator("#lost-labels")).to_have_text("5")
    expect(page.locator("text=Download the current label table (XLSX)")).to_be_visible()
    _shot(page, "run-delete-confirm.png")
    page.click("button:has-text('Delete run')")
    page.wait_for_url(live_server.url + reverse("project_detail", kwargs={"project_slug": "seed"}))
    expect(page.locator(".message.success")).to_contain_text("Deleted run “Prüfung – 日本”: 1 answers, 5 claims")
    assert not Run.objects.filter(pk=seed_run.pk).exists()
