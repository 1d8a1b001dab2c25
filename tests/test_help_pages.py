"""The help pages (labeling.views.docs): /docs/ lists every templates/docs/*.md,
each renders in the site's layout through the guidelines' safe Markdown
renderer, for anyone, logged in or not; a name that is no file is 404."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.views.docs import help_pages, render_help
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db

DOCS_DIR = REPO_ROOT / "templates" / "docs"
FILES = sorted(DOCS_DIR.glob("*.md"))


def first_heading(path) -> str:
    """The text of the first ``# `` heading of the Markdown file ``path``."""
    return next(line[2:].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# "))


def test_the_index_lists_every_file_of_templates_docs(client):
    """Anonymous: the list links each of the 20 files by its first heading."""
    response = client.get("/docs/")

    html = response.content.decode()
    assert response.status_code == 200
    assert len(FILES) == 20
    links = re.findall(r'<a href="/docs/([a-z0-9-]+)/">([^<]+)</a>', html)
    assert sorted(links) == sorted((path.stem, first_heading(path)) for path in FILES)
    assert [page.name for page in help_pages()] == [name for name, _title in links]


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_each_page_renders_with_its_first_heading(client, path):
    response = client.get(reverse("docs_page", args=[path.stem]))

    html = response.content.decode()
    assert response.status_code == 200
    assert f"<h1>{first_heading(path)}</h1>" in html
    assert f"<title>{first_heading(path)} · Help · Citelab</title>" in html
    assert '<a class="help-link" href="/docs/">Help</a>' in html


def test_a_name_that_is_no_file_is_404(client):
    assert client.get("/docs/no-such-page/").status_code == 404
    assert client.get("/docs/JUDGES/").status_code == 404
    # Not a page name at all: no route.
    assert client.get("/docs/../README/").status_code == 404
    assert client.get("/docs/judges.md/").status_code == 404


def test_a_logged_in_reviewer_reads_them_too(client, reviewer):
    client.force_login(reviewer)

    assert client.get("/docs/").status_code == 200
    assert client.get("/docs/api/").status_code == 200


def test_a_link_to_another_page_leads_to_its_help_page(client):
    """api.md links judges.md (GitHub follows it); in the app it is /docs/judges/."""
    html = client.get("/docs/api/").content.decode()

    assert '<a href="/docs/judges/">Judges</a>' in html
    assert 'href="judges.md"' not in html


def test_the_ci_example_is_a_code_block_on_the_api_page(client):
    html = client.get("/docs/api/").content.decode()

    assert "<h2>A CI job</h2>" in html
    assert '<pre><code class="language-sh">#!/bin/sh\n' in html


def test_pages_render_through_the_safe_renderer():
    """Raw HTML stays text, a javascript: link is no link, and only links to existing
    pages are pointed at /docs/."""
    html = render_help("<script>x</script> [a](javascript:alert(1)) [b](judges.md#grading) [c](nope.md)",
                       {"judges"})

    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html
    assert "[a](javascript:alert(1))" in html and 'href="javascript' not in html
    assert '<a href="/docs/judges/#grading">b</a>' in html
    assert '<a href="nope.md">c</a>' in html


def test_every_page_of_the_site_links_the_help(client):
    assert '<a class="help-link" href="/docs/">Help</a>' in client.get(reverse("login")).content.decode()
