"""Admin pages keep the invariants the app relies on."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Answer, Label, LabelValue, Question
from tests import factories

pytestmark = pytest.mark.django_db


def test_question_id_is_fixed_once_created(admin_client):
    question = factories.QuestionFactory(question_id="q-1", text="Old text?")
    url = reverse("admin:labeling_question_change", args=[question.pk])
    form = admin_client.get(url).content.decode()
    assert 'name="question_id"' not in form

    admin_client.post(url, {
        "project": question.project_id, "question_id": "renamed", "text": "New text?", "answerable": "unknown",
        **{f"{prefix}-{k}": v for prefix in ("gold_ids", "gold_references", "expected_sources")
           for k, v in (("TOTAL_FORMS", 0), ("INITIAL_FORMS", 0))},
    })
    question.refresh_from_db()
    assert (question.question_id, question.text) == ("q-1", "New text?")


def test_answer_added_in_the_admin_gets_its_key_and_a_question_of_its_project(admin_client):
    run = factories.RunFactory(project=factories.ProjectFactory(slug="mine"), name="r")
    mine = factories.QuestionFactory(project=run.project, question_id="zz")
    factories.AnswerFactory(run=run, question=mine)
    foreign = factories.QuestionFactory(project=factories.ProjectFactory(slug="other"), question_id="zz")
    fresh = factories.QuestionFactory(project=run.project, question_id="q-new")
    url = reverse("admin:labeling_answer_add")
    inline = {"passages-TOTAL_FORMS": 0, "passages-INITIAL_FORMS": 0}

    refused = admin_client.post(url, {"run": run.pk, "question": foreign.pk, "text": "x", "content_hash": "h",
                                      **inline})
    added = admin_client.post(url, {"run": run.pk, "question": fresh.pk, "text": "y", "content_hash": "h",
                                    **inline})

    assert refused.status_code == 200
    assert "Question &#x27;zz&#x27; belongs to another project than run &#x27;r&#x27;" in refused.content.decode()
    assert added.status_code == 302
    assert list(Answer.objects.filter(run=run).order_by("question_key").values_list("question_key", flat=True)) == [
        "q-new", "zz"]
    assert Question.objects.count() == 3


# -- labels, claims and citations are view only --------------------------------------------------
# Labels and claims change only through the services of labeling.review (history, claim revisions, stale labels).

def _labeled_claim():
    claim = factories.ClaimFactory(text="Retries use exponential backoff.")
    citation = factories.CitationFactory(claim=claim)
    label = factories.LabelFactory(claim=claim, value=LabelValue.UNSUPPORTED, justification="the passage says linear")
    return claim, citation, label


def test_label_change_page_is_view_only_and_a_post_changes_nothing(admin_client):
    _claim, _citation, label = _labeled_claim()
    url = reverse("admin:labeling_label_change", args=[label.pk])

    page = admin_client.get(url)
    posted = admin_client.post(url, {"claim": label.claim_id, "reviewer": label.reviewer_id, "value": "SUPPORTED",
                                     "justification": "", "claim_revision": 1, "is_current": "on"})

    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="_save"' not in html and 'name="value"' not in html
    assert "the passage says linear" in html  # shown, read only
    assert posted.status_code == 403
    label.refresh_from_db()
    assert (label.value, label.justification, label.is_current) == ("UNSUPPORTED", "the passage says linear", True)


def test_labels_cannot_be_added_or_deleted_in_the_admin(admin_client):
    _claim, _citation, label = _labeled_claim()

    add = admin_client.get(reverse("admin:labeling_label_add"))
    delete = admin_client.post(reverse("admin:labeling_label_delete", args=[label.pk]), {"post": "yes"})
    bulk = admin_client.post(reverse("admin:labeling_label_changelist"),
                             {"action": "delete_selected", "_selected_action": [label.pk], "post": "yes"})

    assert (add.status_code, delete.status_code) == (403, 403)
    assert bulk.status_code == 200  # the list again: no delete action to run
    assert Label.objects.filter(pk=label.pk).exists()


def test_claim_and_its_citations_are_view_only(admin_client):
    claim, citation, _label = _labeled_claim()

    posted = admin_client.post(reverse("admin:labeling_claim_change", args=[claim.pk]), {
        "answer": claim.answer_id, "index": claim.index, "text": "Reworded in the admin.", "revision": 1,
        "citations-TOTAL_FORMS": 1, "citations-INITIAL_FORMS": 1, "citations-0-id": citation.pk,
        "citations-0-claim": claim.pk, "citations-0-cited_id": "P99", "citations-0-position": 0,
        "citations-0-DELETE": "on",
    })
    deleted = admin_client.post(reverse("admin:labeling_claim_delete", args=[claim.pk]), {"post": "yes"})
    page = admin_client.get(reverse("admin:labeling_claim_change", args=[claim.pk]))

    html = page.content.decode()
    assert page.status_code == 200
    assert 'name="_save"' not in html and 'name="text"' not in html
    assert 'name="citations-0-cited_id"' not in html and "citations-0-DELETE" not in html
    assert (posted.status_code, deleted.status_code) == (403, 403)
    claim.refresh_from_db()
    citation.refresh_from_db()
    assert (claim.text, claim.revision, citation.cited_id) == ("Retries use exponential backoff.", 1,
                                                              citation.passage.passage_id)
    assert admin_client.get(reverse("admin:labeling_claim_add")).status_code == 403


def test_deleting_an_answer_with_labels_is_refused_in_the_admin(admin_client):
    """Deleting the answer would delete its claims and labels with it."""
    claim, _citation, label = _labeled_claim()

    response = admin_client.post(reverse("admin:labeling_answer_delete", args=[claim.answer_id]), {"post": "yes"})

    assert response.status_code == 403
    assert Label.objects.filter(pk=label.pk).exists()
