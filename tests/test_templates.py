"""Template hygiene that Django does not check itself."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

TEMPLATES = sorted((REPO_ROOT / "templates").rglob("*.html"))


def test_no_template_has_a_multi_line_hash_comment():
    """Django's ``{# … #}`` comment ends at the line: a multi-line one is printed
    on the page as text (the run page once showed its actions' comment).
    Multi-line comments use ``{% comment %}``."""
    assert len(TEMPLATES) > 10
    broken = [
        f"{path.relative_to(REPO_ROOT)}: {match.group(0)[:40]!r}"
        for path in TEMPLATES
        for match in re.finditer(r"\{#.*?#\}", path.read_text(), re.S)
        if "\n" in match.group(0)
    ]
    assert broken == []
