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


@pytest.fixture
def expertqa_project(db, expertqa_path):
    """Project ``expertqa`` with all 118 real answers of ``../shared/data`` imported."""
    from labeling.importing import project_for_import, run_import

    project = project_for_import(slug="expertqa")
    run_import(project=project, source=expertqa_path)
    return project


@pytest.fixture
def reviewer(db):
    """A logged-in-able human reviewer ``alice`` (password ``pw-for-tests-1``)."""
    from tests.factories import ReviewerFactory

    return ReviewerFactory(username="alice")
