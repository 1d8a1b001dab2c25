"""A bounded load test: simulated reviewers labeling against gunicorn on loopback.

Run (from the repository root)::

    .venv/bin/python -m tests.bench.load --database postgres --reviewers 20 --duration 60 [--think S]
    .venv/bin/python -m tests.bench.load --database sqlite --reviewers 5 --duration 60
    .venv/bin/python -m tests.bench.load --database postgres --label-step
    .venv/bin/python -m tests.bench.load --database postgres --reviewers 6 --overlap 2 --answers 100 --duration 30

What it does, in order:

1. A fresh database: a new PostgreSQL database ``<--db-prefix>_<pid>`` on the
   server of ``--postgres-url`` (dropped afterwards unless ``--keep``), never
   ANALYZEd by hand, as a new team has it; or a new SQLite file in a temporary
   folder. ``migrate``, then a generated project of ``--answers`` answers (default
   8,334 × 6 claims = 50,004 claims, 33,336 of them cited) written by the
   benchmarks' one generator (``tests.bench.answers_file.write_answers``) and
   imported with ``run_import``; reviewers ``load-01`` … are members of it.
2. ``gunicorn labeling.wsgi`` with ``--workers`` (2) sync workers on
   ``127.0.0.1:--port``, ``DEBUG=0`` with a generated ``SECRET_KEY``, plain HTTP
   (``CITELAB_SSL_REDIRECT=0 CITELAB_SECURE_COOKIES=0``: loopback only).
3. Each reviewer (a thread) logs in as the browser does (GET the login page,
   POST the form; timed apart: password hashing is slow on purpose), then all
   start together and label for ``--duration`` seconds as the review page does
   with htmx: open the next claim (``run_next``, full page), then for each key
   press POST the label form (``HX-Request``, the CSRF header, the hidden
   fields the previous response carried; every fourth label UNSUPPORTED with a
   justification), follow the claim the response pushes, and fetch what the page
   would fetch after it (the progress fragment when the ``labelSaved`` event
   carries no delta). A *label step* is that save plus whatever followed it.
   As the page does since issue 24, each claim shown first has the claim after it
   fetched (``claim_next``, timed as "next claim held ready (fetch)", not part of
   the step: the reviewer is reading meanwhile), the save names it, and an
   acknowledged save (``Citelab-Ack``) goes on with it; ``--without-ahead`` labels
   as the page did before (the save answers with the next claim's fragment).
   ``--think`` seconds pass between steps (0: as fast as the server answers),
   and reviewers start spread over one think time.
4. Afterwards every label a 2xx response acknowledged ("Saved …") is looked up
   in the database: reviewer, claim and value must be there as a current label.
   A missing one is a lost label. And every cited claim's current human labels
   are counted against the run's ``--overlap`` (default 1): how many claims
   have 0, 1, 2 … labels, and how many have more than the overlap (work the
   queue's leases must prevent: SPEC §7). A reviewer whose queue is empty
   stops.

Printed (and with ``--json PATH`` written as JSON): requests/s over the
labeling window, p50/p95/p99/max of every request and of label steps, by kind,
errors (non-2xx/3xx answers, connection failures), lost labels, logins, the
load average before and after, and the server's CPU time per labeling request
(gunicorn's processes and, on PostgreSQL, the database's backends, read from
``/proc`` over the labeling window): on a shared machine latency measures the
neighbours too, the CPU per request does not. ``--label-step`` is one reviewer, no think time,
300 steps, plus 30 openings of an answer page: the review screen's latency over
HTTP without contention.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from tests.waiting import REQUEST_SECONDS, wait_for

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "load-test-password-1"
PROJECT = "load"
RUN = "bench"
_HIDDEN = re.compile(r'<input type="hidden" name="(claim|revision|base_label|more_in_answer)" value="(\d*)"')


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0–1) of ``values`` by the nearest-rank method; 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(q * len(ordered))) - 1))]


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Stats:
    """Timings in milliseconds by request kind, and what went wrong."""

    times: dict[str, list[float]] = field(default_factory=dict)
    steps: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acked: list[tuple[str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, ms: float) -> None:
        with self.lock:
            self.times.setdefault(kind, []).append(ms)

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


class Browser:
    """One reviewer's browser: a cookie jar, the CSRF token, one connection per request
    (gunicorn's sync workers close each one)."""

    def __init__(self, port: int, stats: Stats):
        self.port = port
        self.stats = stats
        self.cookies: dict[str, str] = {}

    def request(self, kind: str, method: str, path: str, body: dict | None = None, *, htmx: bool = False,
                timed: bool = True) -> tuple[int, dict[str, str], str, float]:
        headers = {"Host": "127.0.0.1", "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        data = None
        if body is not None:
            data = urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")
        if htmx:
            headers["HX-Request"] = "true"
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            connection.close()
        ms = (time.perf_counter() - started) * 1000
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        if timed:
            self.stats.add(kind, ms)
        if response.status >= 400:
            self.stats.error(f"{kind} {method} {path}: HTTP {response.status} {text[:200]!r}")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text, ms

    def login(self, username: str) -> None:
        self.request("login page", "GET", "/login/", timed=False)
        status, headers, _text, ms = self.request("login", "POST", "/login/",
                                                  {"username": username, "password": PASSWORD,
                                                   "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")},
                                                  timed=False)
        self.stats.add("login", ms)
        if status != 302:
            raise RuntimeError(f"login of {username} failed: HTTP {status}")


def run_base() -> str:
    return f"/p/{PROJECT}/runs/{RUN}"


def open_next(browser: Browser) -> tuple[str, dict[str, str]] | None:
    """Open the reviewer's next claim as "Start labeling" does (redirect, then the page):
    ``(label URL, hidden fields)``, or None when the queue is empty."""
    status, headers, _t, _ms = browser.request("next (redirect)", "GET", f"{run_base()}/next/")
    location = headers.get("location", "")
    if status != 302 or "/answers/" not in location:
        return None
    _s, _h, html, _ms = browser.request("open item (page)", "GET", location)
    return form_of(html)


def form_of(html: str) -> tuple[str, dict[str, str]] | None:
    if 'id="label-form"' not in html:
        return None
    form = html.split('id="label-form"', 1)[1]
    action = re.search(r'hx-post="([^"]+)"', form)
    return (action.group(1) if action else ""), dict(_HIDDEN.findall(form.split("</form>", 1)[0]))


def held_ready(browser: Browser, url: str) -> tuple[dict[str, str], str] | None:
    """What the page fetches once it shows the claim whose label form posts to ``url``: the
    claim the queue hands out after it (``claim_next``), as ``(headers, html)``; None when
    nothing follows."""
    status, headers, html, _ms = browser.request("next claim held ready (fetch)", "GET",
                                                 url.replace("/label/", "/next/"))
    return (headers, html) if status == 200 else None


def label_step(browser: Browser, username: str, url: str, fields: dict[str, str], n: int, *, ahead: bool = True
               ) -> tuple[str, dict[str, str]] | None:
    """One key press: POST the label, then whatever the page fetches after it. With
    ``ahead`` (the page since issue 24), the save names the claim the page fetched
    ahead and shows meanwhile, and the page then fetches the claim after that one.
    Returns the next claim's form, or None when the queue is done or something failed."""
    value = {"value": "UNSUPPORTED", "justification": "only part of it"} if n % 4 == 3 else {"value": "SUPPORTED"}
    body = {**fields, **value, "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")}
    ready = held_ready(browser, url) if ahead else None
    if ready is not None:
        body.update(prefetched=ready[0]["citelab-next-claim"], prefetched_state=ready[0]["citelab-next-state"])
    status, headers, html, step = browser.request("label save", "POST", url, body, htmx=True)
    if status != 200:
        return None
    if ready is not None and headers.get("citelab-ack") == fields["claim"]:
        # Acknowledged: the page keeps the claim it showed at the key press.
        with browser.stats.lock:
            browser.stats.acked.append((username, int(fields["claim"]), value["value"]))
        browser.stats.steps.append(step)
        return form_of(ready[1])
    if "Saved " in html and "Not saved." not in html:
        with browser.stats.lock:
            browser.stats.acked.append((username, int(fields["claim"]), value["value"]))
    trigger = json.loads(headers.get("hx-trigger") or "{}").get("labelSaved")
    if trigger is not None and "labeled" not in trigger:
        *_rest, ms = browser.request("progress", "GET", f"{run_base()}/progress/", htmx=True)
        step += ms
    browser.stats.steps.append(step)
    if "hx-push-url" not in headers:
        return None
    following = form_of(html)
    if following is not None and following[1].get("claim") == fields["claim"]:
        return None  # the page stayed on the claim just saved: nothing left here, ask the queue
    return following


def reviewer_loop(browser: Browser, username: str, start: threading.Event, stop_at: list[float], think: float,
                  max_steps: int | None, min_steps: int = 0, ahead: bool = True) -> None:
    start.wait()
    # People do not press their first key in the same millisecond: starts spread over one think time.
    time.sleep(random.uniform(0, think))
    try:
        current = open_next(browser)
        n = 0
        # At least min_steps whatever the clock: on a busy machine the first page may take the whole duration.
        while current is not None and (n < min_steps or time.perf_counter() < stop_at[0]):
            if max_steps is not None and n >= max_steps:
                return
            url, fields = current
            current = label_step(browser, username, url, fields, n, ahead=ahead)
            n += 1
            if current is None and (n < min_steps or time.perf_counter() < stop_at[0]):
                current = open_next(browser)  # the queue went on elsewhere, or a save failed: start again
            if think:
                time.sleep(think)
    except Exception as exc:  # a failed connection is an error of the run, not of the script
        browser.stats.error(f"{username}: {type(exc).__name__}: {exc}")


# -- setup and checks (in this process, through Django) ----------------------------------------

def fresh_database(database: str, postgres_url: str, db_name: str, folder: Path) -> str:
    """The URL of a new, empty database: ``db_name`` created on the PostgreSQL server of
    ``postgres_url`` (drop it with :func:`drop_database`), or a SQLite file in ``folder``."""
    if database != "postgres":
        return f"sqlite:///{folder / f'{db_name}.sqlite3'}"
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db_name}"')
    return urlsplit(postgres_url)._replace(path=f"/{db_name}").geturl()


def drop_database(postgres_url: str, db_name: str) -> None:
    """Drop the PostgreSQL database ``db_name`` of :func:`fresh_database`, if it exists."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db_name}"')


def django_env(database_url: str) -> dict[str, str]:
    return {"DATABASE_URL": database_url, "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost", "CITELAB_SSL_REDIRECT": "0", "CITELAB_SECURE_COOKIES": "0",
            "CITELAB_LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "labeling.settings"}


def prepare(answers: int, reviewers: int, folder: Path, overlap: int = 1) -> dict:
    """Migrate, import the generated project, create the reviewers (one password hash for all)."""
    import django
    from django.core.management import call_command

    django.setup()
    from django.contrib.auth.hashers import make_password

    from labeling.importers.load import run_import
    from labeling.models import Membership, Project, Reviewer, Role, Run
    from tests.bench.answers_file import write_answers

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    path = folder / f"answers_{answers}.jsonl"
    write_answers(path, answers)
    project = Project.objects.create(slug=PROJECT, name="Load test")
    imported = time.perf_counter()
    report = run_import(project=project, source=path)
    import_seconds = time.perf_counter() - imported
    Run.objects.filter(project=project, name=RUN).update(overlap=overlap)
    password = make_password(PASSWORD)
    users = Reviewer.objects.bulk_create(
        [Reviewer(username=f"load-{n:02d}", password=password) for n in range(1, reviewers + 1)])
    Membership.objects.bulk_create([Membership(project=project, reviewer=u, role=Role.REVIEWER) for u in users])
    return {"claims": report.claims_created, "answers": report.answers_created, "import_s": round(import_seconds, 1),
            "setup_s": round(time.perf_counter() - started, 1), "usernames": [u.username for u in users]}


def lost_labels(acked: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """The acknowledged labels that are not a current label of that reviewer on that claim with that value."""
    from django.db import connection

    from labeling.models import Label

    connection.close()  # a fresh connection: see what the server committed
    current = set(Label.objects.filter(is_current=True, reviewer__username__startswith="load-")
                  .values_list("reviewer__username", "claim_id", "value"))
    return [label for label in acked if label not in current]


def labels_per_claim() -> dict[int, int]:
    """How many cited claims of the run have 0, 1, 2 … current human labels."""
    from collections import Counter

    from django.db.models import Count, Exists, OuterRef, Q

    from labeling.models import Citation, Claim

    cited = Claim.objects.filter(answer__run__name=RUN).filter(Exists(Citation.objects.filter(claim=OuterRef("pk"))))
    counts = cited.annotate(n=Count("labels", filter=Q(labels__is_current=True, labels__reviewer__kind="human")))
    return dict(sorted(Counter(counts.values_list("n", flat=True)).items()))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pids(server: subprocess.Popen, database: str) -> list[int]:
    """gunicorn's master and workers, and on PostgreSQL the backends serving the database."""
    pids = [server.pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == server.pid:
                pids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    if database == "postgres":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
            pids += [row[0] for row in cursor.fetchall()]
    return pids


def start_server(port: int, workers: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "gunicorn", "labeling.wsgi", "--workers", str(workers),
               "--bind", f"127.0.0.1:{port}", "--access-logfile", "-", "--timeout", "120"]
    server = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stdout=log.open("w"),
                              stderr=subprocess.STDOUT, start_new_session=True)

    def answered() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_SECONDS)
        try:
            connection.request("GET", "/login/")
            status = connection.getresponse().status
        finally:
            connection.close()
        if status != 200:
            raise ConnectionError(f"/login/ answered HTTP {status}")  # not serving yet: try again

    # Refused, reset or a read timeout while a worker boots are all "not yet" (tests/waiting.py).
    try:
        wait_for(answered, what="gunicorn answering /login/",
                 gone=lambda: server.poll() is not None and f"gunicorn exited: {log.read_text()[-2000:]}")
    except AssertionError as exc:
        raise RuntimeError(str(exc)) from None
    return server


def stop_server(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def summarize(values: list[float]) -> dict:
    return {"n": len(values), "p50": round(percentile(values, 0.50), 1), "p95": round(percentile(values, 0.95), 1),
            "p99": round(percentile(values, 0.99), 1), "max": round(max(values), 1) if values else 0.0}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="sqlite")
    parser.add_argument("--postgres-url", default=os.environ.get("CITELAB_LOAD_POSTGRES_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/postgres"),
                        help="a server where a new database can be created (default: %(default)s)")
    parser.add_argument("--db-prefix", default="citelab_load")
    parser.add_argument("--reviewers", type=int, default=5)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of labeling")
    parser.add_argument("--think", type=float, default=0.0, help="seconds between a reviewer's steps")
    parser.add_argument("--answers", type=int, default=8_334, help="answers of 6 claims (default: 50,004 claims)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--overlap", type=int, default=1, choices=range(1, 6),
                        help="reviewers each claim needs (the run's overlap)")
    parser.add_argument("--min-steps", type=int, default=0,
                        help="label steps each reviewer makes even past --duration (a busy machine's smoke test)")
    parser.add_argument("--port", type=int, default=8300)
    parser.add_argument("--label-step", action="store_true",
                        help="one reviewer, no think time, 300 steps and 30 answer openings")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--without-ahead", action="store_true",
                        help="label as a page without the next claim held ready (each save answers with the "
                             "next claim's fragment, nothing fetched ahead)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.label_step:
        args.reviewers, args.think = 1, 0.0

    folder = Path(tempfile.mkdtemp(prefix="citelab-load-"))
    db_name = f"{args.db_prefix}_{os.getpid()}"
    database_url = fresh_database(args.database, args.postgres_url, db_name, folder)
    env = django_env(database_url)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    server = None
    try:
        setup = prepare(args.answers, args.reviewers, folder, args.overlap)
        server = start_server(args.port, args.workers, env, folder / "gunicorn.log")
        stats = Stats()
        browsers = [(Browser(args.port, stats), name) for name in setup["usernames"]]
        load_before = load_average()
        for browser, name in browsers:  # one after the other, as people arrive
            browser.login(name)
        pids = server_pids(server, args.database)
        cpu_before = sum(_cpu_seconds(pid) for pid in pids)
        start = threading.Event()
        stop_at = [float("inf")]
        max_steps = 300 if args.label_step else None
        threads = [threading.Thread(target=reviewer_loop,
                                    args=(b, n, start, stop_at, args.think, max_steps, args.min_steps,
                                          not args.without_ahead))
                   for b, n in browsers]
        for thread in threads:
            thread.start()
        began = time.perf_counter()
        stop_at[0] = began + args.duration
        start.set()
        for thread in threads:
            thread.join()
        window = time.perf_counter() - began
        server_cpu = sum(_cpu_seconds(pid) for pid in pids) - cpu_before
        if args.label_step:
            browser = browsers[0][0]
            from labeling.models import Answer

            for answer_id in Answer.objects.filter(run__name=RUN).order_by("?").values_list("pk", flat=True)[:30]:
                browser.request("open answer (page)", "GET", f"{run_base()}/answers/{answer_id}/")
        load_after = load_average()
    finally:
        if server is not None:
            stop_server(server)
    lost = lost_labels(stats.acked)
    per_claim = labels_per_claim()
    from django.db import connection

    connection.close()
    if args.database == "postgres" and not args.keep:
        drop_database(args.postgres_url, db_name)
    labeling = [ms for kind, values in stats.times.items() if kind != "login" for ms in values]
    result = {
        "database": args.database, "reviewers": args.reviewers, "duration_s": round(window, 1),
        "think_s": args.think, "workers": args.workers, "claims": setup["claims"],
        "import_s": setup["import_s"], "setup_s": setup["setup_s"],
        "requests": len(labeling), "requests_per_s": round(len(labeling) / window, 1),
        "server_cpu_ms_per_request": round(server_cpu * 1000 / max(1, len(labeling) - len(stats.times.get(
            "open answer (page)", []))), 1),
        "all_requests_ms": summarize(labeling), "label_step_ms": summarize(stats.steps),
        "by_kind_ms": {kind: summarize(values) for kind, values in sorted(stats.times.items())},
        "labels_acknowledged": len(stats.acked), "lost_labels": len(lost), "errors": len(stats.errors),
        "overlap": args.overlap, "labels_per_claim": {str(k): v for k, v in per_claim.items()},
        "claims_over_overlap": sum(v for k, v in per_claim.items() if k > args.overlap),
        "error_samples": stats.errors[:5], "load_average_before": load_before, "load_average_after": load_after,
    }
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


def report(result: dict) -> str:
    every, step = result["all_requests_ms"], result["label_step_ms"]
    lines = [
        f"[load] {result['database']}, {result['reviewers']} reviewers, think {result['think_s']} s, gunicorn "
        f"-w {result['workers']}, {result['claims']:,} claims (import {result['import_s']} s), "
        f"{result['duration_s']} s, load average {result['load_average_before']} → {result['load_average_after']}",
        f"[load] server CPU (gunicorn + database backends) per labeling request: "
        f"{result['server_cpu_ms_per_request']} ms",
        f"[load] {result['requests']} requests, {result['requests_per_s']} requests/s; every request p50 "
        f"{every['p50']} / p95 {every['p95']} / p99 {every['p99']} / max {every['max']} ms",
        f"[load] label step (save + what the page fetches after it): n={step['n']} p50 {step['p50']} / p95 "
        f"{step['p95']} / p99 {step['p99']} ms",
    ]
    for kind, figures in result["by_kind_ms"].items():
        lines.append(f"[load]   {kind}: n={figures['n']} p50 {figures['p50']} / p95 {figures['p95']} / p99 "
                     f"{figures['p99']} / max {figures['max']} ms")
    lines.append(f"[load] errors {result['errors']}, labels acknowledged {result['labels_acknowledged']}, "
                 f"lost {result['lost_labels']}")
    lines.append(f"[load] overlap {result['overlap']}: cited claims by their number of human labels "
                 f"{result['labels_per_claim']}; more than the overlap: {result['claims_over_overlap']}")
    lines.extend(f"[load]   error: {e}" for e in result["error_samples"])
    return "\n".join(lines)


if __name__ == "__main__":
    outcome = main()
    sys.exit(1 if outcome["errors"] or outcome["lost_labels"] or outcome["claims_over_overlap"] else 0)
