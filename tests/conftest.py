"""Shared fixtures and paths for the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES_DIR = REPO_ROOT / "fixtures"
# ../shared/data holds the real ExpertQA answers with human labels (CI lays it
# beside the clone, as on a developer's machine).
SHARED_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
EXPERTQA_PATH = SHARED_DATA_DIR / "expertqa_dev.jsonl"


@pytest.fixture(scope="session")
def expertqa_path() -> Path:
    """Path of ``../shared/data/expertqa_dev.jsonl`` (118 real labeled answers)."""
    if not EXPERTQA_PATH.exists():
        pytest.fail(f"{EXPERTQA_PATH} is missing: the suite needs ../shared/data beside the repo")
    return EXPERTQA_PATH
