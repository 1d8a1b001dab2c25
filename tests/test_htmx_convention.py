"""htmx fragments follow one convention (STYLE §4, ``labeling/views/htmx.py``): a view reads
``request.htmx`` (django-htmx, typed ``HtmxHttpRequest``) and renders the page's template with
the fragment's partial name; no view reads an ``HX-`` header itself, concatenates
``render_to_string`` pieces, or renders a separate ``_*.html`` fragment template."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import labeling.views

VIEWS_DIR = Path(labeling.views.__file__).parent
TEMPLATES_DIR = VIEWS_DIR.parents[1] / "templates"


def _sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(VIEWS_DIR.glob("*.py"))}


def test_no_view_reads_hx_headers_or_joins_rendered_pieces():
    found = {name: sorted({m for m in re.findall(r"render_to_string|HX-[A-Za-z-]+|HTTP_HX_\w+", source)})
             for name, source in _sources().items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_views_render_pages_or_their_partials_never_an_underscore_template():
    rendered = {(name, m) for name, source in _sources().items()
                for m in re.findall(r"[\"'](labeling/[\w/.-]+\.html(?:#[\w-]+)?)[\"']", source)}
    assert rendered, "the views name their templates"
    assert sorted(t for _name, t in rendered if t.split("/")[-1].startswith("_") and "#" not in t) == []
    for _name, template in rendered:
        path, _, partial = template.partition("#")
        source = (TEMPLATES_DIR / path).read_text(encoding="utf-8")
        assert not partial or re.search(r"\{%\s*partialdef\s+" + re.escape(partial) + r"[\s%]", source), template


def test_every_function_that_reads_request_htmx_is_typed_htmx_http_request():
    untyped = []
    for name, source in _sources().items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef):
                continue
            reads = any(isinstance(n, ast.Attribute) and n.attr == "htmx" and isinstance(n.value, ast.Name)
                        and n.value.id == "request" for n in ast.walk(node))
            request = next((a for a in node.args.args if a.arg == "request"), None)
            typed = request is not None and request.annotation is not None and ast.unparse(request.annotation)
            if reads and typed != "HtmxHttpRequest":
                untyped.append(f"{name}:{node.name}")
    assert untyped == []
