"""Dependency direction inside ``labeling``: ``labeling.exports`` is the bottom
layer (ORM → frames → files, the one bridge to ``scoring``); the modules
above it (metrics, selectors, services, label tables, comparison, views,
commands) import it, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

import labeling.exports

EXPORTS_DIR = Path(labeling.exports.__file__).parent
# What an export module may import from the project: the models, its own
# package, the framework-free scoring library, and labeling.db (transactions
# that read at one moment; it imports nothing of the project above the models).
ALLOWED = ("labeling.models", "labeling.exports", "labeling.db", "scoring")


def _project_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] in ("labeling", "scoring")}


def test_exports_import_only_models_exports_and_scoring():
    modules = sorted(EXPORTS_DIR.glob("*.py"))
    assert {path.name for path in modules} >= {"cells.py", "frames.py", "label_table.py", "xlsx.py"}
    upward = {
        path.name: sorted(name for name in _project_imports(path)
                          if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED))
        for path in modules
    }
    # One known upward import, pinned so no other joins it: frames.py asks labeling.team.quality
    # which reviewers a lead left out (issue 25). It goes when the house is regrouped (issue 21).
    assert {name: found for name, found in upward.items() if found} == {"frames.py": ["labeling.team.quality"]}
