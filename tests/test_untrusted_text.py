"""Untrusted text stays text (SPEC §7): names with HTML, quotes and line
breaks in pages, fragments and downloads' ``Content-Disposition``; cells
starting with ``= + - @``, tab or CR never formulas in CSV or XLSX.

Run names cannot hold control characters (``labeling.names``); the hostile
name here is written past that check, straight into the database, as a row
from an older version or another tool could be: the headers must hold anyway.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from labeling.models import Label, Run
from labeling.tables.export import label_table_export
from labeling.tables.versions import label_table_snapshot
from tests.conftest import FIXTURES_DIR
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db

# No "/": a run name is one part of its address.
HOSTILE_NAME = 'run <b>"x"<i>;\r\nSet-Cookie: a=b é'
# A Content-Disposition value: one line, one quoted ASCII filename without quotes or
# backslashes, and RFC 6266's percent-encoded UTF-8 form for names beyond ASCII.
SAFE_DISPOSITION = re.compile(r"attachment; (filename=\"[^\"\\\r\n]+\"|filename\*=utf-8''[A-Za-z0-9%._~!$&+^`|'-]+)")
FORMULA_STARTS = ["=1+1", "+1 more", "-partly", "@mention", "\tindented", "\rreturn"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def hostile(client):
    """The seed run (5 claims labeled) and a second run of the same answers, both with
    HTML, quotes and a line break in their names; a superuser logged in."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support_v2.jsonl")
    first, second = Run.objects.filter(project=project).order_by("name")
    Run.objects.filter(pk=first.pk).update(name=HOSTILE_NAME)
    Run.objects.filter(pk=second.pk).update(name=HOSTILE_NAME + " v2")
    first.refresh_from_db()
    second.refresh_from_db()
    lead = ReviewerFactory(username="boss", is_superuser=True, is_staff=True)
    client.force_login(lead)
    label_table_snapshot(run=first, author=lead, note="<script>alert(1)</script>")
    return client, first, second


def _kwargs(run: Run) -> dict:
    return {"project_slug": run.project.slug, "run_name": run.name}


def test_downloads_name_hostile_runs_in_one_safe_header(hostile):
    client, run, other = hostile
    responses = {
        "xlsx": client.get(reverse("label_export", kwargs=_kwargs(run))),
        "csv": client.get(reverse("label_export", kwargs=_kwargs(run)), {"format": "csv"}),
        "version": client.get(reverse("version_file", kwargs={**_kwargs(run), "number": 1})),
        "compare": client.get(reverse("run_compare_xlsx", args=[run.project.slug]),
                              {"a": run.name, "b": other.name}),
    }

    for kind, response in responses.items():
        assert response.status_code == 200, kind
        header = response["Content-Disposition"]
        assert SAFE_DISPOSITION.fullmatch(header), (kind, header)
        assert "\n" not in header and "\r" not in header and "<" not in header and "Set-Cookie" not in header.replace(
            "Set-Cookie_", "")
    assert "a" not in {c.key for r in responses.values() for c in r.cookies.values()}


def test_pages_and_fragments_show_hostile_names_as_text(hostile):
    client, run, _other = hostile
    pages = [
        client.get(reverse("project_detail", args=[run.project.slug])),
        client.get(reverse("run_detail", kwargs=_kwargs(run))),
        client.get(reverse("run_detail", kwargs=_kwargs(run)), headers={"HX-Request": "true"}),
        client.get(reverse("run_scatter", kwargs=_kwargs(run)), headers={"HX-Request": "true"}),
        client.get(reverse("version_list", kwargs=_kwargs(run))),
        client.get(reverse("admin:labeling_run_changelist")),
        client.get(reverse("admin:labeling_labeltableversion_changelist")),
    ]
    for response in pages:
        body = response.content.decode()
        assert response.status_code == 200
        assert "<b>" not in body and "<script>alert" not in body, response.request["PATH_INFO"]
    assert "&lt;b&gt;" in pages[1].content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[4].content.decode()


@pytest.mark.parametrize("text", FORMULA_STARTS)
def test_formula_like_text_is_never_a_formula_in_csv_or_xlsx(hostile, text):
    """XLSX: a string cell (type ``s``, never a formula) with Excel's quote prefix;
    CSV: a leading apostrophe. In XLSX a CR becomes a line break (XML keeps no CR),
    and a cell starting with a line break needs no prefix."""
    _client, run, _other = hostile
    Label.objects.filter(claim__answer__run=run, claim__index=1, is_current=True).update(justification=text)

    out = io.BytesIO()
    label_table_export(run=run, fmt="xlsx", out=out)
    cell = load_workbook(io.BytesIO(out.getvalue()))["Labels"].cell(row=2, column=10)
    out = io.BytesIO()
    label_table_export(run=run, fmt="csv", out=out)
    row = next(csv.DictReader(io.StringIO(out.getvalue().decode("utf-8-sig"), newline="")))

    assert cell.data_type == "s"
    assert cell.quotePrefix is (text[0] != "\r")
    assert cell.value == text.replace("\r", "\n")
    assert row["justification"] == "'" + text


def test_comparison_workbook_keeps_formula_like_claims_as_text(hostile):
    client, run, other = hostile
    from labeling.models import Claim

    Claim.objects.filter(answer__run=run, index=1).update(text='=HYPERLINK("http://x","y")')
    response = client.get(reverse("run_compare_xlsx", args=[run.project.slug]), {"a": run.name, "b": other.name})
    workbook = load_workbook(io.BytesIO(b"".join(response.streaming_content) if response.streaming
                                        else response.content))

    cells = [cell for sheet in workbook for row in sheet.iter_rows() for cell in row
             if isinstance(cell.value, str) and cell.value.startswith("=HYPERLINK")]
    assert cells, "the claim is in the workbook"
    assert all(cell.data_type == "s" and cell.quotePrefix for cell in cells)
