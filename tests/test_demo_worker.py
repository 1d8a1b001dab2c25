"""``manage.py demo`` serves with a task queue worker beside it (SPEC §4.4: the lead's
"Run a judge" button works in the demo), and stops it with the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.waiting import BOOT_SECONDS, REQUEST_SECONDS, until, wait_for


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

        def login_page() -> None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=REQUEST_SECONDS) as response:
                assert response.status == 200

        # Refused, reset or a read timeout while the server starts: "not yet" (tests/waiting.py).
        wait_for(login_page, what="the demo server answering /login/",
                 gone=lambda: demo.poll() is not None and f"the demo exited with status {demo.returncode}")
        assert _alive(worker)
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(timeout=BOOT_SECONDS)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait()
            raise AssertionError(f"the demo did not stop within {BOOT_SECONDS:g} s of SIGTERM") from None
    until(lambda: not _alive(worker), what="the worker stopping with the demo")
    # Nothing of its process group (qcluster's own workers) is left either.
    until(lambda: not _group_alive(worker), what="the worker's processes ending with the demo")


def test_the_demo_worker_is_manage_py_qcluster():
    from labeling.management.commands.demo import worker_command

    assert worker_command() == [sys.executable, str(REPO_ROOT / "manage.py"), "qcluster"]
