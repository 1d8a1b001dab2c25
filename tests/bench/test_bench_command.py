"""Command start-up and the answers import as a user runs it, end to end.

Run: ``pytest -m bench -s tests/bench/test_bench_command.py`` (add DATABASE_URL
for PostgreSQL). Every figure is a fresh ``python manage.py …`` process against
a database of its own (a SQLite file, or a PostgreSQL database created and
dropped here), so Django's start-up is in it. Printed, each with the load
average it was taken at (the machine is shared):

- start-up (issue 24: ≤ 0.5 s): ``python -c pass`` (the interpreter alone),
  ``manage.py help`` (settings and apps) and ``manage.py check`` (what every
  command does before its work: the system checks, which import the URLconf
  and so every view), wall and CPU seconds, best of 3;
- ``manage.py import_answers FILE`` for 1k and 10k answers of the benchmarks'
  one generator (the files of issue 24's comparison with Label Studio 1.23.2:
  1.23 s and 10.7 s there, same machine), wall and CPU seconds of the
  process (on PostgreSQL the server's CPU is in wall time only), against the
  floor measured right after on the same rows (a bare ``executemany`` /
  ``COPY``, ``tests.bench.test_bench_import.floor_seconds``) and against
  Label Studio's figure (issue 24's, from an earlier machine; ``tests/bench/label_studio.py``
  times Label Studio beside it on the same machine).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.bench.answers_file import write_answers
from tests.bench.test_bench_import import LABEL_STUDIO_SECONDS

ROOT = Path(__file__).resolve().parents[2]
FLOOR_SCRIPT = """
import json, sys, django
django.setup()
from labeling.models import Project
from tests.bench.test_bench_import import floor_seconds
print(json.dumps(floor_seconds(Project.objects.get(slug=sys.argv[1]).pk)))
"""


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the child) of one process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


@pytest.fixture
def database_url(tmp_path):
    """A database of this benchmark's own: a SQLite file, or (DATABASE_URL on
    PostgreSQL) a new database on that server, dropped afterwards."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        yield f"sqlite:///{tmp_path / 'bench.sqlite3'}"
        return
    import psycopg

    name = f"citelab_bench_command_{os.getpid()}"
    admin_url = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlsplit(url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.mark.bench
def test_bench_command_start_up_and_import_end_to_end(tmp_path, database_url):
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "labeling.settings",
           "PYTHONPATH": str(ROOT)}
    vendor = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    _run(["manage.py", "migrate", "--verbosity", "0"], env)
    lines = [f"[bench-command] on {vendor}, python {sys.version.split()[0]}"]
    for name, args in (("python -c pass", ["-c", "pass"]), ("manage.py help", ["manage.py", "help"]),
                       ("manage.py check", ["manage.py", "check"])):
        load = os.getloadavg()[0]
        best = min((_run(args, env)[:2] for _ in range(3)), key=lambda figures: figures[1])
        lines.append(f"[bench-command] start-up {name}: {best[0]:.2f} s wall, {best[1]:.2f} s CPU (best of 3; "
                     f"target 0.5 s); load average {load:.1f}")
    for answers in (1_000, 10_000):
        path = tmp_path / f"answers_{answers}.jsonl"
        write_answers(path, answers)
        slug = f"bench-{answers}"
        load = os.getloadavg()[0]
        wall, cpu, out = _run(["manage.py", "import_answers", str(path), "--project", slug], env)
        assert f"project {slug}:" in out
        floor_wall, floor_cpu = json.loads(_run(["-c", FLOOR_SCRIPT, slug], env)[2])
        label_studio = LABEL_STUDIO_SECONDS[answers]
        lines.append(
            f"[bench-command] manage.py import_answers, {answers:,} answers ({answers * 6:,} claims): {wall:.2f} s "
            f"wall, {cpu:.2f} s CPU; floor (bare {'COPY' if vendor == 'PostgreSQL' else 'executemany'} of the same "
            f"rows) {floor_wall:.2f} s wall, {floor_cpu:.2f} s CPU: {wall / floor_wall:.1f}x the floor in wall time "
            f"(target 3x); Label Studio 1.23.2 {label_studio} s (issue 24, same file, an earlier machine): "
            f"{label_studio / wall:.1f}x faster (target 2x); load average {load:.1f}")
    print()
    print("\n".join(lines))
