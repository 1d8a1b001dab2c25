"""A 1M-claim project on PostgreSQL, step by step as a user runs it (SPEC §7).

Run it by hand on an idle machine (not part of any test run):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/citelab_scale \\
        .venv/bin/python tests/bench/scale.py --answers 166667

It creates the database named in DATABASE_URL afresh (``dropdb``/``createdb``),
writes a synthetic answers file (6 claims an answer, 4 of 5 cited, three
reviewers' labels on every cited claim: ``--answers 166667`` is 1,000,002 claims),
then times each step as a separate command, as a user would run it, with its
wall time and peak resident memory (``/usr/bin/time``): migrate, import_answers,
score, agreement, snapshot, export_labels (CSV and XLSX); then the pages a lead
opens (project, run overview and its summary and scatter, review page, agreement,
reviewer dashboard, versions),
each served three times by Django's test client in one process: first and best
server time. ``--steps score,pages`` times only those steps after the import
(the XLSX export of 1M rows alone takes about 25 minutes). Prints one line per
step and the machine's load; the figures are in ``templates/docs/scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
REVIEWERS = ("ann", "ben", "cat")
STEPS = ("score", "agreement", "snapshot", "csv", "xlsx", "pages")
STEP_LABELS = {"score": "score", "agreement": "agreement", "snapshot": "snapshot", "csv": "export_labels csv",
               "xlsx": "export_labels xlsx"}


def write_answers(path: Path, answers: int) -> int:
    """Write ``answers`` answers of 6 claims to ``path``; every cited claim carries the
    labels of the three reviewers (ann and ben agree, cat differs on every third claim).
    Returns the number of claims."""
    with path.open("w") as handle:
        for n in range(answers):
            passages = [{"id": f"P{k}", "source": f"https://example.org/doc{n % 500}/{k}",
                         "text": f"Passage {k} of answer {n}: " + "retrieved evidence text " * 12} for k in (1, 2, 3)]
            claims = []
            for c in range(6):
                cited = bool(c % 5)
                claim = {"text": f"Claim {c} of answer {n} states a checkable fact [P{c % 3 + 1}].",
                         "citations": [{"passage_id": f"P{c % 3 + 1}"}] if cited else []}
                if cited:
                    value = "SUPPORTED" if (n + c) % 4 else "UNSUPPORTED"
                    other = "UNSUPPORTED" if value == "SUPPORTED" else "SUPPORTED"
                    claim["labels"] = [
                        {"reviewer": "ann", "label": value, "justification": "" if value == "SUPPORTED" else "weaker"},
                        {"reviewer": "ben", "label": value, "justification": "" if value == "SUPPORTED" else "weaker"},
                        {"reviewer": "cat", "label": other if (n + c) % 3 == 0 else value,
                         "justification": "weaker"},
                    ]
                claims.append(claim)
            handle.write(json.dumps({"question_id": f"q{n:07d}", "question": f"Question {n}?", "run": "big",
                                     "answer": " ".join(c["text"] for c in claims), "passages": passages,
                                     "claims": claims}) + "\n")
    return answers * 6


def timed(label: str, *command: str, env: dict[str, str]) -> tuple[float, float]:
    """Run ``manage.py command`` under /usr/bin/time; print and return (seconds, peak MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        started = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, PYTHON, "manage.py", *command],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - started
        peak = int(out.read().strip().splitlines()[-1]) / 1024
    print(f"{label:<28} {seconds:8.1f} s   peak RSS {peak:7.0f} MiB   load {os.getloadavg()[0]:.1f}", flush=True)
    return seconds, peak


PAGES = """
import os, time
import django
django.setup()
from django.test import Client
from django.urls import reverse
from labeling.models import Answer, Reviewer, Run
run = Run.objects.select_related("project").get(name="big")
slug = run.project.slug
lead = Reviewer.objects.get(username="scale-lead")
client = Client()
client.force_login(lead)
answer = Answer.objects.filter(run=run).order_by("pk").first()
pages = {
    "project": reverse("project_detail", args=[slug]),
    "run overview": reverse("run_detail", args=[slug, run.name]),
    "run summary": reverse("run_summary", args=[slug, run.name]),
    "run scatter": reverse("run_scatter", args=[slug, run.name]),
    "review page": reverse("answer_review", args=[slug, run.name, answer.pk]),
    "agreement": reverse("run_agreement", args=[slug, run.name]),
    "reviewer dashboard": reverse("run_dashboard", args=[slug, run.name]),
    "versions": reverse("version_list", args=[slug, run.name]),
}
for name, url in pages.items():
    times = []
    for _ in range(3):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (name, response.status_code)
    print(f"page {name:<23} first {times[0]:8.0f} ms   best {min(times):8.0f} ms   load {os.getloadavg()[0]:.1f}",
          flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=166_667)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"steps after the import to time, comma-separated (default: all of {', '.join(STEPS)})")
    args = parser.parse_args()
    steps = set(args.steps.split(","))
    if steps - set(STEPS):
        sys.exit(f"unknown steps: {', '.join(sorted(steps - set(STEPS)))}; choose from {', '.join(STEPS)}")
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL database this script may drop and create")
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    server = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or "postgres"]
    subprocess.run(["dropdb", *server, "--if-exists", database], check=True)
    subprocess.run(["createdb", *server, database], check=True)
    env = {**os.environ, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "labeling.settings"}
    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.jsonl"
        started = time.perf_counter()
        claims = write_answers(answers, args.answers)
        print(f"answers file: {args.answers:,} answers, {claims:,} claims, "
              f"{answers.stat().st_size / 2**20:.0f} MiB, written in {time.perf_counter() - started:.0f} s")
        timed("migrate", "migrate", "-v", "0", env=env)
        timed("import_answers", "import_answers", str(answers), "--project", "scale", env=env)
        timed("add_reviewer (lead)", "add_reviewer", "scale-lead", "--password", "Quartz-Harbor-2931",
              "--project", "scale", "--role", "lead", env=env)
        commands = {
            "score": ["score", "--project", "scale", "--run", "big", "--format", "json"],
            "agreement": ["agreement", "--project", "scale", "--run", "big", "--format", "json"],
            "snapshot": ["snapshot", "--project", "scale", "--run", "big", "--note", "scale"],
            "csv": ["export_labels", "--project", "scale", "--run", "big", "-o", str(Path(folder) / "labels.csv")],
            "xlsx": ["export_labels", "--project", "scale", "--run", "big", "-o", str(Path(folder) / "labels.xlsx")],
        }
        for step, command in commands.items():
            if step in steps:
                timed(STEP_LABELS[step], *command, env=env)
        if "pages" in steps:
            subprocess.run([PYTHON, "-c", PAGES], cwd=ROOT, env=env, check=True)
    if not args.keep:
        subprocess.run(["dropdb", *server, "--if-exists", database], check=True)


if __name__ == "__main__":
    main()
