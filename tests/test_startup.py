"""Start-up stays light (SPEC §7): Django's settings, the URLconf (every view)
and every management command module import no heavy library; they load
where they are used (``scoring.lazy`` for pandas/numpy, function-level
imports for the rest). Each check runs in a fresh interpreter, where
``sys.modules`` shows exactly what importing did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "openpyxl", "xlsxturbo", "python_calamine", "scipy", "statsmodels", "krippendorff",
         "openai", "rapidfuzz", "sentencex", "lxml")

START_UP = """
import importlib, json, pkgutil, sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns  # imports labeling.urls and every view
import labeling.management.commands as commands
names = [m.name for m in pkgutil.iter_modules(commands.__path__)]
for name in names:
    importlib.import_module("labeling.management.commands." + name)
print(json.dumps({"commands": names, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""

DATA_COMMAND = """
import json, sys
import django
django.setup()
from django.core import checks
from labeling.management.commands.import_answers import Command
Command().check(tags=Command.requires_system_checks)
names = [check.__name__ for check in checks.registry.registry.get_checks()
         if set(check.tags) & set(Command.requires_system_checks)]
print(json.dumps({"urlconf": "labeling.urls" in sys.modules, "checks": names,
                  "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _run(script: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "labeling.settings", "DEBUG": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_settings_urlconf_and_commands_import_no_heavy_library():
    result = _run(START_UP)

    assert {"import_answers", "score", "export_labels", "agreement", "compare", "demo"} <= set(result["commands"])
    assert "labeling" in result["loaded"] and "django" in result["loaded"]
    assert sorted(set(HEAVY) & set(result["loaded"])) == []


def test_a_data_command_checks_everything_but_the_pages():
    """import_answers runs the project's own check (storage backend) and the
    models' and database's checks, and leaves the URLconf, every view with it,
    unimported; the admin's and the template engines' checks are for pages."""
    result = _run(DATA_COMMAND)

    assert result["urlconf"] is False
    assert {"storage_backend_installed", "check_all_models", "check_database_backends"} <= set(result["checks"])
    assert {"check_dependencies", "check_admin_app", "check_setting_app_dirs_loaders"} & set(result["checks"]) == set()


def test_a_data_command_leaves_the_http_api_unimported():
    """django-ninja and pydantic are ~0.1 s of start-up: only the URLconf
    (the API's routes) imports them, never a command's set-up."""
    result = _run(DATA_COMMAND)

    assert {"ninja", "pydantic", "pydantic_core"} & set(result["loaded"]) == set()
    assert "django_q" in result["loaded"]


def test_the_lazy_stand_in_imports_on_first_read_and_keeps_what_it_read():
    script = ("import sys; from scoring.lazy import pd; before = 'pandas' in sys.modules; frame = pd.DataFrame; "
              "print(before, 'pandas' in sys.modules, 'DataFrame' in vars(pd), "
              "frame is sys.modules['pandas'].DataFrame)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)

    assert done.stdout.split() == ["False", "True", "True", "True"]


FROZEN = """
import gc, json, weakref
import django
django.setup()
frozen = gc.get_freeze_count()
class Node:
    pass
# A cycle made after start-up: the collector still reclaims it.
node = Node(); node.self = node; seen = weakref.ref(node); del node
gc.collect()
print(json.dumps({"frozen": frozen, "tracked": len(gc.get_objects()), "cycle_collected": seen() is None}))
"""


def test_start_up_objects_are_frozen_out_of_the_collectors_walks_and_later_cycles_still_collected():
    """labeling.apps freezes what start-up loaded (gc.freeze): tens of thousands
    of objects (modules, models, settings) that every collection walked, and the
    exit's last collection with them. What the work makes later is collected as
    before: a cycle made after start-up is reclaimed."""
    result = _run(FROZEN)

    assert result["frozen"] > 20_000
    assert result["tracked"] < result["frozen"] // 10
    assert result["cycle_collected"] is True
