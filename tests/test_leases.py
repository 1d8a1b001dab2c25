"""Claim leases (SPEC §7): the queue reserves the claim it hands a reviewer,
so reviewers working at once get different claims and a claim's overlap counts
its labels plus the unexpired leases of other reviewers. Today's main handed
every reviewer the first open claim of the run: six reviewers on an overlap-2
run labeled the same claims, 26 (PostgreSQL) / 34 (SQLite) of them six times.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Q
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labeling.models import Claim, ClaimLease, Label, Membership, Reviewer
from labeling.review import label_writes, queue
from labeling.team.memberships import run_assign, run_settings_set
from tests.bench.load import form_of
from tests.factories import ProjectFactory, ReviewerFactory
from tests.test_projects_pages import bulk_run
from tests.waiting import BOOT_SECONDS


def _team(answers: int, names: tuple[str, ...]):
    """Project ``lease``, run ``r`` of ``answers`` answers × (claim 1 cited, claim 2 cited, claim 3
    uncited), reviewers ``names``, viewer ``vic``. Returns (run, cited claim ids in queue order, people)."""
    project = ProjectFactory(slug="lease")
    run = bulk_run(project, "r", answers=answers)
    people = {}
    for name in names:
        people[name] = ReviewerFactory(username=name)
        Membership.objects.create(project=project, reviewer=people[name], role="reviewer")
    people["vic"] = ReviewerFactory(username="vic")
    Membership.objects.create(project=project, reviewer=people["vic"], role="viewer")
    cited = list(Claim.objects.filter(answer__run=run, index__lt=3).order_by("answer__question_key", "index")
                 .values_list("pk", flat=True))
    return run, cited, people


def _handed(run, reviewer, after=None) -> int | None:
    claim = queue.next_unlabeled_claim(run=run, reviewer=reviewer, after=after, lease=True)
    return claim.pk if claim is not None else None


def _leases(run) -> dict[str, int]:
    return dict(ClaimLease.objects.filter(run=run).values_list("reviewer__username", "claim_id"))


def _label(reviewer, claim_id: int) -> None:
    label_writes.label_save(claim=Claim.objects.select_related("answer__run__project").get(pk=claim_id),
                        reviewer=reviewer, value="SUPPORTED", justification="", base_revision=1, base_label_id=None)


@pytest.mark.django_db
def test_reviewers_starting_at_once_are_handed_different_claims_and_a_label_ends_the_lease():
    """overlap 1, cited claims c0 c1 c2 c3. ann, bob, cay ask in turn: c0, c1, c2 (before: c0
    three times). ann's label on c0 replaces her lease; dan then gets c3, and nobody is handed
    c0 again."""
    run, (c0, c1, c2, c3), p = _team(2, ("ann", "bob", "cay", "dan"))

    handed = [_handed(run, p[name]) for name in ("ann", "bob", "cay")]
    assert handed == [c0, c1, c2]
    assert _leases(run) == {"ann": c0, "bob": c1, "cay": c2}
    _label(p["ann"], c0)
    assert _leases(run) == {"bob": c1, "cay": c2}
    assert _handed(run, p["dan"]) == c3
    assert _handed(run, p["ann"]) is None  # c1, c2, c3 leased by others, c0 labeled


@pytest.mark.django_db
def test_overlap_counts_labels_plus_the_leases_of_others():
    """overlap 2: ann and bob are both handed c0 (two places), cay gets c1. ann labels c0:
    1 label + bob's lease = 2, so c0 stays out of cay's queue; bob's own lease never
    keeps c0 from him."""
    run, (c0, c1, *_rest), p = _team(2, ("ann", "bob", "cay"))
    run_settings_set(run=run, overlap=2)

    assert [_handed(run, p[name]) for name in ("ann", "bob", "cay")] == [c0, c0, c1]
    _label(p["ann"], c0)
    assert c0 not in queue.unlabeled_claims(p["cay"], run).values_list("pk", flat=True)
    assert c0 in queue.unlabeled_claims(p["bob"], run).values_list("pk", flat=True)
    assert queue.lease_take(run=run, reviewer=p["cay"], claim=Claim.objects.get(pk=c0)) is False
    assert _leases(run) == {"bob": c0, "cay": c1}


@pytest.mark.django_db
def test_a_lease_lasts_the_setting_moves_on_a_skip_and_lapses_at_its_expiry(settings):
    """CITELAB_LEASE_SECONDS = 120: ann's lease on c0 ends 120 s after it was taken. Skipping
    (n: the next claim after c0) moves it to c1, so bob may have c0. cay's lease on c2 past its
    expiry no longer holds c2: dan is handed it."""
    settings.CITELAB_LEASE_SECONDS = 120
    run, (c0, c1, c2, _c3), p = _team(2, ("ann", "bob", "cay", "dan"))
    before = timezone.now()
    assert _handed(run, p["ann"]) == c0
    lease = ClaimLease.objects.get(run=run, reviewer=p["ann"])
    assert timedelta(seconds=120) <= lease.expires_at - before <= timedelta(seconds=120) + (timezone.now() - before)

    assert _handed(run, p["ann"], after=Claim.objects.get(pk=c0)) == c1
    assert _leases(run) == {"ann": c1}
    assert _handed(run, p["bob"]) == c0
    assert _handed(run, p["cay"]) == c2
    ClaimLease.objects.filter(reviewer=p["cay"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _handed(run, p["dan"]) == c2


@pytest.mark.django_db
def test_queue_order_assignments_and_viewers_hold_with_leases(client):
    """Only assigned reviewers are handed claims (and leased them); a viewer opening an answer
    leases nothing; an assigned reviewer opening an answer without a claim is handed its first
    free one (c0 is ann's, so bob's page opens on c1)."""
    run, (c0, c1, *_rest), p = _team(2, ("ann", "bob", "cay"))
    run_assign(run=run, reviewers=[p["ann"], p["bob"]])
    assert _handed(run, p["cay"]) is None
    assert _handed(run, p["ann"]) == c0
    answer_url = reverse("answer_review", args=["lease", "r", Claim.objects.get(pk=c0).answer_id])
    client.force_login(p["vic"])
    assert client.get(answer_url).status_code == 200
    assert _leases(run) == {"ann": c0}
    client.force_login(p["bob"])
    page = client.get(answer_url).content.decode()
    assert f'data-claim="{c1}"' in page
    assert _leases(run) == {"ann": c0, "bob": c1}


HX = {"HTTP_HX_REQUEST": "true"}
REVIEWERS = 6
OVERLAP = 2
ANSWERS = 12  # × 2 cited claims = 24 claims, 48 labels to give


@pytest.mark.django_db(transaction=True)
def test_six_reviewers_at_once_on_an_overlap_2_run_give_each_claim_exactly_two_labels():
    """Six reviewers (threads, each its own client and database connection) start together
    and label as the page does (Start labeling, then each save's next claim) until their
    queue is empty. 24 cited claims × overlap 2 = 48 labels: every claim gets exactly 2 (no
    claim more, none wasted, none missing) and every reviewer labels some. Before: every
    reviewer was handed the same first claims."""
    names = tuple(f"rev{n}" for n in range(1, REVIEWERS + 1))
    run, cited, _people = _team(ANSWERS, names)
    run_settings_set(run=run, overlap=OVERLAP)
    start = threading.Barrier(REVIEWERS)
    errors: list[str] = []
    labeled: dict[str, list[int]] = {name: [] for name in names}

    def reviewer(name: str) -> None:
        try:
            client = Client()
            client.force_login(Reviewer.objects.get(username=name))
            start.wait(timeout=BOOT_SECONDS)
            _label_until_done(client, name, labeled[name], random.Random(name))
        except Exception as exc:  # reported by the test, not lost in the thread
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=reviewer, args=(name,), name=name) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=BOOT_SECONDS * 3)
    assert not any(thread.is_alive() for thread in threads), "a reviewer thread never finished"
    assert errors == []

    per_claim = Counter(dict(Claim.objects.filter(pk__in=cited).annotate(
        n=Count("labels", filter=Q(labels__is_current=True))).values_list("pk", "n")))
    per_reviewer = {name: len(claims) for name, claims in labeled.items()}
    print(f"\n{connection.vendor}: labels per reviewer {per_reviewer}")
    assert Counter(per_claim.values()) == {OVERLAP: ANSWERS * 2}
    assert Label.objects.filter(is_current=True).count() == sum(per_reviewer.values()) == ANSWERS * 2 * OVERLAP
    assert all(count >= 1 for count in per_reviewer.values()), per_reviewer
    assert not ClaimLease.objects.exists()  # every claim handed out was labeled, which ended its lease


def _label_until_done(client: Client, name: str, mine: list[int], rng: random.Random) -> None:
    """Label as the review page does until Start labeling says the queue is empty; every
    claim the server hands out is labeled SUPPORTED. A 503 (SQLite busy) is retried."""
    start_url = reverse("run_next", args=["lease", "r"])
    form = None
    for _ in range(200):  # a bound on a runaway loop: 48 labels need ~10 steps each
        if form is None:
            response = client.get(start_url)
            if "/answers/" not in response.get("Location", ""):
                return  # back on the run page: nothing left in this reviewer's queue
            form = form_of(client.get(response["Location"]).content.decode())
        url, fields = form
        if int(fields["claim"]) in mine:
            form = None  # the page stayed on the claim just saved: ask the queue
            continue
        body = {**fields, "value": "SUPPORTED", "justification": ""}
        response = client.post(url, body, **HX)
        while response.status_code == 503:
            time.sleep(rng.uniform(0.05, 0.2))
            response = client.post(url, body, **HX)
        assert response.status_code == 200, (response.status_code, response.content[:300])
        html = response.content.decode()
        assert "Saved SUPPORTED on claim" in html, html[:300]
        mine.append(int(fields["claim"]))
        form = form_of(html) if re.search(r'id="label-form"', html) else None
    raise AssertionError(f"{name} was still labeling after 200 steps")


@pytest.mark.django_db
def test_a_backup_leaves_leases_out_and_a_restore_starts_with_none(settings, tmp_path):
    """A lease is a reservation of minutes, not data: the archive of a project with one
    held has no lease table, and the restored project has no lease."""
    import io
    import json
    import zipfile

    from django.core.management import call_command

    settings.MEDIA_ROOT = tmp_path / "media"
    run, (c0, *_rest), p = _team(1, ("ann",))
    assert _handed(run, p["ann"]) == c0
    archive = tmp_path / "lease.zip"
    call_command("export_project", "lease", str(archive), stdout=io.StringIO())
    with zipfile.ZipFile(archive) as zipped:
        manifest = json.loads(zipped.read("manifest.json"))
        names = zipped.namelist()
    run.project.delete()
    call_command("import_project", str(archive), stdout=io.StringIO())

    assert "labeling.claim" in manifest["models"] and "labeling.claimlease" not in manifest["models"]
    assert not any("claimlease" in name for name in names)
    assert Claim.objects.filter(pk=c0).exists() and not ClaimLease.objects.exists()


@pytest.mark.django_db
def test_a_claim_merged_away_after_the_queue_read_it_is_not_leased():
    """The queue read c1 as a candidate; a merge then deleted it: the take answers False
    and writes nothing (it raised a foreign-key IntegrityError, a 500, on SQLite before)."""
    run, (c0, c1, *_rest), p = _team(1, ("ann",))
    candidate = Claim.objects.get(pk=c1)
    Claim.objects.filter(pk=c1).delete()
    assert queue.lease_take(run=run, reviewer=p["ann"], claim=candidate) is False
    assert _leases(run) == {}
    assert _handed(run, p["ann"]) == c0
