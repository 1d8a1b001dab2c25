"""The layers of ``labeling`` as they are, and the size rules of the house.

Bottom to top: ``scoring`` (framework-free, never imports Django); the foundation
(models, names, limits, db, settings); ``labeling.exports`` (ORM → frames → files);
the areas (permissions, audit, runs, review, team, judges, tables, scores,
importers, backup, integrations); the entry points (views, api, management
commands, admin, urls). A module imports its own layer and the layers below,
never one above. At most 15 modules stay loose in ``labeling/``, no module passes
600 lines and no test module 900."""

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
    # Whose labels a run leaves out of its figures (SPEC §4.4) is labeling.models.counted's, below the exports.
    assert {name: found for name, found in upward.items() if found} == {}


# The layers of ``labeling``, bottom to top: a module may import its own layer and the
# layers below, never one above. ``scoring`` (framework-free) sits under all of them.
LAYERS = [
    ("foundation", ("labeling.names", "labeling.limits", "labeling.models", "labeling.db", "labeling.settings",
                    "labeling.checks", "labeling.middleware")),
    ("exports", ("labeling.exports",)),
    ("areas", ("labeling.permissions", "labeling.audit", "labeling.runs", "labeling.review", "labeling.team",
               "labeling.judges", "labeling.tables", "labeling.scores", "labeling.importers", "labeling.backup",
               "labeling.integrations", "labeling.templatetags")),
    # apps.py wires the app at start-up (system checks, the webhooks' audit listener).
    ("entry points", ("labeling.views", "labeling.api", "labeling.management", "labeling.admin", "labeling.urls",
                      "labeling.wsgi", "labeling.asgi", "labeling.apps")),
]
LABELING_DIR = EXPORTS_DIR.parent


def _layer_of(module: str) -> int | None:
    for index, (_name, prefixes) in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return index
    return None


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(LABELING_DIR.parent).with_suffix("").parts).removesuffix(".__init__")


def test_every_module_of_labeling_has_a_layer():
    modules = [_module_of(path) for path in LABELING_DIR.rglob("*.py") if "migrations" not in path.parts]
    assert [module for module in modules if module != "labeling" and _layer_of(module) is None] == []


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for path in sorted(LABELING_DIR.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        module = _module_of(path)
        own = _layer_of(module)
        if own is None:
            continue
        for name in _project_imports(path):
            if name.startswith("labeling.") and (_layer_of(name) or 0) > own:
                upward.append((module, name))
    assert upward == []


def test_scoring_never_imports_django_or_labeling():
    scoring_dir = LABELING_DIR.parent / "scoring"
    found = {}
    for path in sorted(scoring_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        bad = sorted(name for name in names if name.split(".")[0] in ("django", "labeling"))
        if bad:
            found[path.name] = bad
    assert found == {}


def test_at_most_fifteen_modules_stay_loose_and_no_file_passes_600_lines():
    loose = sorted(path.name for path in LABELING_DIR.glob("*.py"))
    assert len(loose) <= 15, loose
    long = {str(path.relative_to(LABELING_DIR)): n for path in LABELING_DIR.rglob("*.py")
            if "migrations" not in path.parts and (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}
    tests_dir = Path(__file__).parent
    long_tests = {path.name: n for path in tests_dir.rglob("test_*.py")
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > 900}
    assert long_tests == {}
