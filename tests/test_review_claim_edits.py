"""Split, merge and edit a claim from the review page (labeling.views.review_edits:
claim_split, claim_merge, claim_edit): the prefilled split form, with and without
htmx, errors shown again in the form, and split parts that stay located in the
answer text. The services themselves: test_claim_edits.py."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Claim
from tests.factories import LabelFactory
from tests.review_site import HX, Site, my_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(reviewer):
    """The review tests' project (tests/review_site.py), alice a member."""
    return Site(reviewer)


def test_split_form_is_prefilled_with_a_suggestion(alice, site):
    response = alice.get(site.url("claim_split", claim_id=site.c3.pk), HTTP_HX_TARGET="claim-panel", **HX)

    html = response.content.decode()
    assert "<html" not in html
    assert "Split claim 3 in two" in html
    # No clause break in "The Seine flows through Paris.": cut at the space nearest the middle (15 of 30).
    assert '<textarea id="split-first" name="first" rows="2" data-autofocus>The Seine flows</textarea>' in html
    assert '<textarea id="split-second" name="second" rows="2">through Paris.</textarea>' in html


def test_split_through_the_page_without_js(alice, site):
    citation = site.c1.citations.get()

    response = alice.post(site.url("claim_split", claim_id=site.c1.pk), {
        "first": "Paris is the capital", "second": "of France.", "at": "", "revision": 1,
        "first_citations": [citation.pk], "second_citations": [],
    })

    assert response.status_code == 302
    assert list(site.a1.claims.order_by("index").values_list("index", "text")) == [
        (1, "Paris is the capital"), (2, "of France."), (3, "It is old."), (4, "The Seine flows through Paris.")]
    page = alice.get(response.url).content.decode()
    assert "Split claim 1 into claims 1 and 2" in page
    assert "not word for word" not in page  # both parts are in the answer as written


def test_split_into_retyped_parts_says_they_are_no_longer_marked(alice, site):
    citation = site.c1.citations.get()

    response = alice.post(site.url("claim_split", claim_id=site.c1.pk), {
        "first": "Paris is the capital", "second": "It is the capital of France.", "at": "", "revision": 1,
        "first_citations": [citation.pk], "second_citations": [citation.pk],
    }, **HX)

    assert ("Claim 2 is not word for word in the answer, so the answer text no longer marks it"
            in response.content.decode())


def test_split_error_rerenders_the_form(alice, site):
    response = alice.post(site.url("claim_split", claim_id=site.c1.pk), {
        "first": "Paris is the capital", "second": "of France.", "at": "", "revision": 1,
    }, **HX)

    html = response.content.decode()
    assert "[P1] would be lost" in html
    assert "Split claim 1 in two" in html
    assert site.a1.claims.count() == 3


def test_merge_and_edit_through_the_page(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)

    alice.post(site.url("claim_merge", claim_id=site.c1.pk), {"other": site.c2.pk, "revision": 1}, **HX)
    response = alice.post(site.url("claim_edit", claim_id=site.c1.pk), {"text": "Paris is old.", "revision": 2},
                          **HX)

    html = response.content.decode()
    assert "Claim 1 reworded" in html
    assert "It is no longer word for word in the answer" in html
    assert list(site.a1.claims.order_by("index").values_list("index", "text", "revision")) == [
        (1, "Paris is old.", 3), (2, "The Seine flows through Paris.", 1)]
    assert my_labels(reviewer) == []


def test_edit_with_a_stale_revision_is_refused(alice, site):
    response = alice.post(site.url("claim_edit", claim_id=site.c1.pk), {"text": "Other.", "revision": 5}, **HX)

    assert "changed by someone else" in response.content.decode()
    site.c1.refresh_from_db()
    assert site.c1.text == "Paris is the capital of France."


def test_split_with_the_suggestion_keeps_both_parts_in_the_answer_text(client, expertqa_project, reviewer):
    """The claim the new user split (answer expertqa:03cecfa2a0a3 of rr_sphere_gpt4,
    claim 4): the form suggests a cut before "and interest in", and after the split
    both parts carry offsets that point at their own text, so both stay marked."""
    import html as html_lib
    import re

    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)
    claim = Claim.objects.select_related("answer").get(
        answer__run__name="rr_sphere_gpt4", answer__question__question_id="expertqa:03cecfa2a0a3", index=4)
    answer = claim.answer
    assert answer.text[claim.start:claim.end] == claim.text
    kwargs = {"project_slug": "expertqa", "run_name": "rr_sphere_gpt4", "claim_id": claim.pk}
    form = client.get(reverse("claim_split", kwargs=kwargs), HTTP_HX_TARGET="claim-panel", **HX).content.decode()
    first, second = (html_lib.unescape(re.search(rf'name="{name}"[^>]*>([^<]*)</textarea>', form).group(1))
                     for name in ("first", "second"))
    assert first.endswith("have relevant knowledge")
    assert second.startswith("and interest in the marketing campaign") and second.endswith("Passage ID 4 [4].")
    assert f"{first} {second}" == claim.text

    citation = claim.citations.get()
    client.post(reverse("claim_split", kwargs=kwargs), {
        "first": first, "second": second, "at": "", "revision": claim.revision,
        "first_citations": [citation.pk], "second_citations": [citation.pk]})

    parts = list(answer.claims.filter(index__in=[4, 5]).order_by("index"))
    assert [part.text for part in parts] == [first, second]
    assert [(part.start, part.end) for part in parts] == [
        (claim.start, claim.start + len(first)), (claim.end - len(second), claim.end)]
    assert all(answer.text[part.start:part.end] == part.text for part in parts)
    page = client.get(reverse("answer_review", kwargs={"project_slug": "expertqa", "run_name": "rr_sphere_gpt4",
                                                         "answer_id": answer.pk})).content.decode()
    assert "not in text" not in page
    assert "could not be located" not in page


def test_split_parts_sent_with_crlf_line_breaks_are_still_located(alice, site):
    """A browser sends a textarea's line breaks as CRLF; the answer has LF.
    "Lyon is big.\nIt is old." is 0..23; cut after "It" (15): parts 0..15 and 16..23."""
    site.a2.text = "Lyon is big.\nIt is old. Lyon has a moon."
    site.a2.save()
    site.d1.text, site.d1.end = "Lyon is big.\nIt is old.", 23
    site.d1.save()
    site.d2.start, site.d2.end = 24, 40
    site.d2.save()

    citation = site.d1.citations.get()
    alice.post(site.url("claim_split", claim_id=site.d1.pk), {
        "first": "Lyon is big.\r\nIt", "second": "is old.", "at": "", "revision": 1,
        "first_citations": [citation.pk], "second_citations": [citation.pk]})

    assert list(site.a2.claims.values_list("index", "text", "start", "end").order_by("index")) == [
        (1, "Lyon is big.\nIt", 0, 15), (2, "is old.", 16, 23), (3, "Lyon has a moon.", 24, 40)]
