"""Ids in URLs and forms are read by one strict parser (``labeling.views.params``):
ASCII digits only, 1 to 2**31 - 1. Every URL that takes an id answers a bad one
(``²``, Arabic-Indic digits, ``-1``, a 20-digit number, nothing) with its own
answer for a missing value — a default, a form error or a 404 — never a 500, and
never by reading ``٣`` as 3."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Claim, Label
from labeling.tables.versions import label_table_snapshot
from labeling.views.params import MAX_PARAM, int_param
from tests.factories import LabelFactory
from tests.review_site import HX, Site

pytestmark = pytest.mark.django_db

SUPERSCRIPT_TWO = "²"      # "²".isdigit() is True but int("²") raises: today's 500
ARABIC_INDIC_THREE = "٣"   # int("٣") == 3
HUGE = "99999999999999999999"  # past every integer column: an overflow on the database
BAD = [SUPERSCRIPT_TWO, ARABIC_INDIC_THREE, "-1", HUGE, ""]


def arabic_indic(number: int) -> str:
    """``number`` in Arabic-Indic digits (U+0660–U+0669): what ``int()`` reads as ``number``."""
    return "".join(chr(0x660 + int(digit)) for digit in str(number))


@pytest.mark.parametrize(("value", "expected"), [
    ("7", 7), ("007", 7), ("1", 1), (str(MAX_PARAM), 2_147_483_647),
    (str(MAX_PARAM + 1), None), ("0", None), ("-1", None), ("+7", None), (" 7", None), ("7 ", None),
    ("7.0", None), ("1e3", None), ("", None), (None, None), (SUPERSCRIPT_TWO, None), (ARABIC_INDIC_THREE, None),
    ("３", None), (HUGE, None), (7, None),
])
def test_int_param_accepts_only_ascii_digits_within_range(value, expected):
    assert int_param(value) == expected


@pytest.fixture
def site(reviewer):
    return Site(reviewer)


def panel_claim(html: str) -> int:
    return int(html.split('id="claim-panel"', 1)[1].split('data-claim="', 1)[1].split('"', 1)[0])


@pytest.mark.parametrize("value", BAD)
def test_review_page_reads_a_bad_claim_id_as_none(alice, site, value):
    """The page opens on the first claim to label (claim 1 of q1), as without ``?claim``."""
    response = alice.get(site.review(site.a1) + f"?claim={value}")
    fragment = alice.get(site.review(site.a1) + f"?claim={value}", HTTP_HX_TARGET="claim-panel", **HX)

    assert response.status_code == 200 and fragment.status_code == 200
    assert panel_claim(response.content.decode()) == site.c1.pk
    assert panel_claim(fragment.content.decode()) == site.c1.pk


def test_review_page_does_not_read_arabic_indic_digits_as_the_claim_they_spell(alice, site):
    """``int("٣")`` is 3: today's main showed claim 3 for its id in Arabic-Indic digits."""
    response = alice.get(site.review(site.a1) + f"?claim={arabic_indic(site.c3.pk)}")

    assert response.status_code == 200
    assert panel_claim(response.content.decode()) == site.c1.pk
    assert panel_claim(alice.get(site.review(site.a1) + f"?claim={site.c3.pk}").content.decode()) == site.c3.pk


@pytest.mark.parametrize("value", BAD + ["arabic-c3"])
def test_next_claim_reads_a_bad_after_id_as_none(alice, site, value):
    if value == "arabic-c3":
        value = arabic_indic(site.c3.pk)
    response = alice.get(site.url("run_next") + f"?after={value}")

    assert response.status_code == 302
    assert response.url == site.review(site.a1, site.c1)


@pytest.mark.parametrize("value", BAD)
def test_undo_reads_bad_claim_and_answer_ids_as_none(alice, site, reviewer, value):
    nothing = alice.post(site.url("label_undo"), {"claim": value, "answer": value}, **HX)
    LabelFactory(claim=site.c3, reviewer=reviewer)

    undone = alice.post(site.url("label_undo"), {"claim": value, "answer": value}, **HX)

    assert nothing.status_code == 204
    assert undone.status_code == 200
    assert panel_claim(undone.content.decode()) == site.c3.pk
    assert not Label.objects.filter(reviewer=reviewer, is_current=True).exists()


def label_form(site, **fields):
    return {"value": "SUPPORTED", "justification": "", "claim": site.c1.pk, "revision": 1, "base_label": "", **fields}


# An empty base_label is the valid "no label yet" of every first save.
@pytest.mark.parametrize(("field", "value"), [(field, value) for field in ("claim", "revision", "base_label")
                                              for value in BAD if (field, value) != ("base_label", "")])
def test_label_form_with_a_bad_id_saves_nothing(alice, site, reviewer, field, value):
    response = alice.post(site.label_url(site.c1), label_form(site, **{field: value}), **HX)

    assert response.status_code == 200
    assert f"came back incomplete ({field})" in response.content.decode()
    assert not Label.objects.filter(reviewer=reviewer).exists()


def test_label_form_with_the_claim_id_in_arabic_indic_digits_saves_nothing(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), label_form(site, claim=arabic_indic(site.c1.pk)), **HX)

    assert "came back incomplete (claim)" in response.content.decode()
    assert not Label.objects.filter(reviewer=reviewer).exists()


@pytest.mark.parametrize("value", BAD)
def test_merge_with_a_bad_id_merges_nothing(alice, site, value):
    for form in ({"other": value, "revision": 1}, {"other": site.c2.pk, "revision": value}):
        response = alice.post(site.url("claim_merge", claim_id=site.c1.pk), form, **HX)

        assert response.status_code == 200
        assert "came back incomplete" in response.content.decode()
    assert site.a1.claims.count() == 3


@pytest.mark.parametrize("value", BAD)
def test_split_and_edit_with_a_bad_revision_change_nothing(alice, site, value):
    split = alice.post(site.url("claim_split", claim_id=site.c1.pk),
                       {"first": "Paris is the capital", "second": "of France.", "at": "", "revision": value}, **HX)
    edit = alice.post(site.url("claim_edit", claim_id=site.c1.pk), {"text": "Paris is old.", "revision": value}, **HX)

    assert split.status_code == 200 and edit.status_code == 200
    assert "Give the text of each part" in split.content.decode()
    assert "came back incomplete" in edit.content.decode()
    assert list(site.a1.claims.order_by("index").values_list("text", "revision"))[0] == (
        "Paris is the capital of France.", 1)


@pytest.mark.parametrize("value", [v for v in BAD if v])
def test_split_ignores_bad_citation_ids_and_refuses_a_bad_offset(alice, site, value):
    citation = site.c1.citations.get()
    url = site.url("claim_split", claim_id=site.c1.pk)

    refused = alice.post(url, {"first": "", "second": "", "at": value, "revision": 1}, **HX)
    split = alice.post(url, {"first": "Paris is the capital", "second": "of France.", "at": "", "revision": 1,
                             "first_citations": [citation.pk, value], "second_citations": [value]}, **HX)

    assert "Give the text of each part" in refused.content.decode()
    assert split.status_code == 200
    first, second = Claim.objects.filter(answer=site.a1).order_by("index")[:2]
    assert [list(c.citations.values_list("pk", flat=True)) for c in (first, second)] == [[citation.pk], []]


def test_ids_in_paths_past_the_range_are_404s(alice, site):
    for path in [f"/p/demo/runs/r1/answers/{HUGE}/", f"/p/demo/runs/r1/answers/{MAX_PARAM + 1}/",
                 "/p/demo/runs/r1/answers/0/", f"/p/demo/runs/r1/versions/{HUGE}.jsonl"]:
        assert alice.get(path).status_code == 404, path
    for action in ("label", "split", "merge", "edit"):
        assert alice.post(f"/p/demo/runs/r1/claims/{HUGE}/{action}/", {}).status_code == 404, action
    assert reverse("answer_review", kwargs={"project_slug": "demo", "run_name": "r1",
                                            "answer_id": MAX_PARAM}).endswith(f"/answers/{MAX_PARAM}/")


@pytest.mark.parametrize("value", BAD)
def test_version_diff_and_export_read_a_bad_version_number_as_none(alice, site, reviewer, value):
    label_table_snapshot(run=site.run, author=reviewer, note="first")
    LabelFactory(claim=site.c1, reviewer=reviewer)
    label_table_snapshot(run=site.run, author=reviewer, note="second")

    diff = alice.get(site.url("version_diff") + f"?old={value}&new={value}")
    export = alice.get(site.url("label_export") + f"?format=csv&version={value}")

    # The diff falls back to the last two versions: claim 1 gained alice's label.
    assert diff.status_code == 200
    assert "Choose two versions" not in diff.content.decode()
    assert diff.context["old"].number == 1 and diff.context["new"].number == 2
    # An empty version is the current table; any other bad number names no version.
    assert export.status_code == (200 if value == "" else 404)
