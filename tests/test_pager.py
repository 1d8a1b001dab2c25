"""The shared pager of the agreement and judge grading pages' disagreement lists."""

from django.core.paginator import Paginator
from django.template.loader import render_to_string


def test_pager_links_the_pages_around_the_current_one_and_keeps_the_anchor():
    """120 rows at 50 a page: page 2 of 3 links to pages 1 and 3."""
    page = Paginator(list(range(120)), 50).get_page(2)

    html = render_to_string("labeling/_pager.html", {"page": page, "anchor": "#disagreements-title"})

    assert '<a class="button" href="?page=1#disagreements-title" rel="prev">← Previous</a>' in html
    assert '<a class="button" href="?page=3#disagreements-title" rel="next">Next →</a>' in html
    assert "Page 2 of 3" in html


def test_pager_is_absent_when_everything_fits_on_one_page():
    page = Paginator(list(range(50)), 50).get_page(1)

    assert "<nav" not in render_to_string("labeling/_pager.html", {"page": page})
