"""Labeling guidelines (SPEC §4.4): versioned Markdown rendered without raw HTML,
the version each label was made under, the review page's g key and ? help, and the
label table's guidelines_version column."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from labeling.exports.label_table import label_table_frame
from labeling.models import Guidelines, Label
from labeling.team.guidelines import guidelines_current, guidelines_save, render_guidelines
from tests.factories import ProjectFactory
from tests.quality_data import label, quality_world

pytestmark = pytest.mark.django_db


def test_markdown_renders_and_raw_html_is_text():
    """Headings, emphasis and tables render; a script tag, an inline event handler and a
    javascript: link come out as text; images are not rendered."""
    html = render_guidelines(
        "# Rules\n\n**Partial** support is UNSUPPORTED.\n\n<script>alert(1)</script>\n\n"
        "<img src=x onerror=alert(1)>\n\n[click](javascript:alert(1)) ![pixel](https://tracker.example/p.png)\n\n"
        "| label | when |\n|---|---|\n| SUPPORTED | entailed |\n")
    assert "<h1>Rules</h1>" in html
    assert "<strong>Partial</strong>" in html
    assert "<td>SUPPORTED</td>" in html
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="javascript' not in html


def test_every_edit_is_a_new_version_and_an_unchanged_text_is_refused():
    world = quality_world(answers=1)
    assert guidelines_current(project=world.project) is None
    first = guidelines_save(project=world.project, author=world.lead, text="Partial support is UNSUPPORTED.\r\n")
    second = guidelines_save(project=world.project, author=world.lead, text="Numbers must match exactly.")
    assert (first.number, second.number) == (1, 2)
    assert first.text == "Partial support is UNSUPPORTED."
    with pytest.raises(ValidationError, match="unchanged since version 2"):
        guidelines_save(project=world.project, author=world.lead, text="  Numbers must match exactly.\n")
    with pytest.raises(ValidationError, match="empty"):
        guidelines_save(project=world.project, author=world.lead, text="   ")
    assert list(Guidelines.objects.filter(project=world.project).values_list("number", flat=True)) == [1, 2]
    assert guidelines_current(project=world.project).number == 2


def test_each_label_records_the_guidelines_version_it_was_made_under():
    """No guidelines → null; after version 1 → 1; after version 2, a relabel → 2 while
    the other reviewer's label stays at 1."""
    world = quality_world(answers=1, claims_per_answer=2)
    one, two = world.claims
    rev1, rev2 = world.reviewers
    assert label(one, rev1).guidelines_version is None
    guidelines_save(project=world.project, author=world.lead, text="v1")
    assert label(two, rev1).guidelines_version == 1
    assert label(one, rev2).guidelines_version == 1
    guidelines_save(project=world.project, author=world.lead, text="v2")
    assert label(one, rev1, "UNSUPPORTED").guidelines_version == 2
    current = dict(Label.objects.filter(claim=one, is_current=True).values_list("reviewer__username",
                                                                               "guidelines_version"))
    assert current == {rev1.username: 2, rev2.username: 1}


def test_label_table_has_the_guidelines_version_of_each_row():
    """Claim 1: rev1 (v1) and rev2 (v2) agree → "1, 2"; claim 2: rev1 under v2 → "2";
    claim 3: nobody → ""."""
    world = quality_world(answers=1, claims_per_answer=3)
    rev1, rev2 = world.reviewers
    guidelines_save(project=world.project, author=world.lead, text="v1")
    label(world.claims[0], rev1)
    guidelines_save(project=world.project, author=world.lead, text="v2")
    label(world.claims[0], rev2)
    label(world.claims[1], rev1)
    table = label_table_frame(world.run)
    assert table["guidelines_version"].tolist() == ["1, 2", "2", ""]
    assert table[table["claim_index"] == 2]["reviewer"].tolist() == [rev1.username]


def test_review_page_shows_the_guidelines_behind_g_and_in_the_help(client):
    world = quality_world(answers=1)
    guidelines_save(project=world.project, author=world.lead, text="## Partial\n\nPartial support is *UNSUPPORTED*.")
    client.force_login(world.reviewers[0])
    answer = world.claims[0].answer
    page = client.get(reverse("answer_review", args=[world.project.slug, world.run.name, answer.pk])).content.decode()
    dialog = page.split('id="guidelines-dialog"')[1].split("</dialog>")[0]
    assert "<h2>Partial</h2>" in dialog and "<em>UNSUPPORTED</em>" in dialog and "version 1" in dialog
    help_dialog = page.split('id="shortcut-help"')[1].split("</dialog>")[0]
    assert "<kbd>g</kbd>" in help_dialog and "<em>UNSUPPORTED</em>" in help_dialog


def test_guidelines_page_lists_versions_and_a_lead_saves_one(client):
    world = quality_world(answers=1)
    url = reverse("project_guidelines", args=[world.project.slug])
    client.force_login(world.lead)
    response = client.post(url, {"text": "First <b>rules</b>."})
    assert response.status_code == 302
    client.post(url, {"text": "Second rules."})
    page = client.get(url).content.decode()
    assert "Version 2" in page and "Second rules." in page and "in force" in page
    old = client.get(url, {"version": 1}).content.decode()
    assert "First &lt;b&gt;rules&lt;/b&gt;." in old and "<b>rules</b>" not in old
    assert client.get(url, {"version": 7}).status_code == 404
    client.force_login(world.reviewers[0])
    assert client.post(url, {"text": "Reviewer rules."}).status_code == 403
    assert Guidelines.objects.filter(project=world.project).count() == 2


@pytest.mark.parametrize("versions", [2, 30])
def test_guidelines_page_has_a_constant_query_count(versions, client, django_assert_max_num_queries):
    """2 or 30 versions listed: the same queries."""
    world = quality_world(answers=1)
    for n in range(versions):
        guidelines_save(project=world.project, author=world.lead, text=f"Version text {n}.")
    client.force_login(world.lead)
    url = reverse("project_guidelines", args=[world.project.slug])
    # 2: session, user · 1: the project with the user's role · 1: every version with its author.
    with django_assert_max_num_queries(4):
        response = client.get(url)
    assert response.content.decode().count("?version=") == versions


def test_guidelines_in_force_are_one_query(django_assert_num_queries):
    project = ProjectFactory(slug="rules")
    with django_assert_num_queries(1):
        assert guidelines_current(project=project) is None
    guidelines_save(project=project, author=None, text="Cite the passage.")
    guidelines_save(project=project, author=None, text="Cite the passage that says it.")
    # The latest version with its author.
    with django_assert_num_queries(1):
        assert guidelines_current(project=project).number == 2
