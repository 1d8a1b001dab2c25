"""Label Studio's import of the benchmarks' answers files, timed side by side
with Citelab's (issue 24, target 4). Not part of any test run: Label Studio
lives in a virtualenv of its own, beside the project.

Set up once (PyPI only; nothing is downloaded at run time)::

    python3 -m venv /tmp/ls && /tmp/ls/bin/pip install label-studio==1.23.2 requests
    LABEL_STUDIO_BASE_DATA_DIR=/tmp/lsdata /tmp/ls/bin/label-studio start --no-browser --port 8089 \\
        --username bench@example.org --password benchpass123 &

then ``/tmp/ls/bin/python tests/bench/label_studio.py ANSWERS.jsonl [...]`` with
files from ``tests.bench.answers_file.write_answers``. For Label Studio on
PostgreSQL, start a second server on a database of its own and point the script
at it (``LABEL_STUDIO_URL``, default ``http://127.0.0.1:8089``)::

    createdb -h 127.0.0.1 -U postgres lsbench
    DJANGO_DB=default POSTGRE_NAME=lsbench POSTGRE_USER=postgres POSTGRE_PASSWORD= POSTGRE_HOST=127.0.0.1 \
        POSTGRE_PORT=5432 LABEL_STUDIO_BASE_DATA_DIR=/tmp/lsdata_pg /tmp/ls/bin/label-studio start --no-browser \
        --port 8090 --username bench@example.org --password benchpass123 &
    LABEL_STUDIO_URL=http://127.0.0.1:8090 /tmp/ls/bin/python tests/bench/label_studio.py ANSWERS.jsonl
 Label Studio 1.23 refuses
legacy tokens, so the script logs in as a browser does and calls the REST
API with the session. Each answer becomes one task whose ``data`` is the whole
line and whose one annotation holds each claim's label as a ``choices``
result: what Citelab stores from the same line (claims, citations, labels), as
Label Studio holds it. Printed per file: the seconds from the upload's start
to its response, and until the project counts every task and annotation,
with the load average. Taken on 2026-12-05 (SQLite, load 0.5–0.8): 1k answers
1.28–1.82 s, 10k 14.8–19.7 s (``templates/docs/speed.md``, round seven); on a
faster machine the same day, interleaved with Citelab's command: SQLite 1k
1.26–2.11 s, 10k 13.1–18.4 s; PostgreSQL 1k 1.76–2.66 s, 10k 20.6–21.2 s
(round eight).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import requests

SERVER = os.environ.get("LABEL_STUDIO_URL", "http://127.0.0.1:8089")
CONFIG = ('<View><Text name="answer" value="$answer"/><Choices name="label" toName="answer">'
          '<Choice value="SUPPORTED"/><Choice value="UNSUPPORTED"/><Choice value="UNCITED"/></Choices></View>')


def tasks_file(answers: Path) -> tuple[Path, int]:
    """The answers file as Label Studio tasks (JSON array) beside it, and how many."""
    tasks = []
    for line in answers.open():
        data = json.loads(line)
        results = [{"from_name": "label", "to_name": "answer", "type": "choices", "id": f"c{k}",
                    "value": {"choices": [claim["label"]]}} for k, claim in enumerate(data["claims"])]
        tasks.append({"data": data, "annotations": [{"result": results}]})
    path = answers.with_suffix(".label-studio.json")
    path.write_text(json.dumps(tasks))
    return path, len(tasks)


def session() -> tuple[requests.Session, dict[str, str]]:
    """A logged-in session and the headers its API calls need (CSRF)."""
    browser = requests.Session()
    page = browser.get(f"{SERVER}/user/login/")
    token = browser.cookies.get("csrftoken") or re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                                                          page.text).group(1)
    browser.post(f"{SERVER}/user/login/", data={"email": "bench@example.org", "password": "benchpass123",
                                                "csrfmiddlewaretoken": token},
                 headers={"Referer": f"{SERVER}/user/login/"}).raise_for_status()
    return browser, {"X-CSRFToken": browser.cookies.get("csrftoken"), "Referer": f"{SERVER}/"}


def time_import(browser: requests.Session, headers: dict[str, str], tasks: Path, count: int) -> tuple[float, float]:
    """Seconds to the upload's response, and until every task and annotation is counted (deadline 5 min)."""
    project = browser.post(f"{SERVER}/api/projects/", json={"title": f"bench {tasks.name}", "label_config": CONFIG},
                           headers=headers).json()["id"]
    started = time.perf_counter()
    with tasks.open("rb") as handle:
        upload = {"file": (tasks.name, handle, "application/json")}
        browser.post(f"{SERVER}/api/projects/{project}/import", files=upload, headers=headers).raise_for_status()
    answered = time.perf_counter() - started
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        info = browser.get(f"{SERVER}/api/projects/{project}/", headers=headers).json()
        if info.get("task_number") == count and info.get("total_annotations_number") == count:
            return answered, time.perf_counter() - started
        time.sleep(0.2)
    raise TimeoutError(f"project {project} did not count {count} tasks and annotations within 5 minutes")


def main(paths: list[str]) -> None:
    browser, headers = session()
    for name in paths:
        tasks, count = tasks_file(Path(name))
        load = os.getloadavg()[0]
        answered, complete = time_import(browser, headers, tasks, count)
        print(f"[label-studio] {count:,} tasks with annotations: response {answered:.2f} s, every task and "
              f"annotation counted {complete:.2f} s; load average {load:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
