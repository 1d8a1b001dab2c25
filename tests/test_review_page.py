"""The answer review page (labeling.views.review.answer_review): who may open it,
what it shows (claims marked in the answer text, cited passages with their spans,
fabricated and uncited claims, gold, label history, untrusted text as text), its
htmx fragments for claim and answer navigation, the run progress fragment, and
the claim list on real answers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Answer, Citation, Claim, ExpectedSource, GoldPassageId, GoldReference, Label
from labeling.review import screen
from labeling.team.send_backs import send_back_create
from tests.counted_run import counted_run
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory
from tests.review_site import HX, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(reviewer):
    """The review tests' project (tests/review_site.py), alice a member."""
    return Site(reviewer)


def test_pages_need_a_login(client, site):
    for url in [reverse("project_list"), site.project.get_absolute_url(), site.run.get_absolute_url(),
                site.review(site.a1)]:
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))
    response = client.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "claim": site.c1.pk})
    assert response.status_code == 302
    assert Label.objects.count() == 0


def test_non_member_gets_404_everywhere(client, site):
    client.force_login(ReviewerFactory(username="mallory"))

    for url in [site.project.get_absolute_url(), site.run.get_absolute_url(), site.review(site.a1),
                site.url("run_next"), site.url("run_progress")]:
        assert client.get(url).status_code == 404
    response = client.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                     "claim": site.c1.pk})
    assert response.status_code == 404
    assert Label.objects.count() == 0
    assert b"Demo" not in client.get(reverse("project_list")).content


def test_superuser_sees_every_project(client, site):
    client.force_login(ReviewerFactory(username="root", is_superuser=True))

    assert client.get(site.review(site.a1)).status_code == 200
    assert b"Demo" in client.get(reverse("project_list")).content


def test_login_and_logout_through_the_forms(client, site):
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-for-tests-1"})
    assert response.status_code == 302
    assert client.get(site.review(site.a1)).status_code == 200

    client.post(reverse("logout"))

    assert client.get(site.review(site.a1)).status_code == 302


def test_review_page_opens_on_the_first_cited_claim_to_label(alice, site):
    response = alice.get(site.review(site.a1))

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html
    assert "Tell me about Paris?" in html
    assert response.context["current"].claim == site.c1
    # The span is marked in place, the uncited claim is greyed in the text.
    assert '<mark class="span">capital of France</mark>' in html
    assert 'class="claim-mark UNCITED"' in html
    assert 'class="claim-mark pending current"' in html
    assert "https://example.org/paris" in html
    assert 'name="base_label" value=""' in html


def test_passage_without_span_highlights_shared_words(alice, site):
    html = alice.get(site.review(site.a1, site.c3)).content.decode()

    # Claim "The Seine flows through Paris." vs passage "The river Seine flows through the city of Paris.":
    # "The"/"through"/"the"/"of" are stopwords, the rest is shared.
    assert '<mark class="word">Seine flows</mark> through the city of <mark class="word">Paris</mark>' in html
    assert "words shared with the claim" in html


def test_fabricated_citation_is_flagged(alice, site):
    html = alice.get(site.review(site.a2, site.d2)).content.decode()

    assert "fabricated citation" in html
    assert "no passage with that id was sent with this answer" in html
    assert "[P9]" in html


def test_uncited_claim_is_not_labeled_but_explained(alice, site):
    html = alice.get(site.review(site.a1, site.c2)).content.decode()

    assert "UNCITED</strong> automatically" in html
    assert 'id="label-form"' not in html


def test_gold_is_shown_beside_what_the_answer_cited(alice, site):
    question = site.a1.question
    question.gold_ids_given = question.gold_references_given = question.gold_sources_given = True
    question.save()
    GoldPassageId.objects.create(question=question, passage_id="P1")
    GoldPassageId.objects.create(question=question, passage_id="P7")
    GoldReference.objects.create(question=question, position=0, source="atlas.pdf", text="Seine <b>river</b>")
    # Cited as "https://example.org/paris": the same source once normalized.
    ExpectedSource.objects.create(question=question, source="http://www.Example.org/paris/")

    html = alice.get(site.review(site.a1)).content.decode()

    # The reference's source (atlas.pdf) is not cited, so no citation can match it (SPEC §4.3).
    assert "supporting ids 1/2 cited · expected sources 1/1 cited · reference passages 0/1 matched" in html
    assert '<span class="badge pending">not cited</span> <span class="source">atlas.pdf</span>' in html
    assert '<span class="chip hit">P1</span><span class="chip">P7</span>' in html
    assert '<span class="badge SUPPORTED">cited</span> http://www.Example.org/paris/' in html
    assert "Seine &lt;b&gt;river&lt;/b&gt;" in html


def test_gold_references_show_which_citation_matched_them(client, reviewer):
    """Seed 'RAG Citation Quality' case (c): of three references only the Security
    Standard passage is cited word for word, by [S1]; Travel Policy is cited with
    another passage and Equipment Policy not at all."""
    from labeling.importers.load import run_import
    from labeling.models import Answer
    from tests.conftest import FIXTURES_DIR

    project = ProjectFactory(slug="gold")
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "seed_gold_references.jsonl")
    client.force_login(reviewer)
    answer = Answer.objects.get(question__question_id="gold-c")
    html = client.get(reverse("answer_review", kwargs={"project_slug": "gold", "run_name": answer.run.name,
                                                       "answer_id": answer.pk})).content.decode()
    assert "reference passages 1/3 matched" in html
    assert "matched by [S1]</span> <span class=\"source\">Security Standard.pdf</span>" in html
    # Two references unmatched, plus the expected source Equipment Policy.pdf not cited.
    assert html.count('<span class="badge pending">not cited</span>') == 3
    assert '<span class="badge pending">not cited</span> Equipment Policy.pdf' in html


def test_no_gold_panel_without_gold(alice, site):
    assert "Supporting ids" not in alice.get(site.review(site.a1)).content.decode()


def test_label_history_shows_every_reviewer_and_marks_stale(alice, site, reviewer):
    bob = ReviewerFactory(username="bob")
    LabelFactory(claim=site.c1, reviewer=bob, value="UNSUPPORTED", justification="too vague",
                 claim_revision=1, is_current=False, is_stale=True)
    LabelFactory(claim=site.c1, reviewer=reviewer, value="SUPPORTED")

    history = alice.get(site.review(site.a1, site.c1)).context["review"].history

    assert [(e.label.reviewer.username, e.label.value, e.status) for e in history] == [
        ("alice", "SUPPORTED", "current"), ("bob", "UNSUPPORTED", "stale")]


def test_history_tells_undone_from_superseded(alice, site, reviewer):
    from labeling.review.label_writes import label_save, label_undo

    first = label_save(claim=site.c1, reviewer=reviewer, value="SUPPORTED", justification="", base_revision=1,
                       base_label_id=None)
    second = label_save(claim=site.c1, reviewer=reviewer, value="UNSUPPORTED", justification="partial",
                        base_revision=1, base_label_id=first.pk)
    label_save(claim=site.c1, reviewer=reviewer, value="SUPPORTED", justification="on reflection",
               base_revision=1, base_label_id=second.pk)
    label_undo(claim=site.c1, reviewer=reviewer)

    history = alice.get(site.review(site.a1, site.c1)).context["review"].history

    assert [(e.label.value, e.label.justification, e.status) for e in history] == [
        ("SUPPORTED", "on reflection", "undone"), ("UNSUPPORTED", "partial", "current"),
        ("SUPPORTED", "", "superseded")]


def test_untrusted_html_renders_as_text(alice, site):
    site.a1.question.text = "<script>alert('q')</script>"
    site.a1.question.save()
    site.a1.text = "<script>alert(1)</script> Paris <img src=x onerror=alert(2)>"
    site.a1.save()
    Claim.objects.filter(answer=site.a1).update(start=None, end=None)
    Claim.objects.filter(pk=site.c1.pk).update(text="<img src=x onerror=alert(3)>")
    passage = site.c1.citations.get().passage
    passage.text = "<img src=x onerror=alert(4)> capital of France"
    passage.source = "javascript:alert(5)"
    passage.save()
    LabelFactory(claim=site.c1, reviewer=ReviewerFactory(username="bob"), value="UNSUPPORTED",
                 justification="<script>alert(6)</script>")

    html = alice.get(site.review(site.a1, site.c1)).content.decode()

    for raw in ["<script>alert", "<img src=x", 'href="javascript:']:
        assert raw not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;img src=x onerror=alert(3)&gt;" in html
    assert "&lt;img src=x onerror=alert(4)&gt; <mark" in html
    assert "&lt;script&gt;alert(6)&lt;/script&gt;" in html
    assert '<span class="source">javascript:alert(5)</span>' in html


def test_htmx_claim_navigation_returns_the_panel_fragment(alice, site):
    response = alice.get(site.review(site.a1, site.c3), HTTP_HX_TARGET="claim-panel", **HX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.startswith('\n    <section id="claim-panel"') or html.lstrip().startswith('<section id="claim-panel"')
    assert 'id="answer-text" class="answer-text" hx-swap-oob="true"' in html
    assert 'id="claim-list" hx-swap-oob="true"' in html
    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)


def test_htmx_answer_navigation_returns_the_review_block(alice, site):
    response = alice.get(site.review(site.a2), HTTP_HX_TARGET="review", **HX)

    html = response.content.decode()
    assert "<html" not in html
    assert '<div id="review"' in html
    assert response["HX-Retarget"] == "#review"


def test_htmx_answer_change_updates_the_title_and_the_breadcrumb(alice, site, reviewer):
    """The page showed q1; the fragment of q2 leads with q2's <title> (htmx 2 sets
    the document title from a top-level <title>) and swaps the breadcrumb's
    question out of band, so neither keeps naming q1."""
    page = alice.get(site.review(site.a1)).content.decode()
    assert "<title>q1 · r1 · Citelab</title>" in page
    assert '<span id="crumb-question" class="crumb-last"> / q1</span>' in page

    html = alice.get(site.review(site.a2), HTTP_HX_TARGET="review", **HX).content.decode()

    assert html.startswith("<title>q2 · r1 · Citelab</title>")
    assert html.count("<title>") == 1
    assert '<span id="crumb-question" class="crumb-last" hx-swap-oob="true"> / q2</span>' in html
    assert "q1" not in html.split('<div id="review"')[0]

    # The same after a save moves on to the next answer.
    LabelFactory(claim=site.c1, reviewer=reviewer)
    saved = alice.post(site.label_url(site.c3), {"value": "SUPPORTED", "justification": "", "revision": 1,
                                                 "base_label": "", "claim": site.c3.pk}, **HX).content.decode()
    assert saved.startswith("<title>q2 · r1 · Citelab</title>")
    assert 'hx-swap-oob="true"> / q2</span>' in saved


def test_answer_title_and_breadcrumb_are_escaped_in_the_fragment(alice, site):
    site.a2.question.question_id = "q<b>&2"
    site.a2.question.save()

    html = alice.get(site.review(site.a2), HTTP_HX_TARGET="review", **HX).content.decode()

    assert html.startswith("<title>q&lt;b&gt;&amp;2 · r1 · Citelab</title>")
    assert 'hx-swap-oob="true"> / q&lt;b&gt;&amp;2</span>' in html


def test_run_progress_fragment_counts_the_reviewers_labels(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)
    LabelFactory(claim=site.c3, reviewer=ReviewerFactory(username="bob"))

    html = alice.get(site.url("run_progress"), **HX).content.decode()

    # Cited claims: c1, c3, d1, d2 (fabricated still counts as cited); alice labeled c1.
    assert "<html" not in html
    assert '<span class="metric">1/4</span>' in html


def test_claim_list_marks_exactly_the_claims_the_answer_text_cannot_on_every_fixture_answer(
        expertqa_project, reviewer, client):
    """The claim list used to find its "not in text" claims by searching ``review.unplaced``
    for every claim (quadratic: 20,000 such claims took 164 s); each claim now carries
    ``in_text``. On all 118 real answers the two agree, the answer text marks every other
    claim exactly once, and the page tags exactly the 5 claims the importer could not
    locate (one in each of 5 answers, all without offsets)."""
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)
    answers = Answer.objects.filter(run__project=expertqa_project).select_related("question", "run__project")
    unplaced = {}
    for answer in answers:
        review = screen.review_context(answer=answer, reviewer=reviewer)
        assert [not view.in_text for view in review.claims] == [view in review.unplaced for view in review.claims]
        marked = [view.claim.pk for _text, view in review.segments if view is not None]
        assert sorted(marked + [view.claim.pk for view in review.unplaced]) == [view.claim.pk for view in review.claims]
        if review.unplaced:
            unplaced[answer.pk] = [view.claim.pk for view in review.unplaced]
    assert len(answers) == 118
    assert sorted(len(pks) for pks in unplaced.values()) == [1, 1, 1, 1, 1]
    assert Claim.objects.filter(pk__in=[pk for pks in unplaced.values() for pk in pks], start=None).count() == 5

    for answer_pk, pks in unplaced.items():
        answer = answers.get(pk=answer_pk)
        html = client.get(reverse("answer_review", kwargs={"project_slug": "expertqa", "run_name": answer.run.name,
                                                           "answer_id": answer.pk})).content.decode()
        rows = html.split('<ol class="rv-claims">', 1)[1].split("</ol>", 1)[0].split("<li ")[1:]
        tagged = [int(row.split("?claim=", 1)[1].split('"', 1)[0]) for row in rows if "not in text</span>" in row]
        assert tagged == pks
        assert "1 claim could not be located in the answer text" in html


def test_review_page_work_is_linear_in_claims_not_in_the_answer_text(alice, site, monkeypatch):
    """300 cited claims without offsets: the page used to compare each claim with each
    unplaced claim (300 × 300 / 2 ≈ 45,000 ClaimView comparisons; at 20,000 claims 164 s).
    Now it compares none (tests/bench/test_bench_review_unplaced.py prints the times)."""
    claims = Claim.objects.bulk_create([Claim(answer=site.a2, index=k, text=f"Paraphrase {k}.") for k in range(3, 303)])
    Citation.objects.bulk_create([Citation(claim=c, position=0, cited_id="P3",
                                           passage=site.d1.citations.get().passage) for c in claims])
    comparisons = []
    compare = screen.ClaimView.__eq__
    monkeypatch.setattr(screen.ClaimView, "__eq__",
                        lambda self, other: comparisons.append(1) or compare(self, other))

    html = alice.get(site.review(site.a2)).content.decode()

    assert html.count("not in text</span>") == 300
    assert "300 claims could not be located in the answer text" in html
    assert len(comparisons) == 0


# Query counts the docstrings of labeling/review/screen.py state, on tests/counted_run.py's run
# (overlap 3, not blind: lead has every cited claim still to label).


def _answer(world, question_id):
    """The answer as the review view loads it: with its run, project and question."""
    return Answer.objects.select_related("run__project", "question").get(run=world.run, question_key=question_id)


def test_answer_page_query_count(django_assert_num_queries):
    world = counted_run(overlap=3, blind=False)
    for answer_filter in ("", "unlabeled", "unsupported"):
        # The count, the page's ids, the page's rows with counts, their adjudicated claims.
        with django_assert_num_queries(4):
            page = screen.answer_page(run=world.run, reviewer=world.lead, answer_filter=answer_filter)
        assert [row.answer.question_key for row in page.rows] == (["q02"] if answer_filter == "unsupported"
                                                                  else ["q01", "q02", "q03"])


def test_review_context_query_count(django_assert_num_queries):
    world = counted_run(overlap=3, blind=False)
    answer = _answer(world, "q01")
    first = world.claims["q01"][0]
    # One: the claims (+ send-back mark) with their citations (+ passages) and every label on them
    # (+ reviewers), screen._answer_claims.
    with django_assert_num_queries(1):
        context = screen.review_context(answer=answer, reviewer=world.lead, claim_id=first.pk)
    assert (context.current.claim, context.gold) == (first, None)
    # Without a claim: the queue's first claim of the answer (priority_claim and the walk in one).
    with django_assert_num_queries(2):
        assert screen.review_context(answer=answer, reviewer=world.lead).current.claim == first
    # The current claim sent back to the reviewer: the send-back (+ lead).
    second = world.claims["q01"][1]
    send_back_create(run=world.run, claim=second, reviewer=world.rev1, lead=world.lead, comment="Read P1 again.")
    with django_assert_num_queries(2):
        assert screen.review_context(answer=answer, reviewer=world.rev1, claim_id=second.pk).current.sent_back
    # q03's question has gold ids: one query for them.
    gold_answer = _answer(world, "q03")
    with django_assert_num_queries(2):
        assert screen.review_context(answer=gold_answer, reviewer=world.lead,
                                     claim_id=world.claims["q03"][0].pk).gold["ids"] == ["P1"]
    # Judging citations: the reviewer's judged precision, the current claim's judgments.
    world.project.judge_citations = True
    world.project.save()
    answer = _answer(world, "q01")
    with django_assert_num_queries(3):
        context = screen.review_context(answer=answer, reviewer=world.rev1, claim_id=first.pk)
    assert (context.judged_precision.numerator, context.judged_precision.denominator) == (1, 1)


def _fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_answer_claims_in_one_query_are_what_the_orm_reads():
    """screen._answer_claims builds the instances the ORM's prefetch chain gave (booleans,
    datetimes, a citation without a passage, labels of several reviewers newest first,
    send-back and gold marks) on either database."""
    from django.db.models import Prefetch

    from labeling.models import GoldClaim, SendBack
    from labeling.team.gold_claims import gold_mark

    world = counted_run(overlap=3, blind=False)
    answer = _answer(world, "q03")
    second = world.claims["q03"][1]
    send_back_create(run=world.run, claim=world.claims["q03"][0], reviewer=world.rev1, lead=world.lead,
                     comment="Read P1 again.")
    gold_mark(run=world.run, claim=second, lead=world.lead, source="file", value="UNSUPPORTED",
              reason="Cites X, not a passage.")
    claims = screen._answer_claims(answer, world.rev1, gold=True)
    expected = list(Claim.objects.filter(answer=answer).order_by("index").prefetch_related(
        Prefetch("citations", queryset=Citation.objects.select_related("passage").order_by("position", "pk")),
        Prefetch("labels", queryset=Label.objects.select_related("reviewer").order_by("-pk"), to_attr="all_labels")))
    assert [_fields(c) for c in claims] == [_fields(c) for c in expected]
    assert [c.open_send_back for c in claims] == [
        SendBack.objects.get(claim=world.claims["q03"][0]).pk, None, None]
    assert [c.current_gold for c in claims] == [None, GoldClaim.objects.get(claim=second, is_current=True).pk, None]
    for got, want in zip(claims, expected, strict=True):
        assert [_fields(c) for c in got.cited] == [_fields(c) for c in want.citations.all()]
        assert [_fields(c.passage) if c.passage else None for c in got.cited] == [
            _fields(c.passage) if c.passage else None for c in want.citations.all()]
        assert [_fields(label) for label in got.all_labels] == [_fields(label) for label in want.all_labels]
        assert [_fields(label.reviewer) for label in got.all_labels] == [
            _fields(label.reviewer) for label in want.all_labels]
        assert all(label.claim is got for label in got.all_labels)
    # Every branch taken: a passage-less citation, several reviewers' labels, datetimes with a zone.
    assert any(c.passage is None for c in claims[1].cited)
    assert len({label.reviewer_id for label in claims[0].all_labels}) >= 2
    assert all(label.created_at.tzinfo is not None for c in claims for label in c.all_labels)
    assert all(isinstance(c.factual, bool) and isinstance(label.is_current, bool)
               for c in claims for label in c.all_labels)


def test_question_gold_is_one_query_per_part(django_assert_num_queries):
    world = counted_run()
    question = _answer(world, "q01").question
    with django_assert_num_queries(0):
        assert screen.question_gold(question=question) is None
    answer = _answer(world, "q03")
    with django_assert_num_queries(1):
        assert screen.question_gold(question=answer.question, answer=answer)["ids"] == ["P1"]
    GoldReference.objects.create(question=answer.question, position=0, source="doc.pdf", text="One and two.")
    ExpectedSource.objects.create(question=answer.question, source="doc.pdf")
    answer.question.gold_references_given = answer.question.gold_sources_given = True
    with django_assert_num_queries(3):
        gold = screen.question_gold(question=answer.question)
    assert (gold["sources"], gold["reference_matches"]) == (["doc.pdf"], None)
    # With the answer: its citations, to match the references.
    with django_assert_num_queries(4):
        assert len(screen.question_gold(question=answer.question, answer=answer)["reference_matches"]) == 1
