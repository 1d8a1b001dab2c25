"""Judge runs go through django-q2's task queue (SPEC §4.4): the database broker by
default (no extra server), Redis for teams (a real Redis at 127.0.0.1:6379, db 15).
``tests/task_worker.py`` plays the worker."""

from __future__ import annotations

import pytest

from labeling.judges.protocol import JudgeEndpoint
from labeling.judges.runs import judge_run_create, judge_run_enqueue
from labeling.models import JudgeRun, Label
from tests.judge_server import JudgeServer
from tests.task_worker import run_queued_tasks

REDIS_URL = "redis://127.0.0.1:6379/15"


def _queued(run, server) -> JudgeRun:
    return judge_run_create(run=run, reviewer_name="judge-q", endpoint=JudgeEndpoint(model="m",
                                                                                    base_url=server.base_url))


def test_database_broker_holds_the_judge_run_until_a_worker_takes_it(judging_run, settings):
    """Queued in the project's database (django_q's OrmQ table): nothing labeled until
    the worker runs it, then all 12 cited claims of the 6 answers."""
    from django_q.brokers import get_broker
    from django_q.models import OrmQ

    settings.CITELAB_TASKS_SYNC = False
    broker = get_broker()
    assert type(broker).__name__ == "ORM"
    with JudgeServer() as server:
        judge_run = _queued(judging_run, server)
        judge_run_enqueue(judge_run, broker=broker)
        assert OrmQ.objects.count() == 1
        assert JudgeRun.objects.get(pk=judge_run.pk).status == "queued"
        assert Label.objects.filter(reviewer__username="judge-q").count() == 0
        assert run_queued_tasks(broker) == 1
    judge_run.refresh_from_db()
    assert (judge_run.status, judge_run.answers_done, judge_run.claims_labeled) == ("done", 6, 12)
    assert OrmQ.objects.count() == 0


@pytest.fixture
def redis_broker(monkeypatch):
    """django-q2's Redis broker on db 15 of the machine's Redis, its list emptied before and after."""
    import redis
    from django_q.brokers.redis_broker import Redis
    from django_q.conf import Conf

    redis.from_url(REDIS_URL).ping()  # a Redis must be running (.ci/run starts one)
    monkeypatch.setattr(Conf, "REDIS", REDIS_URL)
    broker = Redis(list_key="citelab-judges-test")
    broker.purge_queue()
    yield broker
    broker.purge_queue()


def test_redis_broker_carries_the_judge_run_to_a_worker(judging_run, settings, redis_broker):
    settings.CITELAB_TASKS_SYNC = False
    with JudgeServer() as server:
        judge_run = _queued(judging_run, server)
        judge_run_enqueue(judge_run, broker=redis_broker)
        assert redis_broker.queue_size() == 1
        assert Label.objects.filter(reviewer__username="judge-q").count() == 0
        assert run_queued_tasks(redis_broker) == 1
    judge_run.refresh_from_db()
    assert (judge_run.status, judge_run.claims_labeled) == ("done", 12)
    assert redis_broker.queue_size() == 0
