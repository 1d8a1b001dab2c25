"""The production start of "Running for a team" (templates/docs/team.md), run for
real: migrate, collectstatic, a lead, gunicorn with 2 workers on the suite's
database engine (a fresh PostgreSQL database in the PostgreSQL pass, else a
SQLite file), then a browser's first steps over HTTP on the loopback; and
files that go through Django's storage only, whatever the backend.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from labeling.checks import storage_backend_installed
from tests.conftest import REPO_ROOT
from tests.waiting import BOOT_SECONDS, REQUEST_SECONDS, wait_for


def _database_url(tmp_path: Path):
    """A fresh database on the suite's engine, and how to drop it."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return f"sqlite:///{tmp_path / 'prod.sqlite3'}", lambda: None
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = f"{parts.path.lstrip('/')}_gunicorn_{os.getpid()}"
    admin = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}")), drop


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def production_env(tmp_path):
    database, drop = _database_url(tmp_path)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("CITELAB_") and k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL",
                                                          "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "labeling.settings", "DEBUG": "0",
           "SECRET_KEY": "a-long-random-secret-for-this-test-only-7f3a9c1e5b2d8f4a6c0e",
           "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": database,
           "CITELAB_STATIC_ROOT": str(tmp_path / "static"), "CITELAB_MEDIA_ROOT": str(tmp_path / "media"),
           # plain HTTP on the loopback (README): no TLS here to redirect to
           "CITELAB_SSL_REDIRECT": "0", "CITELAB_SECURE_COOKIES": "0"}
    yield env
    drop()


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _listening_socket() -> socket.socket:
    """A socket listening on a free loopback port, handed to gunicorn (``--bind fd://``):
    no window between choosing a port and binding it in which another test could take it,
    and a request sent before a worker is up waits in the backlog instead of being refused."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.set_inheritable(True)
    return listener


def test_gunicorn_with_two_workers_serves_the_app(production_env, tmp_path):
    env = production_env
    _manage(env, "migrate", "--noinput")
    _manage(env, "collectstatic", "--noinput")
    _manage(env, "add_reviewer", "lead-1", "--password", "a good long passphrase", "--role", "lead")
    listener = _listening_socket()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    log = tmp_path / "gunicorn.log"
    with log.open("w") as log_file:
        # --timeout: a worker still importing Django on a busy machine is not killed as hung.
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "labeling.wsgi", "--workers", "2",
                                   "--bind", f"fd://{listener.fileno()}", "--timeout", "300",
                                   "--access-logfile", "-"],
                                  cwd=REPO_ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                  pass_fds=(listener.fileno(),))
    listener.close()  # gunicorn holds its own copy
    try:
        jar = CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())

        def get(path: str, **headers: str):
            return browser.open(urllib.request.Request(base + path, headers=headers), timeout=REQUEST_SECONDS)

        # A booting worker may refuse, reset or not answer in time (the read timeout that
        # failed at load 5-8): every one of those is "not yet", until the deadline.
        login = wait_for(lambda: get("/login/"), what="gunicorn answering /login/",
                         gone=lambda: server.poll() is not None and f"gunicorn exited:\n{log.read_text()}")
        page = login.read().decode()
        assert login.status == 200
        assert "script-src 'self'" in login.headers["Content-Security-Policy"]
        stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page).group(1)
        static = get(stylesheet, **{"Accept-Encoding": "gzip"})
        assert static.status == 200 and static.headers["Content-Encoding"] == "gzip"  # collected, compressed

        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "lead-1",
                                       "password": "a good long passphrase"}).encode()
        try:
            browser.open(urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": f"{base}/login/"}),
                         timeout=REQUEST_SECONDS)
            raise AssertionError("the login did not redirect")
        except urllib.error.HTTPError as redirect:
            assert redirect.code == 302 and redirect.headers["Location"] == "/"
        # Both workers share the session (database-backed): every request finds the login.
        pages = [get("/") for _ in range(6)]
        assert [p.status for p in pages] == [200] * 6
        assert all("lead-1" in p.read().decode() for p in pages)
    finally:
        server.terminate()
        try:
            server.wait(timeout=BOOT_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    output = log.read_text()
    assert "Booting worker" in output and output.count("Booting worker") >= 2
    assert " 500 " not in output


# -- storage -----------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_version_files_and_uploads_go_through_django_storage(settings, tmp_path, client, expertqa_project):
    """With the default storage swapped for Django's in-memory one, a snapshot,
    its download and a label-table upload work, and nothing lands on the disk:
    no code reaches the file system past the storage (so S3 works the same)."""
    from django.core.files.storage import storages

    from labeling.models import Run
    from labeling.tables.versions import label_table_snapshot, version_read
    from tests.factories import ReviewerFactory

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}
    lead = ReviewerFactory(username="lead-1", is_superuser=True)
    run = Run.objects.filter(project=expertqa_project).order_by("name").first()
    version = label_table_snapshot(run=run, author=lead, note="in memory")
    client.force_login(lead)
    kwargs = {"project_slug": run.project.slug, "run_name": run.name}
    download = client.get(f"/p/{run.project.slug}/runs/{run.name}/versions/{version.number}.jsonl")
    upload = client.post(f"/p/{run.project.slug}/runs/{run.name}/labels/import/",
                         {"file": _named(version_read(version), "table.jsonl")})

    assert storages["default"].__class__.__name__ == "InMemoryStorage"
    assert storages["default"].exists(version.file.name)
    assert b"".join(download.streaming_content if download.streaming else [download.content]) == version_read(
        version)
    assert upload.status_code == 200, kwargs
    assert not (tmp_path / "media").exists()


def _named(data: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def _settings(env: dict[str, str], expression: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CITELAB_")}
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    return subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "labeling.settings", "DEBUG": "1", **env})


def test_the_storage_backend_is_a_setting():
    s3 = _settings({"CITELAB_STORAGE": "s3", "CITELAB_S3_BUCKET": "team-citelab",
                    "CITELAB_S3_ENDPOINT_URL": "http://127.0.0.1:9000"},
                   "settings.STORAGES['default']['BACKEND'], settings.STORAGES['default']['OPTIONS']['bucket_name'],"
                   " settings.STORAGES['default']['OPTIONS']['endpoint_url']")
    default = _settings({}, "settings.STORAGES['default']['BACKEND'], settings.STATIC_ROOT")
    static = _settings({"CITELAB_STATIC_ROOT": "/srv/citelab/static"}, "settings.STATIC_ROOT")
    no_bucket = _settings({"CITELAB_STORAGE": "s3"}, "1")
    unknown = _settings({"CITELAB_STORAGE": "ftp"}, "1")

    assert s3.stdout.strip() == "storages.backends.s3.S3Storage team-citelab http://127.0.0.1:9000"
    assert default.stdout.strip() == f"django.core.files.storage.FileSystemStorage {REPO_ROOT / 'staticfiles'}"
    assert static.stdout.strip() == "/srv/citelab/static"
    assert "CITELAB_STORAGE=s3 needs CITELAB_S3_BUCKET" in no_bucket.stderr
    assert "CITELAB_STORAGE='ftp' is not one of: filesystem, s3" in unknown.stderr


def test_s3_without_its_extra_fails_the_system_check(monkeypatch, settings):
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    monkeypatch.setattr("labeling.checks.find_spec", lambda name: None)

    [error] = storage_backend_installed(None)

    assert error.id == "citelab.E001"
    assert "pip install -e '.[s3]'" in error.hint
    assert django_settings.STORAGES["default"]["BACKEND"] == "storages.backends.s3.S3Storage"


def test_the_wsgi_entry_point_freezes_what_the_process_keeps():
    """A server process loads Django, the views, pandas and numpy once and keeps them: importing
    the WSGI entry point moves them out of the collector's full passes (labeling/wsgi.py)."""
    done = subprocess.run(
        [sys.executable, "-c", "import gc, sys, labeling.wsgi; "
         "print(gc.get_freeze_count(), 'pandas' in sys.modules, 'numpy' in sys.modules, gc.isenabled())"],
        cwd=REPO_ROOT, env={**os.environ, "DJANGO_SETTINGS_MODULE": "labeling.settings", "DEBUG": "1"},
        capture_output=True, text=True, check=True, timeout=120)
    frozen, pandas, numpy, enabled = done.stdout.split()
    # Django and pandas alone are about 100k objects; the collector stays on for what requests make.
    assert int(frozen) > 50_000 and (pandas, numpy, enabled) == ("True", "True", "True")
