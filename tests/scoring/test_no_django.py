"""scoring stays framework-free (STYLE §1, §6)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_scoring_imports_without_django():
    code = (
        "import scoring, scoring.claims, scoring.labels, scoring.citation_ids, "
        "scoring.agreement, sys; assert 'django' not in sys.modules, 'scoring imported django'"
    )

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stderr
