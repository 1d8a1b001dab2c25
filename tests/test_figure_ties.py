"""A figure whose rounding ties reads the same on the page, in the CLI's text and in the
JSON's texts (SPEC §4): every one goes through ``scoring.ratio.format_value``, which
rounds half away from zero — 1/8 = 0.125 is ``0.13`` and 5/32 = 0.15625 is ``0.1563``
at four decimals — where a float format (``:.2f``, ``:.4f``) rounds the tie to even
(``0.12``, ``0.1562``)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.template import Context, Template
from django.urls import reverse

from labeling.importers.load import project_for_import, run_import
from labeling.integrations.tokens import token_create
from labeling.management.commands.agreement import figure_text
from labeling.models import Claim, LabelValue, Membership, Role
from tests.factories import LabelFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


def _import(project, run: str, *, supported: int, claims: int) -> None:
    """Run ``run`` answers q1 with ``claims`` claims, each citing P1: the first
    ``supported`` labeled SUPPORTED by ``expert``, the rest UNSUPPORTED (or unlabeled
    with ``supported`` None)."""
    rows = [{"text": f"Claim {i}.", "citations": [{"passage_id": "P1"}]} for i in range(claims)]
    for i, row in enumerate(rows):
        if supported is not None:
            row |= {"label": "SUPPORTED", "reviewer": "expert"} if i < supported else {
                "label": "UNSUPPORTED", "justification": "Not in P1.", "reviewer": "expert"}
    line = {"question_id": "q1", "question": "Question one?", "run": run, "answer": "An answer.",
            "passages": [{"id": "P1", "source": "s", "text": "Passage one."}], "claims": rows}
    run_import(project=project, source=(json.dumps(line) + "\n").encode())


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_figure_filter_and_the_cli_round_a_tie_alike():
    """``|figure`` (every ratio a page shows) is ``format_value``: 0.125 → 0.13, 0.625 →
    0.63, 0.03125 → 0.0313 at four decimals, ``None`` → "—". The agreement command's
    text of the same kappa and interval reads the same numbers."""
    page = Template("{% load figures %}{{ a|figure }} {{ b|figure }} {{ c|figure:4 }} {{ none|figure }}").render(
        Context({"a": 0.125, "b": 0.625, "c": 0.03125, "none": None}))
    assert page == "0.13 0.63 0.0313 —"
    assert (f"{0.125:.2f}", f"{0.625:.2f}", f"{0.03125:.4f}") == ("0.12", "0.62", "0.0312")  # what it replaces
    assert figure_text("Cohen's kappa", 0.125, (0.125, 0.625), 8) == "Cohen's kappa 0.13 (95% CI 0.13–0.63, n = 8)"


def test_a_support_delta_of_one_eighth_reads_plus_0_13_on_the_page_the_cli_and_the_json(client, reviewer):
    """Run a: 1 of 8 cited claims SUPPORTED, support 1/8 = 0.125; run b: 2 of 8, 0.25. The
    delta +0.125 reads +0.13 (it read +0.12 beside 0.13 and 0.25); gap 7/8 − 6/8 = −0.125
    reads −0.13."""
    project = project_for_import(slug="ties")
    _import(project, "a", supported=1, claims=8)
    _import(project, "b", supported=2, claims=8)
    project.members.add(reviewer)
    client.force_login(reviewer)

    html = client.get(reverse("run_compare", kwargs={"project_slug": "ties"}),
                      {"a": "a", "b": "b", "threshold": "0.85"}).content.decode()
    assert ('<th scope="row">Support</th><td class="num">1/8 = 0.13</td><td class="num">2/8 = 0.25</td>'
            '<td class="num delta better">+0.13</td>') in html
    assert '<td class="num">0.88</td><td class="num">0.75</td><td class="num delta changed">−0.13</td>' in html

    out = io.StringIO()
    call_command("compare", "--run", "a", "--run", "b", "--project", "ties", stdout=out)
    support = next(line for line in out.getvalue().splitlines() if line.startswith("Support "))
    assert support.split()[:8] == ["Support", "1/8", "=", "0.13", "2/8", "=", "0.25", "+0.13"]

    out = io.StringIO()
    call_command("compare", "--run", "a", "--run", "b", "--project", "ties", "--format", "json", stdout=out)
    summary = json.loads(out.getvalue())["summary"]
    assert (summary["support"]["a_text"], summary["support"]["delta"]) == ("1/8 = 0.13", 0.125)


def test_the_gate_names_a_drop_of_5_32_as_0_1563_in_the_cli_and_the_api(client):
    """Baseline support 16/32 = 0.5, the run's 11/32 = 0.34375: dropped 5/32 = 0.15625 >
    allowed 1/32 = 0.03125, at four decimals 0.1563 and 0.0313 (a float format: 0.1562,
    0.0312). The command's failure and the API's ``failures`` (JSON text) are one string."""
    project = project_for_import(slug="gate-ties")
    _import(project, "base", supported=16, claims=32)
    _import(project, "cand", supported=11, claims=32)
    expected = "support: cand 0.3438 vs baseline base 0.5000: dropped 0.1563 > allowed 0.0313"

    with pytest.raises(CommandError) as failure:
        call_command("score", "--project", "gate-ties", "--run", "cand", "--baseline", "base",
                     "--max-drop", "support=0.03125", stdout=io.StringIO(), stderr=io.StringIO())
    assert expected in str(failure.value)

    lead = ReviewerFactory(username="ties-lead")
    Membership.objects.create(project=project, reviewer=lead, role=Role.LEAD)
    secret = token_create(project=project, reviewer=lead, created_by=None).secret
    response = client.post("/api/v1/projects/gate-ties/runs/cand/gate",
                           {"baseline": "base", "max_drop": {"support": 0.03125}}, content_type="application/json",
                           headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 409
    assert response.json()["failures"] == [expected]


def test_a_confusion_cell_of_one_claim_in_eight_shows_13_percent(client, reviewer):
    """Two reviewers on 8 cited claims: both SUPPORTED on 7, one UNSUPPORTED on the last.
    The agreement page's confusion cells: 7 (88%) and 1 (13%), 12.5% rounded as every
    figure is (``round`` gave 12%)."""
    project = project_for_import(slug="heat-ties")
    _import(project, "r", supported=None, claims=8)
    one, two = ReviewerFactory(username="one"), ReviewerFactory(username="two")
    for claim in Claim.objects.filter(answer__run__name="r").order_by("index"):
        LabelFactory(claim=claim, reviewer=one)
        if claim.index == 8:
            LabelFactory(claim=claim, reviewer=two, value=LabelValue.UNSUPPORTED, justification="No.")
        else:
            LabelFactory(claim=claim, reviewer=two)
    project.members.add(reviewer)
    client.force_login(reviewer)

    text = _text(client.get(reverse("run_agreement", kwargs={"project_slug": "heat-ties", "run_name": "r"}))
                 .content.decode())
    assert "7 (88%) 1 (13%)" in text


def test_no_float_format_shows_a_figure_anywhere_else():
    """No ``:.2f``/``:.4f``/``:.0%`` in labeling/ or scoring/ and no ``floatformat`` in a
    template: a new one would round ties to even beside ``format_value``'s half away from zero."""
    root = Path(__file__).parent.parent
    spec = re.compile(r"\{[^{}]*:[+ ]?\.(\d+|\{\w+\})[f%]\}")
    found = [f"{path.relative_to(root)}:{n}" for folder in ("labeling", "scoring")
             for path in (root / folder).rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if spec.search(line)]
    found += [str(path.relative_to(root)) for path in (root / "templates").rglob("*.html")
              if "floatformat" in path.read_text(encoding="utf-8")]
    assert found == []
