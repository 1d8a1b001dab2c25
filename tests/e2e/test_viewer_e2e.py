"""A viewer reads the review page and no key of theirs writes (SPEC §7; marker
``e2e``). Today's main gave a viewer the whole labeling screen, and pressing ``1``
replaced the page with a bare 403."""

from __future__ import annotations

import pytest

from labeling.models import Label, Membership
from tests.e2e.conftest import review_url, wait_for_claim_after, wait_for_htmx
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)

pytestmark = pytest.mark.e2e

# Every key of the review page that acts on a claim (static/js/app.js), j last (a GET).
KEYS = ["1", "2", "Enter", "e", "u", "0", "s", "t", "m", "n", "f", "a"]


def test_a_viewer_reads_the_claims_and_labels_and_no_key_posts(live_server, reviewer, logged_in_page, tmp_path):
    """alice is a viewer; bob labeled claim 1 SUPPORTED. Every claim key does nothing
    (no request but GETs, no label, the page stays); j moves to claim 2 as for a reviewer."""
    project = ProjectFactory(slug="read", name="Read only")
    Membership.objects.create(project=project, reviewer=reviewer, role="viewer")
    bob = ReviewerFactory(username="bob")
    Membership.objects.create(project=project, reviewer=bob, role="reviewer")
    run = RunFactory(project=project, name="r1")
    answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="q1",
                                                             text="When did the bridge open?"),
                           text="The bridge opened in 1932 [1]. It took six years [2].")
    first = ClaimFactory(answer=answer, index=1, text="The bridge opened in 1932 [1].", start=0, end=30)
    CitationFactory(claim=first, cited_id="1", passage__text="The bridge opened to traffic in 1932.")
    second = ClaimFactory(answer=answer, index=2, text="It took six years [2].", start=31, end=52)
    CitationFactory(claim=second, cited_id="2", passage__text="Construction lasted six years.")
    LabelFactory(claim=first, reviewer=bob, value="SUPPORTED", justification="The passage gives 1932.")
    page = logged_in_page
    writes: list[str] = []
    page.on("request", lambda request: writes.append(f"{request.method} {request.url}")
            if request.method != "GET" else None)

    page.goto(live_server.url + review_url(run, answer, first))
    wait_for_htmx(page, painted=True)
    page.screenshot(path=str(tmp_path / "viewer_review.png"), full_page=True)
    for key in KEYS:
        page.keyboard.press(key)
        if page.locator("#shortcut-help[open]").count():
            page.keyboard.press("Escape")
    wait_for_htmx(page)
    assert writes == []
    assert list(Label.objects.values_list("reviewer__username", "claim_id", "value")) == [
        ("bob", first.pk, "SUPPORTED")]
    assert page.inner_text(".read-only-note").startswith("Read-only: your role in project read is viewer.")
    assert "bob" in page.inner_text("#claim-panel .history") and "The passage gives 1932." in page.inner_text(
        "#claim-panel .history")
    assert page.locator("#label-form, #judge-form, .claim-tools a, form[method=post] button").count() == 1  # log out

    page.keyboard.press("j")
    assert wait_for_claim_after(page, first.pk) == second.pk
    assert writes == []
    assert page.inner_text("#claim-panel .claim-text") == "It took six years [2]."
