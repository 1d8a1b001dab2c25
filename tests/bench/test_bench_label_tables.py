"""Benchmark: a 100k-claim label table to XLSX in ≤ 20 s with peak memory
≤ 500 MB, and the same workbook imported back (parse + validate every row)
in ≤ 30 s.

Run: ``pytest -m bench -s tests/bench/test_bench_label_tables.py`` (add
DATABASE_URL for PostgreSQL). Prints wall-clock and CPU seconds, the peak
resident set size of the process (absolute, ``/proc/self/statm`` sampled
every 20 ms) and its growth during the step, and the workbook size. Setting up
the 100k claims (an answers import) is not timed. The targets are checked on
CPU time: on a shared machine (developers running suites side by side) wall
time measures the neighbours as much as the export.
"""

from __future__ import annotations

import time

import pytest

from labeling.exports.label_table import label_table_frame
from labeling.importers.label_table import read_label_table
from labeling.importers.load import run_import
from labeling.models import Run
from labeling.tables.export import label_table_export
from labeling.tables.import_preview import label_table_import_preview
from labeling.tables.versions import label_table_snapshot
from tests.bench.answers_file import CLAIMS_PER_ANSWER, write_answers
from tests.bench.memory import RssPeak
from tests.factories import ProjectFactory, ReviewerFactory

ANSWERS = 16_667  # 100,002 claims


class Clock:
    """Wall-clock and CPU seconds of this process over a block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    def __str__(self) -> str:
        return f"{self.wall:.1f} s wall, {self.cpu:.1f} s CPU"


@pytest.mark.bench
@pytest.mark.django_db(transaction=True)
def test_bench_label_table_xlsx_export_and_import_100k(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    source = tmp_path / "answers.jsonl"
    write_answers(source, ANSWERS, spans_and_justifications=True)
    project = ProjectFactory(slug="bench-labels")
    run_import(project=project, source=source)
    run = Run.objects.select_related("project").get(project=project, name="bench")
    reviewer = ReviewerFactory(username="bench-reviewer")
    workbook = tmp_path / "labels.xlsx"

    with RssPeak() as frame_memory, Clock() as frame_time:
        rows = len(label_table_frame(run))
    with RssPeak() as export_memory, Clock() as export_time:
        with workbook.open("wb") as handle:
            label_table_export(run=run, fmt="xlsx", out=handle)
    with RssPeak() as import_memory, Clock() as import_time:
        with Clock() as parse_time:
            table_file = read_label_table(workbook.read_bytes(), format="xlsx")
        preview = label_table_import_preview(run=run, reviewer=reviewer, table_file=table_file)
    with RssPeak() as snapshot_memory, Clock() as snapshot_time:
        version = label_table_snapshot(run=run, note="bench")

    print(f"\nlabel table of {rows:,} claims (frame only): {frame_time}, {frame_memory.report()}")
    print(f"export XLSX (frame + 4 sheets): {export_time}, {workbook.stat().st_size / 2**20:.1f} MiB, "
          f"{export_memory.report()}")
    print(f"import XLSX back (parse {parse_time.cpu:.1f} s CPU + validate every row): {import_time}, "
          f"{import_memory.report()}")
    print(f"snapshot: {snapshot_time}, {version.file.size / 2**20:.1f} MiB canonical file, "
          f"{snapshot_memory.report()}")
    assert rows == ANSWERS * CLAIMS_PER_ANSWER
    assert preview.issues == [] and preview.rows == rows and preview.changes == []
    assert export_time.cpu <= 20, "100k claims must export to XLSX in at most 20 s"
    assert export_memory.peak <= 500 * 2**20, "exporting 100k claims must stay under 500 MB"
    assert import_time.cpu <= 30, "100k claims must import back in at most 30 s"
