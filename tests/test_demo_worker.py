"""``manage.py demo`` serves with a task queue worker beside it (issue 12: the lead's
"Run a judge" button works in the demo), and stops it with the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import REPO_ROOT


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Zombies still count for killpg: the group is alive if a member is not a zombie.
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def test_demo_starts_a_qcluster_worker_and_stops_it_with_the_server(tmp_path):
    port = _free_port()
    env = {**os.environ, "DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
           "CITELAB_MEDIA_ROOT": str(tmp_path / "media")}
    demo = subprocess.Popen([sys.executable, "manage.py", "demo", "--addrport", f"127.0.0.1:{port}"],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        worker = None
        for line in demo.stdout:
            if line.startswith("Task queue worker started (pid "):
                worker = int(line.split("(pid ")[1].split(";")[0])
            if line.startswith("Serving on"):
                break
        assert worker is not None, "the demo said nothing of a worker"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as response:
                    assert response.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline, "the demo server never answered"
                time.sleep(0.5)
        assert _alive(worker)
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=30)
    assert not _alive(worker)
    # Nothing of its process group (qcluster's own workers) is left either.
    deadline = time.monotonic() + 10
    while _group_alive(worker):
        assert time.monotonic() < deadline, "the worker's processes outlived the demo"
        time.sleep(0.2)


def test_the_demo_worker_is_manage_py_qcluster():
    from labeling.management.commands.demo import worker_command

    assert worker_command() == [sys.executable, str(REPO_ROOT / "manage.py"), "qcluster"]
