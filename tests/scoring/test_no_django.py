"""scoring stays framework-free (STYLE §1, §6): no module of it imports Django.

Each module is imported alone in a fresh interpreter, so one that pulls
Django in is named even when another module imports it too.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import scoring
from tests.conftest import REPO_ROOT

MODULES = ["scoring"] + sorted(info.name for info in pkgutil.walk_packages(scoring.__path__, prefix="scoring."))


def test_every_scoring_module_is_checked():
    assert {"scoring.claims", "scoring.labels", "scoring.ratio", "scoring.gold", "scoring.matching",
            "scoring.backends", "scoring.compare", "scoring.normalize"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_scoring_module_imports_without_django(module):
    code = f"import sys, {module}; assert 'django' not in sys.modules, '{module} imported django'"

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stderr
