"""Browser test of judging each citation by keyboard (SPEC §4.3b, marker ``e2e``).

A reviewer judges the citations of five claims with f/p/x/c, types evidence
with v, confirms the proposed label with Enter (once after saying two PARTIALs
are enough together with a), overrules one proposal with a justification, and
marks a sixth claim not factual with 0; ``score --format json`` then counts
exactly those judgments.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from labeling.models import CitationJudgment, Claim, Label
from tests.e2e.conftest import review_url, wait_for_claim_after, wait_for_htmx
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    RunFactory,
)

pytestmark = pytest.mark.e2e

EVIDENCE = "launched in 1990"
WHY = "P2 states the claim word for word; P1 is off topic."


def judged_answer(reviewer):
    """Project ``judged`` (judging citations on), run ``r1``, one answer of six claims
    citing 2, 2, 1, 1, 2 and 1 passages."""
    project = ProjectFactory(slug="judged", name="Judged", judge_citations=True)
    project.members.add(reviewer)
    run = RunFactory(project=project, name="r1")
    sentences = [f"Fact {k} [1]." for k in range(1, 7)]
    answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="q1"),
                           text=" ".join(sentences))
    passages = [PassageFactory(answer=answer, passage_id=f"P{n}", position=n, text=f"Passage {n} text.")
                for n in range(1, 3)]
    claims, start = [], 0
    for index, (sentence, n_cites) in enumerate(zip(sentences, (2, 2, 1, 1, 2, 1), strict=True), start=1):
        claim = ClaimFactory(answer=answer, index=index, text=sentence, start=start, end=start + len(sentence))
        for position in range(n_cites):
            CitationFactory(claim=claim, passage=passages[position], position=position)
        claims.append(claim)
        start += len(sentence) + 1
    return run, answer, claims


def press(page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def test_judging_five_claims_by_keyboard_and_one_non_factual(live_server, reviewer, logged_in_page, capsys):
    """Judgments typed: c1 f x (FULL, NONE) -> SUPPORTED; c2 p p + a -> SUPPORTED (union of
    two PARTIALs); c3 c (UNJUDGEABLE) -> UNSUPPORTED; c4 p + evidence -> UNSUPPORTED;
    c5 x f -> proposes SUPPORTED, overruled to UNSUPPORTED with a justification; c6 -> 0.

    Judged 8: FULL 2 (c1, c5), PARTIAL 3 (c2 x2, c4), NONE 2 (c1, c5), UNJUDGEABLE 1 (c3).
    union: the two FULL + c2's two PARTIALs (c2 SUPPORTED) = 4/8; strict 2/8; lenient 5/8.
    Factual claims 5 (c6 left out), SUPPORTED 2 -> supported rate 2/5, non_factual 1."""
    page = logged_in_page
    run, answer, claims = judged_answer(reviewer)
    page.goto(live_server.url + review_url(run, answer))
    wait_for_htmx(page, painted=True)
    assert page.locator("#judge-form").count() == 1
    assert page.locator("#label-form").count() == 0

    press(page, "f", "x")
    assert page.text_content("[data-proposal]") == "SUPPORTED"
    press(page, "Enter")
    wait_for_claim_after(page, claims[0].pk)

    press(page, "p", "p")
    assert page.text_content("[data-proposal]") == "UNSUPPORTED"
    press(page, "a")
    assert page.text_content("[data-proposal]") == "SUPPORTED"
    press(page, "Enter")
    wait_for_claim_after(page, claims[1].pk)

    press(page, "c", "Enter")
    wait_for_claim_after(page, claims[2].pk)

    press(page, "p", "v")
    page.keyboard.type(EVIDENCE)
    press(page, "Enter", "Enter")  # the first leaves the evidence box, the second confirms
    wait_for_claim_after(page, claims[3].pk)

    press(page, "x", "f")
    assert page.text_content("[data-proposal]") == "SUPPORTED"
    press(page, "2")
    assert page.evaluate("document.activeElement.name") == "justification"
    page.keyboard.type(WHY)
    press(page, "Enter")
    wait_for_claim_after(page, claims[4].pk)

    press(page, "0")
    page.wait_for_selector("#claim-panel .notice:has-text('not a factual claim')")
    wait_for_htmx(page, painted=True)

    assert not Claim.objects.get(pk=claims[5].pk).factual
    labels = {label.claim_id: (label.value, label.justification)
              for label in Label.objects.filter(reviewer=reviewer, is_current=True)}
    assert [labels[c.pk][0] for c in claims[:5]] == ["SUPPORTED", "SUPPORTED", "UNSUPPORTED", "UNSUPPORTED",
                                                     "UNSUPPORTED"]
    assert labels[claims[4].pk][1] == WHY
    judged = [(j.citation.claim_id, j.judgment, j.evidence)
              for j in CitationJudgment.objects.filter(is_current=True).select_related("citation")
              .order_by("citation__claim__index", "citation__position")]
    assert judged == [
        (claims[0].pk, "FULL", ""), (claims[0].pk, "NONE", ""),
        (claims[1].pk, "PARTIAL", ""), (claims[1].pk, "PARTIAL", ""),
        (claims[2].pk, "UNJUDGEABLE", ""),
        (claims[3].pk, "PARTIAL", EVIDENCE),
        (claims[4].pk, "NONE", ""), (claims[4].pk, "FULL", ""),
    ]

    results = {}
    for rule in ("strict", "union", "lenient"):
        call_command("score", "--project", "judged", "--run", "r1", "--format", "json",
                     "--citation-precision-rule", rule)
        results[rule] = json.loads(capsys.readouterr().out)
    union = results["union"]["citation_judgments"]
    assert union["rule"] == "union"
    assert union["counts"] == {"FULL": 2, "PARTIAL": 3, "NONE": 2, "UNJUDGEABLE": 1}
    assert (union["judged"], union["precise"], union["precision_fraction"]) == (8, 4, "4/8")
    assert results["strict"]["citation_judgments"]["precision_fraction"] == "2/8"
    assert results["lenient"]["citation_judgments"]["precision_fraction"] == "5/8"
    claims_json = results["union"]["claims"]
    assert (claims_json["claims"], claims_json["supported"], claims_json["non_factual"]) == (5, 2, 1)
    assert claims_json["supported_rate"] == 0.4
