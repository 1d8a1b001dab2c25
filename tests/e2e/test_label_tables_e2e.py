"""Browser test of the offline-labeling round trip: save a version,
download the reviewer's workbook, change one label in it, upload it, read
the preview, apply, see the score move, save a second version and diff the two.

Uses the shared ``logged_in_page`` fixture of ``tests/e2e/conftest.py``
(Debian's Chromium through Playwright against ``live_server``; skipped, saying
why, only where ``/usr/bin/chromium`` is absent).
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from labeling.models import Label, LabelTableVersion, Run
from tests.conftest import FIXTURES_DIR

pytestmark = pytest.mark.e2e

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"


@pytest.fixture
def alices_run(transactional_db, reviewer, settings, tmp_path):
    """The seed's 5 claims with alice's labels: 1, 2, 4 SUPPORTED, 3 and 5
    UNSUPPORTED → support 3/5."""
    from labeling.importers.load import project_for_import, run_import

    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED, default_reviewer="alice")
    Label.objects.update(reviewer=reviewer)
    project.members.add(reviewer)
    return Run.objects.select_related("project").get(project=project, name="seed-coverage-support")


def test_offline_labeling_round_trip_in_the_browser(live_server, alices_run, logged_in_page, tmp_path):
    from playwright.sync_api import expect

    page = logged_in_page
    kwargs = {"project_slug": "seed", "run_name": alices_run.name}
    versions_url = live_server.url + reverse("version_list", kwargs=kwargs)
    import_url = live_server.url + reverse("label_import", kwargs=kwargs)
    workbook_path = tmp_path / "alice.xlsx"

    page.goto(versions_url)
    expect(page.locator("#current-support")).to_have_text("3/5 = 0.60")
    page.fill("#snapshot-note", "before offline labeling")
    page.click("text=Save version")
    expect(page.locator(".message.success")).to_contain_text("Saved version 1: 5 claims, 5 labels")

    page.goto(import_url)
    with page.expect_download() as download:
        page.click("text=download your labels as XLSX")
    download.value.save_as(workbook_path)

    # Offline: claim 3 becomes SUPPORTED, with a justification.
    workbook = load_workbook(workbook_path)
    sheet = workbook["Labels"]
    header = [cell.value for cell in sheet[1]]
    row = next(r for r in sheet.iter_rows(min_row=2) if r[header.index("claim_index")].value == 3)
    assert row[header.index("label")].value == "UNSUPPORTED"
    row[header.index("label")].value = "SUPPORTED"
    row[header.index("justification")].value = "P2 covers every token error."
    workbook.save(workbook_path)

    page.set_input_files("#label-file", str(workbook_path))
    page.click("text=Check file")
    expect(page.locator("#change-count")).to_have_text("1")
    change = page.locator("table.import-changes tbody tr")
    expect(change).to_have_count(1)
    expect(change).to_contain_text("UNSUPPORTED → SUPPORTED")
    expect(change).to_contain_text("P2 covers every token error.")
    assert not Label.objects.filter(justification="P2 covers every token error.").exists()

    page.click("text=Save 1 label as alice")
    expect(page.locator(".message.success")).to_contain_text("Imported 1 label as alice from alice.xlsx")
    expect(page.locator("#current-support")).to_have_text("4/5 = 0.80")

    page.fill("#snapshot-note", "after offline labeling")
    page.click("text=Save version")
    page.click("text=Show changes")
    expect(page.locator("table.version-diff tbody tr")).to_have_count(1)
    expect(page.locator("table.version-diff tbody tr")).to_contain_text("P2 covers every token error.")
    assert re.search(r"/versions/diff/\?old=1&new=2$", page.url)

    label = Label.objects.get(claim__answer__run=alices_run, claim__index=3, is_current=True)
    assert (label.value, label.justification) == ("SUPPORTED", "P2 covers every token error.")
    assert Label.objects.filter(claim__answer__run=alices_run, claim__index=3).count() == 2
    assert list(LabelTableVersion.objects.filter(run=alices_run).values_list("number", flat=True)) == [1, 2]
