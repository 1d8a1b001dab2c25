"""Whatever a file names its project, runs, questions and reviewers, either
the import refuses it with a clear issue or every page renders: never a 500
(labeling.names, labeling.importers.load)."""

from __future__ import annotations

import io
import json
from urllib.parse import urlencode

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, Reviewer, Run

# Every code point, lone surrogates and control characters included.
names = st.text(st.characters(exclude_categories=()), min_size=0, max_size=24)
# Look-alikes and path-like names are the likely trouble: draw them often.
tricky = st.sampled_from(["gpt4o/prompt-v2", "..", ".", "a b", "ｒｅｖ０１", "café", "cafe\u0301", "x\u200b",
                          "<b>", "%2F", "?a=1#x", "admin", "s" * 64, "s" * 65, " ", "\ud800", "a\x00b"])
any_name = st.one_of(tricky, names)


def answers(*, question_id: str, run: str, reviewer: str) -> io.BytesIO:
    row = {
        "question_id": question_id, "question": "How does the sync client handle failures?", "run": run,
        "answer": "It retries five times [P1]. It logs runs [P3].",
        "passages": [{"id": "P1", "source": "manual.md", "text": "The client retries five times."},
                     {"id": "P3", "source": "manual.md", "text": "Runs are logged locally."}],
        "claims": [
            {"text": "It retries five times [P1].", "citations": ["P1"], "label": "SUPPORTED",
             "reviewer": reviewer},
            {"text": "It logs runs [P3].", "citations": ["P3"], "label": "UNSUPPORTED",
             "justification": "The passage says locally, not in runs.", "reviewer": reviewer},
        ],
    }
    return io.BytesIO((json.dumps(row) + "\n").encode())


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(slug=any_name, run_a=any_name, run_b=any_name, question_id=any_name, reviewer=any_name)
def test_any_imported_names_are_refused_clearly_or_every_page_renders(client, slug, run_a, run_b, question_id,
                                                                      reviewer):
    with transaction.atomic():
        # force_login needs no password (hashing one per example would be most of the test's time).
        member = Reviewer.objects.create(username="member")
        client.force_login(member)
        try:
            project = project_for_import(slug=slug)
        except ValidationError as refused:
            assert refused.messages and all(refused.messages)
            project = project_for_import(slug="fallback")
        project.members.add(member)
        for run in (run_a, run_b):
            try:
                run_import(project=project, source=answers(question_id=question_id, run=run, reviewer=reviewer))
            except ImportFailed as failure:
                assert failure.issues
                assert all(i.line >= 1 and i.field and i.reason for i in failure.issues), failure.issues

        pages = [reverse("project_list"), project.get_absolute_url(),
                 reverse("run_compare", kwargs={"project_slug": project.slug})]
        runs = list(Run.objects.filter(project=project))
        for run in runs:
            pages += [run.get_absolute_url(),
                      reverse("version_list", kwargs={"project_slug": project.slug, "run_name": run.name})]
        for answer in Answer.objects.filter(run__project=project).select_related("run"):
            pages.append(reverse("answer_review", kwargs={
                "project_slug": project.slug, "run_name": answer.run.name, "answer_id": answer.pk}))
        if len(runs) == 2:
            pages.append(reverse("run_compare", kwargs={"project_slug": project.slug})
                         + "?" + urlencode({"a": runs[0].name, "b": runs[1].name}))
        for page in pages:
            response = client.get(page)
            assert response.status_code == 200, (page, response.status_code)
        transaction.set_rollback(True)
