"""WSGI entry point for Citelab (gunicorn ``labeling.wsgi``, ``runserver``).

A server process keeps what it loads at start for as long as it lives: Django,
the URLconf and every view, and pandas and numpy, which every figure page
loads. :func:`freeze_long_lived` loads them now and moves them out of the
garbage collector's full passes (``gc.freeze``): on a 50k-claim run, one
request in eight or so after a label paid a full pass over the process's
objects, ~110 ms, which set the judge grading page's p95
(``tests/bench/test_bench_team_pages.py``; templates/docs/speed.md, round five).
Objects made by requests are collected as before. Every process, commands
included, has already frozen Django's start-up (``labeling.apps``); this adds
what a server keeps beyond it.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application


def freeze_long_lived() -> int:
    """Load pandas and numpy, collect, then freeze every object alive (``gc.freeze``):
    the full passes of the collector skip them from then on. Returns how many objects
    were frozen. Call it once a process has loaded what it keeps (here, at import)."""
    from scoring.lazy import np, pd

    pd.DataFrame, np.ndarray  # noqa: B018 (the first attribute read imports the library)
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
application = get_wsgi_application()
freeze_long_lived()
