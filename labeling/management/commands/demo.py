"""``python manage.py demo [--no-serve] [--no-worker]``: a ready-to-click Citelab on the embedded SQLite.

Migrates the default database, imports every answers file under ``fixtures/``
into the project ``demo`` and the judged ExpertQA sample into ``demo-judged``
(judging citations on, SPEC §4.3b) (idempotent), creates the reviewer ``demo``
and serves the app on 127.0.0.1:8000, with a task queue worker (``manage.py
qcluster``, a child process stopped with the server) so a lead's "Run a
judge" button works; ``--no-worker`` leaves it out.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Membership, Project, Reviewer, Role

DEMO_PROJECT = "demo"
DEMO_REVIEWER = "demo"
DEMO_PASSWORD = "citelab-demo"
FIXTURE_FILES = [
    "seed_coverage_support.jsonl",
    # The same question answered after a prompt change: something to compare.
    "seed_coverage_support_v2.jsonl",
    "seed_citation_ids.jsonl",
    "seed_gold_references.jsonl",
    "expertqa_sample.jsonl",
]
JUDGED_PROJECT = "demo-judged"
JUDGED_FILE = "expertqa_judged.jsonl"


def worker_command() -> list[str]:
    """The demo's task queue worker: this Python running ``manage.py qcluster``."""
    return [sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"]


def stop_worker(worker: subprocess.Popen) -> None:
    """SIGTERM to the worker's process group (qcluster and the processes it forked),
    SIGKILL to what is left after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(worker.pid, sig)
        except ProcessLookupError:
            break
        try:
            worker.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


class Command(BaseCommand):
    help = "Prepare a demo project from fixtures/ and serve Citelab on 127.0.0.1:8000."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-serve", action="store_true", help="only migrate and load the demo data")
        parser.add_argument("--addrport", default="127.0.0.1:8000", help="where to serve (default %(default)s)")
        parser.add_argument("--no-worker", action="store_true",
                            help="serve without the task queue worker (judge runs then wait in the queue)")

    def handle(self, *args, no_serve: bool, addrport: str, no_worker: bool = False, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        fixtures_dir = settings.BASE_DIR / "fixtures"
        with transaction.atomic():
            project, _created = Project.objects.get_or_create(
                slug=DEMO_PROJECT,
                defaults={"name": "Demo: seeds and ExpertQA sample",
                          "description": "The seeds' worked examples and 20 real ExpertQA answers with expert labels."},
            )
            judged, _created = Project.objects.get_or_create(
                slug=JUDGED_PROJECT,
                defaults={"name": "Demo: ExpertQA with judged citations", "judge_citations": True,
                          "description": "Six ExpertQA answers whose every citation a Citelab engineer judged "
                                         "(FULL, PARTIAL, NONE, UNJUDGEABLE)."},
            )
            for target, name in [*((project, name) for name in FIXTURE_FILES), (judged, JUDGED_FILE)]:
                try:
                    report = run_import(project=target, source=fixtures_dir / name)
                except ImportFailed as failure:
                    raise CommandError(f"fixtures/{name}: {failure}") from None
                self.stdout.write(f"fixtures/{name} → {target.slug}: {report.summary()}")
            reviewer = Reviewer.objects.filter(username=DEMO_REVIEWER).first()
            if reviewer is None:
                # A lead of the demo project, not a superuser: the demo shows what a team's lead sees.
                reviewer = Reviewer.objects.create_user(username=DEMO_REVIEWER, password=DEMO_PASSWORD)
            for target in (project, judged):
                Membership.objects.update_or_create(project=target, reviewer=reviewer,
                                                    defaults={"role": Role.LEAD})
        self.stdout.write(self.style.SUCCESS(
            f"Demo ready. Log in as reviewer '{DEMO_REVIEWER}' with password '{DEMO_PASSWORD}'."
        ))
        if no_serve:
            return
        worker = None
        # Stopped by SIGTERM as by Ctrl-C: the worker child is stopped with the server.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        if not no_worker:
            # The queue lives in the same SQLite file: one worker process takes judge runs from it.
            # Its own process group: stopping the demo stops the worker's children too.
            worker = subprocess.Popen(worker_command(), start_new_session=True)
            self.stdout.write(f"Task queue worker started (pid {worker.pid}; --no-worker to leave it out)")
        self.stdout.write(self.style.SUCCESS(f"Serving on http://{addrport}/ (Ctrl-C to stop)"))
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            if worker is not None:
                stop_worker(worker)
