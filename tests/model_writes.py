"""Which modules of ``labeling/`` write which models, read from their source: the
guards of ``tests/test_figure_cache.py`` and ``tests/test_frame_cache.py`` ask it
for the writers that must also say a run's state moved."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

LABELING = Path(__file__).resolve().parents[1] / "labeling"
# The calls that write rows: a manager's or queryset's, and labeling.importers.bulk.insert_rows.
WRITES = {"create", "bulk_create", "update", "delete", "bulk_update", "insert_rows"}


def model_writers(models: set[str], *, exempt: dict[str, str]) -> Iterator[tuple[str, set[str], set[str]]]:
    """``(module path, models of ``models`` it writes, every name and attribute it uses)``
    for each module of ``labeling/`` (models and migrations aside, ``exempt`` paths too,
    relative to the repository) that writes one of ``models`` with
    ``Model.objects….create/update/delete/…`` or ``insert_rows(Model, …)``."""
    for path in sorted(LABELING.rglob("*.py")):
        relative = path.relative_to(LABELING.parent).as_posix()
        if "migrations" in path.parts or relative.startswith("labeling/models/") or relative in exempt:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        writes = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
                chain = ast.unparse(node.func)
                writes |= {model for model in models if chain.startswith(f"{model}.objects")}
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "insert_rows" and node.args:
                writes |= {ast.unparse(node.args[0])} & models
        if writes:
            names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
            names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
            yield relative, writes, names
