"""A stand-in for one pass of ``manage.py qcluster`` in the tests: take the tasks a
django-q2 broker holds, run each as the cluster's worker does (the function named
by the task, its args and kwargs) and acknowledge it. The broker is real (the
database or Redis); only the worker process is replaced by this loop, so a test
sees what the queue carried."""

from __future__ import annotations

import pydoc


def run_queued_tasks(broker) -> int:
    """Run every task ``broker`` hands out now; how many ran."""
    from django_q.signing import SignedPackage

    ran = 0
    for task_id, payload in broker.dequeue() or []:
        task = SignedPackage.loads(payload)
        function = task["func"] if callable(task["func"]) else pydoc.locate(task["func"])
        function(*task["args"], **task["kwargs"])
        broker.acknowledge(task_id)
        ran += 1
    return ran
