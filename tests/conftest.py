"""Shared fixtures and paths for the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests are checked for what they find, never for speed: no per-example deadline
# (hypothesis' default 200 ms fails an example that a busy machine merely delays) and no
# "too slow" data-generation check. Loaded here, before any test module builds its own
# ``settings(...)``, so those inherit it (SPEC §7).
settings.register_profile("citelab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("citelab")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES_DIR = REPO_ROOT / "fixtures"
# 118 real ExpertQA answers with the experts' labels (MIT, fixtures/LICENSE-expertqa.txt).
# The suite reads only what the clone holds.
EXPERTQA_PATH = FIXTURES_DIR / "expertqa_dev.jsonl"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Benchmarks (``-m bench``) run in one process whatever ``-n`` says: their
    figures print (``-s``) and no worker competes with what they time."""
    marks = config.option.markexpr or ""
    if "bench" in marks and "not bench" not in marks:
        config.option.numprocesses = 0
        config.option.dist = "no"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite, the test database is a file (WAL, as in production), not
    Django's shared in-memory one: tests/test_concurrency.py writes from
    several threads at once, which an in-memory database answers with table
    locks production never sees."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("sqlite") / "test.sqlite3")


@pytest.fixture(autouse=True, scope="session")
def partial_responses_keep_their_context():
    """``response.context`` for a fragment rendered as ``"page.html#partial"`` (STYLE §4), as
    for a whole template: Django's test setup instruments ``Template._render`` to send
    ``template_rendered``, which the test client records; a partial renders through
    django-template-partials' ``TemplateProxy``, so it sends it here when rendered on its own."""
    from django.test.signals import template_rendered
    from template_partials.templatetags.partials import TemplateProxy

    render = TemplateProxy.render

    def instrumented(self, context):
        if context.template is None:  # the response's own template, not a {% partial %} inside one
            template_rendered.send(sender=self, template=self, context=context)
        return render(self, context)

    TemplateProxy.render = instrumented
    yield
    TemplateProxy.render = render


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """MD5 instead of PBKDF2 for every account the tests create or log in:
    hashing is most of a login, and the suite creates hundreds of reviewers.
    Test passwords protect nothing; production keeps Django's default."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def expertqa_path() -> Path:
    """Path of ``fixtures/expertqa_dev.jsonl`` (118 real answers with the experts' labels)."""
    return EXPERTQA_PATH


@pytest.fixture
def expertqa_project(db, expertqa_path):
    """Project ``expertqa`` with all 118 real answers of ``fixtures/expertqa_dev.jsonl`` imported."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="expertqa")
    run_import(project=project, source=expertqa_path)
    return project


@pytest.fixture
def reviewer(db):
    """A logged-in-able human reviewer ``alice`` (password ``pw-for-tests-1``)."""
    from tests.factories import ReviewerFactory

    return ReviewerFactory(username="alice")


@pytest.fixture
def alice(client, reviewer):
    """The test client logged in as ``reviewer`` (``alice``)."""
    client.force_login(reviewer)
    return client


@pytest.fixture
def judging_run(db, tmp_path):
    """Run ``judged`` of project ``judging`` (tests/judge_server.py): six answers, one per
    scripted judge behaviour, each with 2 cited claims and 1 uncited: 12 cited claims."""
    from labeling.importers.load import project_for_import, run_import
    from labeling.models import Run
    from tests.judge_server import judging_answers

    project = project_for_import(slug="judging")
    run_import(project=project, source=judging_answers(tmp_path / "answers.jsonl"))
    return Run.objects.get(project=project, name="judged")


@pytest.fixture(autouse=True)
def _empty_figure_cache():
    """Each test starts with an empty cache: ids come back after a rollback
    (SQLite), so a run of one test could meet the figures cached for another's
    (``labeling.scores.figure_cache``); the API's rate-limit counts live there too."""
    from django.core.cache import cache

    cache.clear()
    yield
