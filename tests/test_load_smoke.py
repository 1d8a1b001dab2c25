"""The load test script (``tests/bench/load.py``) keeps working: a few seconds of
two simulated reviewers against gunicorn on SQLite. Its figures are not checked
here (benchmarks print them, see templates/docs/speed.md); what it must always
report is checked: no error, no lost label, no claim labeled by both reviewers (the
queue's leases, overlap 1), and labels really saved: each reviewer makes at least one
label step (``--min-steps 1``) however long a busy machine takes to serve the first page."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_load_script_labels_through_gunicorn_and_loses_nothing(tmp_path):
    out = tmp_path / "load.json"
    finished = subprocess.run(
        [sys.executable, "-m", "tests.bench.load", "--database", "sqlite", "--reviewers", "2", "--duration", "3",
         "--answers", "40", "--port", str(free_port()), "--json", str(out), "--min-steps", "1"],
        # A bound on a hung run, not a speed check: at load 8 setup and gunicorn's boot take minutes.
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    result = json.loads(out.read_text())
    # 40 answers × 6 claims, of which 4 per answer cited (tests/bench/answers_file.py).
    assert result["claims"] == 240
    assert (result["errors"], result["lost_labels"], result["claims_over_overlap"]) == (0, 0, 0)
    assert result["labels_acknowledged"] > 0
    # Every label save was acknowledged: one label step per save, each with its timing.
    assert result["by_kind_ms"]["label save"]["n"] == result["label_step_ms"]["n"] == result["labels_acknowledged"]
    assert result["by_kind_ms"]["login"]["n"] == 2
    assert "[load] errors 0" in finished.stdout
