"""Benchmark of the label table XLSX export against a bare openpyxl dump of the same cells.

Run: ``pytest -m bench -s tests/bench/test_bench_xlsx_export.py`` (add DATABASE_URL
for PostgreSQL). Runs of 8,334 and 16,667 answers (50,004 and 100,002 claims) come
from the benchmarks' one generator (``tests.bench.answers_file``), imported
untimed. Printed for each (targets of SPEC §7: 50k rows ≤ 4 s, 100k rows ≤ 8 s,
within 2× of the floor):

- the export as a download does it (``label_table_export``: the label table from
  the database, its metrics, the passages, the four sheets with styles, the
  drop-down, the colours and the formula-safe text cells), wall and CPU seconds,
  and the two halves: building the frames, writing the workbook;
- the floor in the same run: the very same cell values (all four sheets) appended
  as plain values to an openpyxl write-only workbook and saved — no styles, no
  checks, nothing read from the database.
"""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime

import pytest
from openpyxl import Workbook, load_workbook

from labeling.exports.label_table import LABEL_TABLE_COLUMNS, label_table_frame, passages_frame, table_claim_metrics
from labeling.exports.xlsx import WorkbookInfo, write_label_workbook
from labeling.exports.xlsx_layout import ANSWER_COLUMNS as _ANSWER_COLUMNS
from labeling.importers.load import run_import
from labeling.models import Run
from labeling.tables.export import label_table_export
from tests.bench.answers_file import CLAIMS_PER_ANSWER, write_answers
from tests.factories import ProjectFactory

TARGET_SECONDS = {8_334: 4.0, 16_667: 8.0}


class Clock:
    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def floor_dump(table, metrics, passages) -> tuple[bytes, Clock]:
    """The export's cells as plain values in a bare write-only workbook (values prepared untimed)."""
    labels = [list(LABEL_TABLE_COLUMNS), *(list(row) for row in zip(
        *(table[c].tolist() for c in LABEL_TABLE_COLUMNS), strict=True))]
    per_answer = metrics.per_answer
    answers = [_ANSWER_COLUMNS, *([*row] for row in zip(
        *(per_answer[c].tolist() for c in ("question_id", "answer_id", "claims", "cited", "labeled_cited",
                                           "supported", "unsupported", "pending")), strict=True))]
    passage_rows = [list(passages.columns), *(list(row) for row in passages.itertuples(index=False))]
    out = io.BytesIO()
    with Clock() as clock:
        workbook = Workbook(write_only=True)
        for title, rows in (("Labels", labels), ("Answers", answers), ("Passages", passage_rows)):
            sheet = workbook.create_sheet(title)
            for row in rows:
                sheet.append(row)
        workbook.save(out)
    return out.getvalue(), clock


@pytest.mark.bench
@pytest.mark.django_db(transaction=True)
def test_bench_xlsx_export_against_a_bare_openpyxl_dump(tmp_path):
    lines = []
    for answers in (8_334, 16_667):
        source = tmp_path / f"answers_{answers}.jsonl"
        write_answers(source, answers, spans_and_justifications=True)
        project = ProjectFactory(slug=f"bench-xlsx-{answers}")
        run_import(project=project, source=source)
        run = Run.objects.select_related("project").get(project=project, name="bench")
        load = os.getloadavg()[0]

        out = io.BytesIO()
        with Clock() as export:
            label_table_export(run=run, fmt="xlsx", out=out)
        with Clock() as frames:
            table = label_table_frame(run)
            metrics = table_claim_metrics(table)
            passages = passages_frame(run)
        info = WorkbookInfo(project=project.slug, run=run.name, version=None, sha256=None, reviewer=None,
                            exported_at=datetime.now(UTC))
        with Clock() as writing:
            write_label_workbook(io.BytesIO(), table=table, metrics=metrics, passages=passages, info=info)
        floor_bytes, floor = floor_dump(table, metrics, passages)

        workbook = load_workbook(io.BytesIO(out.getvalue()), read_only=True)
        assert workbook.sheetnames == ["Labels", "Answers", "Summary", "Passages"]
        assert workbook["Labels"].max_row == answers * CLAIMS_PER_ANSWER + 1
        target = TARGET_SECONDS[answers]
        lines.append(
            f"[bench-xlsx] {answers * CLAIMS_PER_ANSWER:,} rows: export {export.wall:.2f} s wall / {export.cpu:.2f} s "
            f"CPU (target {target:.0f} s; frames {frames.cpu:.2f} s CPU + workbook {writing.cpu:.2f} s CPU), "
            f"{len(out.getvalue()) / 2**20:.1f} MiB; floor (bare openpyxl write-only dump of the same cells) "
            f"{floor.wall:.2f} s wall / {floor.cpu:.2f} s CPU, {len(floor_bytes) / 2**20:.1f} MiB: export = "
            f"{export.cpu / floor.cpu:.1f}x the floor in CPU (target 2x); load average {load:.1f}")
    print()
    print("\n".join(lines))
