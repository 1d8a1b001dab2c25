"""A project's labeling guidelines (SPEC §4.4): versioned Markdown, rendered safely.

Writes: :func:`guidelines_save` (a lead's edit: always a new version). Reads:
:func:`guidelines_current`, :func:`guidelines_versions`, and
:func:`render_guidelines`, the one place Markdown becomes HTML.

Rendering is markdown-it-py's CommonMark parser (a maintained port of
markdown-it) with ``html`` off: a raw ``<script>`` or ``<img onerror=…>`` typed
in the guidelines comes out as escaped text, never as markup, and links with a
``javascript:``, ``vbscript:``, ``file:`` or ``data:`` target are not made
links (markdown-it's ``validateLink``). Images are off too: the pages' CSP
allows none from elsewhere, and guidelines are text. Tables and
strikethrough are on (examples of labels read well as a table).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from labeling.models import Guidelines, Project, Reviewer

# Guidelines are a handbook, not a book: 100,000 characters is some 40 pages.
MAX_GUIDELINES_CHARS = 100_000

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]).disable("image")


def render_guidelines(text: str) -> SafeString:
    """``text`` (Markdown) as HTML safe to put in a page: raw HTML escaped, unsafe
    link targets left as text, no images (module docstring)."""
    # Safe by construction: with html off markdown-it escapes every character of the
    # input that is not Markdown syntax, so the output holds only the tags it writes.
    return mark_safe(_MARKDOWN.render(text or ""))  # noqa: S308


def guidelines_current(*, project: Project | int) -> Guidelines | None:
    """The project's guidelines in force (its latest version), or ``None`` when it
    has none. One query."""
    return Guidelines.objects.filter(project=project).order_by("-number").select_related("author").first()


def guidelines_versions(*, project: Project) -> QuerySet[Guidelines]:
    """Every version of the project's guidelines, newest first, with its author."""
    return Guidelines.objects.filter(project=project).select_related("author").order_by("-number")


def guidelines_save(*, project: Project, author: Reviewer | None, text: str) -> Guidelines:
    """Save ``text`` as the next version of ``project``'s guidelines (1 for the
    first) and return it; labels saved from now on record its number.

    Line ends are normalized to ``\\n`` and the text is stripped. Raises
    ValidationError when the text is blank, longer than
    ``MAX_GUIDELINES_CHARS``, or the same as the version in force ("unchanged
    since version N": nothing saved). The project's row is locked, so two leads
    saving at once get versions N and N + 1, never the same number.
    """
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise ValidationError("Write the guidelines first: an empty text is not a version.", code="empty")
    if len(text) > MAX_GUIDELINES_CHARS:
        raise ValidationError(f"The guidelines are {len(text):,} characters long; the limit is "
                              f"{MAX_GUIDELINES_CHARS:,}.", code="too_long")
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).exists()
        current = Guidelines.objects.filter(project=project).order_by("-number").first()
        if current is not None and current.text == text:
            raise ValidationError(f"The guidelines are unchanged since version {current.number}: nothing saved.",
                                  code="unchanged")
        top = Guidelines.objects.filter(project=project).aggregate(top=Max("number"))["top"] or 0
        return Guidelines.objects.create(project=project, number=top + 1, text=text, author=author)
