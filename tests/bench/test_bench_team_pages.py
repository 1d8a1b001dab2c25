"""Benchmark of the pages added for teams on a 50k-claim run: the project
summary (every run side by side), the run's audit log, the judges panel and a
judge's grading page.

Run: ``pytest -m bench -s tests/bench/test_bench_team_pages.py`` (add
DATABASE_URL for PostgreSQL). The big run has two saved label table versions
(the versions page). The run is the labeling-screen benchmark's
(10k answers × 5 claims, 4 cited per answer) beside nine runs of 1k answers;
its imported labels are replaced by a human reviewer ``hana`` labeling every
cited claim (UNSUPPORTED on every fifth) and a judge ``judge-a`` (kind
``model``) who differs from her on every 9th; 50k audit events are on the big
run. Printed per page: the whole request's server time, p50 of 5 after a
warm-up, and its query count. No ANALYZE has run, as on a new team's database.
Each page is timed right after a write moved every run's label state (its
figures recomputed) and then again (figures computed once per state, SPEC §7).
Then what a lead meets while a team works: the summary after a stamp naming
no claim on the big run (its label table read whole), after a member's role
changes (no figure reads roles: no run's state moves), after every run's state
moves without a label (every row recomputed, the label tables stay as kept),
and the summary, grading, agreement and scatter pages after each of 20 label
saves by ``hana`` (the run's label table brought up to date from the saved
claim, ``labeling.exports.current_labels``): p50 and p95; and the label table
alone after a save, kept against read whole. Before the label saves the process
freezes what it holds, as the WSGI entry point does (``labeling/wsgi.py``).
"""

from __future__ import annotations

import gc
import os
import pickle
import statistics
import time

import pytest
from django.db import connection
from django.template.base import Template
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling.exports.current_labels import current_labels, label_table
from labeling.models import AuditAction, AuditEvent, Claim, Label, LabelTableVersion, Reviewer, Role
from labeling.review.label_writes import label_save
from labeling.runs import labels_changed, project_labels_changed
from labeling.tables.versions import label_table_snapshot
from labeling.team.memberships import membership_set
from tests.bench.test_bench_review import BIG_ANSWERS, PLAIN_RENDER, bench_project, build_run, reference_ms

pytestmark = pytest.mark.bench

SLUG = "bench-team"
SMALL_RUNS = 9
SMALL_ANSWERS = 1_000
AUDIT_EVENTS = 50_000


@pytest.fixture(scope="module")
def team_run(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        started = time.perf_counter()
        project, lead, annotator, questions = bench_project(SLUG, member="bench-team-lead",
                                                            annotator="bench-team-importer")
        project.memberships.filter(reviewer=lead).update(role="lead")
        big = build_run(project, questions, "big", BIG_ANSWERS, annotator)
        for r in range(SMALL_RUNS):
            build_run(project, questions, f"small-{r}", SMALL_ANSWERS, annotator)
        Label.objects.filter(reviewer=annotator).delete()
        hana = Reviewer.objects.create(username="hana")  # a person: the reviewer dashboard lists her
        judge = Reviewer.objects.create(username="judge-a", kind="model")
        project.members.add(hana)
        cited = list(Claim.objects.filter(answer__run=big, citations__isnull=False).order_by("pk")
                     .values_list("pk", flat=True).distinct())
        other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
        labels = []
        for n, claim_id in enumerate(cited):
            human = "UNSUPPORTED" if n % 5 == 0 else "SUPPORTED"
            machine = other[human] if n % 9 == 0 else human
            for reviewer, value in ((hana, human), (judge, machine)):
                labels.append(Label(claim_id=claim_id, reviewer=reviewer, value=value, claim_revision=1,
                                    justification="partial: not what the passage says" if value == "UNSUPPORTED"
                                    else ""))
        Label.objects.bulk_create(labels, batch_size=10_000)
        AuditEvent.objects.bulk_create(
            [AuditEvent(action=AuditAction.LABEL, actor=lead, actor_name=lead.username, project=project, run=big,
                        run_name=big.name, claim_id=cited[n % len(cited)], target=f"q{n:05d} · claim 1",
                        detail={"value": "SUPPORTED"}) for n in range(AUDIT_EVENTS)], batch_size=10_000)
        # Two saved versions of the big run's label table (the versions page lists them, with their diff).
        label_table_snapshot(run=big, author=lead, note="before the prompt change")
        Label.objects.filter(claim_id=cited[1], reviewer=hana).update(value="UNSUPPORTED", justification="not so")
        label_table_snapshot(run=big, author=lead, note="after")
        print(f"\n[bench-team] built {Claim.objects.filter(answer__run__project=project).count()} claims, "
              f"{len(labels)} labels, {AUDIT_EVENTS} audit events in {time.perf_counter() - started:.1f} s "
              f"({connection.vendor})")
        del questions, labels
        gc.collect()
        yield {"project": project, "run": big, "lead": lead, "hana": hana, "cited": cited}
        Label.objects.filter(claim__answer__run__project=project).delete()
        LabelTableVersion.objects.filter(run__project=project).delete()
        project.delete()
        Reviewer.objects.filter(username__in=["bench-team-lead", "bench-team-importer", "hana", "judge-a",
                                              "bench-team-newcomer"]).delete()


def _time(client: Client, url: str, expect: str, project, write=None,
          repeats: int = 3) -> tuple[float, float, float, int]:
    """Server time (ms) of ``url``: p50 and p95 (the slowest under 20) of ``repeats`` GETs each right after a
    write moved every
    run's label state (cold: the figures are recomputed; ``write``, when given, is the write instead), p50
    of 5 GETs after that (warm: computed once per state), and the most queries one warm GET took."""
    cold = []
    for _ in range(repeats):
        if write is not None:
            write()
        else:
            project_labels_changed(project=project)
        started = time.perf_counter()
        response = client.get(url)
        cold.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    times, queries = [], []
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        queries.append(len(captured.captured_queries))
        assert response.status_code == 200
    assert expect in response.content.decode()
    p95 = statistics.quantiles(cold, n=20, method="inclusive")[18] if len(cold) >= 20 else max(cold)
    return statistics.median(cold), p95, statistics.median(times), max(queries)


@pytest.mark.django_db
def test_bench_team_pages_on_a_50k_claim_run(team_run, monkeypatch):
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)  # render as a server does (see test_bench_review)
    print(f"\n[bench-team] reference: 1M-addition loop {reference_ms():.1f} ms")
    client = Client()
    client.force_login(team_run["lead"])
    run = team_run["run"]
    in_run = {"project_slug": SLUG, "run_name": run.name}
    pages = [
        ("project summary, 10 runs (95k claims)", reverse("project_summary", kwargs={"project_slug": SLUG}),
         "small-8"),
        ("audit log, 50k events, first page", reverse("run_audit", kwargs=in_run), "· claim 1"),
        ("audit log, 50k events, page 500", reverse("run_audit", kwargs=in_run) + "?page=500", "· claim 1"),
        ("judges panel", reverse("run_judges", kwargs=in_run), "judge-a"),
        ("judge grading page, 40k claims", reverse("judge_grade", kwargs={**in_run, "judge_name": "judge-a"}),
         "judge-a"),
        ("agreement page, 40k cited claims", reverse("run_agreement", kwargs=in_run), "hana"),
        ("run's scatter, 10k answers", reverse("run_scatter", kwargs=in_run), "<svg"),
        ("project page", reverse("project_detail", kwargs={"project_slug": SLUG}), "small-8"),
        ("run overview", reverse("run_detail", kwargs=in_run), run.name),
        ("run summary fragment", reverse("run_summary", kwargs=in_run), "Coverage"),
        ("reviewer dashboard", reverse("run_dashboard", kwargs=in_run), "hana"),
        ("label table versions", reverse("version_list", kwargs=in_run), "before the prompt change"),
    ]
    for name, url, expect in pages:
        cold, slowest, warm, queries = _time(client, url, expect, team_run["project"])
        print(f"[bench-team] {name}: after a write p50 {cold:.0f} ms, then p50 {warm:.0f} ms, {queries} queries "
              f"({connection.vendor}, load average {os.getloadavg()[0]:.1f})")
    # What a lead meets while reviewers label: a label on the big run moves that run's row only.
    cold, slowest, warm, queries = _time(client, pages[0][1], pages[0][2], team_run["project"],
                                write=lambda: labels_changed(run=run))
    print(f"[bench-team] project summary, 10 runs, after a stamp without a claim on the 50k-claim run: p50 "
          f"{cold:.0f} ms, then p50 {warm:.0f} ms, {queries} queries ({connection.vendor}, load average "
          f"{os.getloadavg()[0]:.1f})")
    # A member's role changes: no figure reads roles, so no run's state moves (tests/test_figure_cache.py).
    roles = iter(range(10**6))
    newcomer = Reviewer.objects.create(username="bench-team-newcomer")

    def role() -> None:
        membership_set(project=team_run["project"], reviewer=newcomer,
                       role=Role.VIEWER if next(roles) % 2 else Role.REVIEWER)

    cold, slowest, warm, queries = _time(client, pages[0][1], pages[0][2], team_run["project"], write=role,
                                         repeats=10)
    print(f"[bench-team] project summary, 10 runs, after a member's role changes (no run's state moves): p50 "
          f"{cold:.0f} ms (slowest of 10 {slowest:.0f} ms), then p50 {warm:.0f} ms, {queries} queries "
          f"({connection.vendor}, load average {os.getloadavg()[0]:.1f})")
    # What a write that moves every run without a label costs (every row recomputed, the label tables kept):
    # no writer does that since roles and settings stopped moving the state; a question's gold does, with labels.
    cold, slowest, warm, queries = _time(
        client, pages[0][1], pages[0][2], team_run["project"], repeats=10,
        write=lambda: project_labels_changed(project=team_run["project"], labels=False))
    print(f"[bench-team] project summary, 10 runs, after every run's state moves without a label: p50 "
          f"{cold:.0f} ms (slowest of 10 {slowest:.0f} ms), then p50 {warm:.0f} ms, {queries} queries "
          f"({connection.vendor}, load average {os.getloadavg()[0]:.1f})")
    # The same after hana's label saves (the label service: its stamp names the claim, so the run's label
    # table is brought up to date from that claim alone, labeling.exports.current_labels).
    saves = iter(range(10**6))

    def label() -> None:
        n = next(saves)
        claim = Claim.objects.select_related("answer__run__project").get(pk=team_run["cited"][(n * 37) % 1000])
        current = (Label.objects.filter(claim=claim, reviewer=team_run["hana"], is_current=True)
                   .values_list("pk", "value").first())
        value = "SUPPORTED" if current is None or current[1] == "UNSUPPORTED" else "UNSUPPORTED"
        label_save(claim=claim, reviewer=team_run["hana"], value=value, justification="partial: not what it says",
                   base_revision=claim.revision, base_label_id=current[0] if current else None)

    # From here on the process is frozen as a server process is (labeling/wsgi.py: what it loaded at
    # start leaves the collector's full passes); the pages above were timed without it.
    from labeling.wsgi import freeze_long_lived
    print(f"[bench-team] froze {freeze_long_lived()} objects, as the WSGI entry point does")
    # The label table alone: brought up to date after a save, against a whole read.
    kept_ms, whole_ms = [], []
    for _ in range(10):
        label()
        started = time.perf_counter()
        current_labels(run)
        kept_ms.append((time.perf_counter() - started) * 1000)
        with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}):
            started = time.perf_counter()
            whole = current_labels(run)
            whole_ms.append((time.perf_counter() - started) * 1000)
    entry = pickle.dumps(label_table(run))
    started = time.perf_counter()
    pickle.loads(entry)
    print(f"[bench-team] the run's label table ({len(whole)} labels) after a label save: kept p50 "
          f"{statistics.median(kept_ms):.1f} ms, read whole p50 {statistics.median(whole_ms):.1f} ms; kept entry "
          f"{len(entry) / 2**20:.1f} MiB, unpickled in {(time.perf_counter() - started) * 1000:.1f} ms "
          f"({connection.vendor}, load average {os.getloadavg()[0]:.1f})")
    # Every page whose figures a label moves (the audit log, the judges panel and the run overview read none).
    for name, url, expect in [pages[0], *pages[4:8], *pages[9:]]:
        cold, slowest, warm, queries = _time(client, url, expect, team_run["project"], write=label, repeats=20)
        print(f"[bench-team] {name}, after a label save on the 50k-claim run: p50 {cold:.0f} ms (p95 of 20 "
              f"{slowest:.0f} ms), then p50 {warm:.0f} ms, {queries} queries ({connection.vendor}, load "
              f"average {os.getloadavg()[0]:.1f})")
