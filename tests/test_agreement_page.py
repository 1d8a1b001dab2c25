"""The run's agreement page (SPEC §4.4): figures a lead can read, pairs, confusion heat maps,
the disputed claims with every reviewer's justification, who may open it, query budgets."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.models import Answer, Citation, Claim, Label, Passage, Question, Reviewer, ReviewerKind, Run
from tests.agreement_data import EXPERT, FLIP_RUN, copy_with_flips
from tests.factories import ProjectFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


def agreement_url(slug: str, run: str) -> str:
    return reverse("run_agreement", kwargs={"project_slug": slug, "run_name": run})


def text_of(html: str) -> str:
    """The page's text with tags dropped and spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def flipped_page(client, reviewer, expertqa_project):
    """The experts' labels on post_hoc_gs_gpt4 and a copy with 10 S→U and 5 U→S flips
    (figures worked by hand in tests/test_agreement_command.py: kappa 9002/11627 ≈ 0.77,
    alpha 35988/46458 ≈ 0.77, AC1 65542/76042 ≈ 0.86, agreement 160/175)."""
    copy_with_flips(Run.objects.get(project=expertqa_project, name=FLIP_RUN))
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)
    return client.get(agreement_url("expertqa", FLIP_RUN))


def test_page_gives_each_figure_with_its_interval_n_and_meaning(flipped_page):
    html = flipped_page.content.decode()
    text = text_of(html)

    assert flipped_page.status_code == 200
    alpha = text_of(html.split('id="figure-alpha"', 1)[1].split("</div>", 1)[0])
    assert "Krippendorff's alpha 0.77 good" not in alpha  # 0.7746 is below 0.80: tentative
    assert "Krippendorff's alpha 0.77 tentative likely between" in alpha
    assert "175 claims with two or more labels" in alpha
    assert "Trust the labels from 0.80" in alpha
    ac1 = text_of(html.split('id="figure-ac1"', 1)[1].split("</div>", 1)[0])
    assert "Gwet's AC1 0.86 good likely between" in ac1
    assert "stays fair when nearly every claim is SUPPORTED" in ac1
    assert "Disputed claims 15" in text
    assert "bootstrap over claims, fixed seed" in text and "resampled 2000 times" in text
    assert "SUPPORTED 246/261 = 0.94" in text  # agreement per label, over label pairs


def test_pairs_table_and_confusion_heat_map(flipped_page):
    text = text_of(flipped_page.content.decode())
    pair = flipped_page.context["pairs"][0]

    assert f"{EXPERT} (external) flipper (external) 175 160/175 = 0.91 0.77 tentative" in text
    assert [[(c.count, c.percent, c.level, c.agree) for c in cells] for _label, cells in pair.rows] == [
        [(123, 70, 4, True), (10, 6, 1, False)],   # 123/175 = 70 %: 3.5 fifths rounds to 4
        [(5, 3, 1, False), (37, 21, 1, True)],
    ]
    assert f"{EXPERT}: SUPPORTED 123 (70%) 10 (6%)" in text
    assert '<th scope="col">flipper: UNSUPPORTED</th>' in flipped_page.content.decode()


def test_disagreements_list_both_justifications_and_link_each_claim(flipped_page):
    html = flipped_page.content.decode()
    rows = flipped_page.context["disagreements"]
    first = Label.objects.filter(reviewer__username="flipper", justification="flipped from SUPPORTED").order_by(
        "claim_id").first()

    assert len(rows) == 15
    assert rows[0].claim_id == first.claim_id
    assert [(said.reviewer, said.value) for said in rows[0].labels] == [(EXPERT, "SUPPORTED"),
                                                                        ("flipper", "UNSUPPORTED")]
    unsupported = [row for row in rows if row.labels[0].value == "UNSUPPORTED"]
    assert len(unsupported) == 5
    expert_text = Label.objects.get(claim_id=unsupported[0].claim_id, reviewer__username=EXPERT).justification
    assert unsupported[0].labels[0].justification == expert_text
    assert unsupported[0].labels[1].justification == "flipped from UNSUPPORTED"
    review = reverse("answer_review", kwargs={"project_slug": "expertqa", "run_name": FLIP_RUN,
                                              "answer_id": first.claim.answer_id})
    assert f'href="{review}?claim={first.claim_id}"' in html
    assert html.count("flipped from SUPPORTED") == 10


def test_disagreements_show_the_leads_adjudication_and_how_many_are_settled(client, reviewer, expertqa_project):
    """Of the 15 flipped claims a lead settles the first two by id (SUPPORTED, then
    UNSUPPORTED): the count reads 2 of 15, those rows carry the verdict and its
    reason, the other 13 say "not yet"."""
    from labeling.team.adjudication import adjudication_save

    run = Run.objects.get(project=expertqa_project, name=FLIP_RUN)
    copy_with_flips(run)
    expertqa_project.members.add(reviewer)
    lead = ReviewerFactory(username="lea")
    disputed = sorted(Label.objects.filter(reviewer__username="flipper", justification__startswith="flipped")
                      .values_list("claim_id", flat=True))
    for claim_id, value in zip(disputed[:2], ["SUPPORTED", "UNSUPPORTED"], strict=True):
        adjudication_save(claim=Claim.objects.get(pk=claim_id), lead=lead, value=value,
                          reason=f"lea read the passage for {claim_id}")
    client.force_login(reviewer)

    response = client.get(agreement_url("expertqa", FLIP_RUN))
    html = response.content.decode()
    rows = response.context["disagreements"]

    assert "2 of 15 disputed claims adjudicated" in text_of(html.split('id="adjudicated-count"', 1)[1])
    assert [(row.claim_id, row.verdict.value, row.verdict.reason, row.verdict.lead) for row in rows[:2]] == [
        (disputed[0], "SUPPORTED", f"lea read the passage for {disputed[0]}", "lea"),
        (disputed[1], "UNSUPPORTED", f"lea read the passage for {disputed[1]}", "lea")]
    assert all(row.verdict is None for row in rows[2:])
    first_row = text_of(html.split(f'id="claim-{disputed[0]}"', 1)[1].split("</tr>", 1)[0])
    assert f"SUPPORTED lea read the passage for {disputed[0]} by lea" in first_row
    assert html.count("not yet") == 13


def test_run_page_links_to_the_agreement_page(client, reviewer, expertqa_project):
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)

    response = client.get(reverse("run_detail", kwargs={"project_slug": "expertqa", "run_name": FLIP_RUN}))

    assert f'href="{agreement_url("expertqa", FLIP_RUN)}"' in response.content.decode()


def test_only_project_members_see_the_page(client, expertqa_project):
    outsider = ReviewerFactory(username="outsider")
    client.force_login(outsider)

    assert client.get(agreement_url("expertqa", FLIP_RUN)).status_code == 404
    client.logout()
    assert client.get(agreement_url("expertqa", FLIP_RUN)).status_code == 302  # to the login page


def test_one_reviewer_gets_an_explanation_instead_of_figures(client, reviewer, expertqa_project):
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)

    response = client.get(agreement_url("expertqa", FLIP_RUN))

    assert "Agreement needs two reviewers who labeled the same cited claims. Only expertqa-annotator has " \
           "labeled this run so far." in text_of(response.content.decode())


def disputed_run(project, reviewers, *, claims: int) -> Run:
    """``claims`` cited claims in answers of 5; every reviewer labels each, the
    first reviewer SUPPORTED throughout, the others UNSUPPORTED on every third
    claim (with a justification), so a third of the claims are disputed."""
    run = Run.objects.create(project=project, name=f"r{claims}")
    answers = Answer.objects.bulk_create([
        Answer(run=run, question=question, question_key=question.question_id, text="x", content_hash=f"{i:064x}")
        for i, question in enumerate(Question.objects.bulk_create([
            Question(project=project, question_id=f"r{claims}-q{i}", text=f"Question {i}?")
            for i in range((claims + 4) // 5)]))])
    passages = Passage.objects.bulk_create([Passage(answer=a, passage_id="P1", position=0) for a in answers])
    rows = Claim.objects.bulk_create([Claim(answer=answers[i // 5], index=i % 5 + 1, text=f"Claim {i}.")
                                      for i in range(claims)])
    Citation.objects.bulk_create([Citation(claim=c, passage=passages[i // 5], position=0, cited_id="P1")
                                  for i, c in enumerate(rows)])
    Label.objects.bulk_create([
        Label(claim=c, reviewer=r, claim_revision=1,
              value="UNSUPPORTED" if k and i % 3 == 0 else "SUPPORTED",
              justification="not in the passage" if k and i % 3 == 0 else "")
        for i, c in enumerate(rows) for k, r in enumerate(reviewers)])
    return run


@pytest.mark.parametrize("claims", [5, 500])
def test_agreement_page_query_budget(client, reviewer, django_assert_max_num_queries, claims):
    project = ProjectFactory(slug="budget")
    project.members.add(reviewer)
    others = [Reviewer.objects.create(username=name, kind=ReviewerKind.EXTERNAL) for name in ("ann", "ben")]
    run = disputed_run(project, [reviewer, *others], claims=claims)
    client.force_login(reviewer)

    # 1 session, 1 user, 1 run with its project (membership in the same query), 1 the run's label state
    # (labeling.exports.current_labels), 1 current labels of the run's cited claims, 1 kinds of its
    # reviewers, 1 its assigned reviewers (whose figures are the headline), 1 the run's current
    # adjudications (for the settled count and the page's verdicts); the page of disagreements: 1 claims,
    # 1 their labels; 1 the run's current citation judgments (their alpha, SPEC §6).
    with django_assert_max_num_queries(11):
        response = client.get(agreement_url("budget", run.name))

    disputed = (claims + 2) // 3
    assert len(response.context["result"].disputed) == disputed
    assert len(response.context["disagreements"]) == min(disputed, 50)
    assert [(p.reviewer_a, p.reviewer_b, p.n) for p in response.context["result"].pairs] == [
        ("alice", "ann", claims), ("alice", "ben", claims), ("ann", "ben", claims)]


def test_disagreements_come_in_pages_of_fifty(client, reviewer):
    """500 claims, 167 disputed (every third): pages of 50, the fourth holds 17."""
    project = ProjectFactory(slug="pages")
    project.members.add(reviewer)
    run = disputed_run(project, [reviewer, Reviewer.objects.create(username="ann")], claims=500)
    client.force_login(reviewer)

    response = client.get(agreement_url("pages", run.name), {"page": 4})

    assert len(response.context["disagreements"]) == 17
    assert "Page 4 of 4" in response.content.decode()
    assert response.context["disagreements"][0].claim == "Claim 450."
