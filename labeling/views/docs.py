"""The help pages: the Markdown files of ``templates/docs/`` (the long topics the
README links to), served at ``/docs/`` (the list) and ``/docs/<name>/`` (one
file) to anyone, logged in or not: they describe the app and hold no project's
data.

A page is rendered by :func:`labeling.team.guidelines.render_guidelines`, the one
place Markdown becomes HTML (raw HTML escaped, unsafe link targets left as
text, no images). The files link to each other as ``judges.md``, so that they
read on GitHub too; the page points such a link at the help page of that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from labeling.team.guidelines import render_guidelines

DOCS_DIR = Path(settings.BASE_DIR) / "templates" / "docs"

# A link markdown-it wrote for ``[text](judges.md)`` or ``(judges.md#part)``: the
# name and the fragment as they stand in the (already escaped) attribute.
_PAGE_LINK = re.compile(r'href="([a-z0-9-]+)\.md(#[^"]*)?"')


@dataclass(frozen=True)
class HelpPage:
    """One file of ``templates/docs/``: ``name`` is its file name without ``.md``
    (its address, ``/docs/<name>/``), ``title`` its first ``# `` heading (the
    name when it has none)."""

    name: str
    title: str


def help_pages() -> list[HelpPage]:
    """Every ``templates/docs/*.md``, sorted by title. Reads each file's first lines."""
    pages = []
    for path in DOCS_DIR.glob("*.md"):
        title = path.stem
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("# "):
                    title = line[2:].strip()
                    break
        pages.append(HelpPage(name=path.stem, title=title))
    return sorted(pages, key=lambda page: page.title.lower())


def render_help(text: str, names: set[str]) -> SafeString:
    """``text`` (a help page's Markdown) as safe HTML, its links to ``<name>.md``
    for a name in ``names`` pointing at that help page instead."""
    html = render_guidelines(text)

    def point(match: re.Match[str]) -> str:
        name, fragment = match.group(1), match.group(2) or ""
        if name not in names:
            return match.group(0)
        return f'href="{reverse("docs_page", args=[name])}{fragment}"'

    # Still safe: the new target is a path of this site built from [a-z0-9-] only,
    # and the fragment is kept as markdown-it escaped it.
    return mark_safe(_PAGE_LINK.sub(point, html))  # noqa: S308


@require_GET
def docs_index(request: HttpRequest) -> HttpResponse:
    """The list of help pages, each with its title. Open to everyone."""
    return render(request, "labeling/docs_index.html", {"pages": help_pages()})


@require_GET
def docs_page(request: HttpRequest, name: str) -> HttpResponse:
    """The help page ``name`` rendered in the site's layout; 404 for a name that
    is not a file of ``templates/docs/`` (the name is looked up, never joined
    to a path as given). Open to everyone."""
    pages = {page.name: page for page in help_pages()}
    page = pages.get(name)
    if page is None:
        raise Http404(f"No help page {name!r}.")
    text = (DOCS_DIR / f"{page.name}.md").read_text(encoding="utf-8")
    return render(request, "labeling/docs_page.html",
                  {"page": page, "body": render_help(text, set(pages))})
