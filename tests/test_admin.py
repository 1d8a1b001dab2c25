"""Admin pages keep the invariants the app relies on (issue "Foundation" §3)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Answer, Question
from tests.factories import AnswerFactory, ProjectFactory, QuestionFactory, RunFactory

pytestmark = pytest.mark.django_db


def test_question_id_is_fixed_once_created(admin_client):
    question = QuestionFactory(question_id="q-1", text="Old text?")
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
    run = RunFactory(project=ProjectFactory(slug="mine"), name="r")
    mine = QuestionFactory(project=run.project, question_id="zz")
    AnswerFactory(run=run, question=mine)
    foreign = QuestionFactory(project=ProjectFactory(slug="other"), question_id="zz")
    fresh = QuestionFactory(project=run.project, question_id="q-new")
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
