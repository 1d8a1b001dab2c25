"""One whole-number reader for every importer (labeling.importers.cells): ASCII digits only."""

from __future__ import annotations

import csv
import io
import json

import pytest

from labeling.importers.cells import CellError, whole_number
from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.importers.verdicts import read_verdicts
from tests.tables import row_counts

PASSAGES = json.dumps([{"id": "P1", "source": "m.md", "text": "It retries five times."}])
HEADER = ["question_id", "question", "run", "answer", "passages", "claim_index", "claim", "citations"]


@pytest.mark.parametrize("value", ["²", "٣", "１２", "+7", "-1", "7.5", "1e3", "0x1f", "1_000", "seven", True, 7.5, -2])
def test_whole_number_refuses_what_int_or_float_would_bend(value):
    with pytest.raises(CellError, match="whole number"):
        whole_number(value)


@pytest.mark.parametrize(("value", "number"), [("7", 7), (" 7 ", 7), ("007", 7), (7, 7), (7.0, 7), ("0", 0)])
def test_whole_number_reads_ascii_digits_and_integral_numbers(value, number):
    assert whole_number(value) == number


def test_whole_number_names_the_range():
    with pytest.raises(CellError, match=r"from 1 to 9, got 10"):
        whole_number("10", minimum=1, maximum=9)
    with pytest.raises(CellError, match=r"≥ 1, got 0"):
        whole_number(0, minimum=1)


@pytest.mark.django_db
@pytest.mark.parametrize("index", ["²", "٣"])
def test_answers_csv_with_a_non_ascii_claim_index_names_the_line(index):
    """Row 2 is the claim; before the one reader, ``"²".isdigit()`` let int() raise a bare ValueError."""
    project = project_for_import(slug="cells")
    out = io.StringIO()
    csv.writer(out).writerows([HEADER, ["q1", "How?", "r1", "It retries [P1].", PASSAGES, index, "It retries.", "P1"]])
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=out.getvalue().encode(), format="csv")
    assert row_counts() == before
    assert [(i.line, i.field) for i in failure.value.issues] == [(2, "claim_index")]
    assert f"expected a whole number, got {index!r}" in failure.value.issues[0].reason


def test_verdict_claim_index_in_arabic_indic_digits_is_not_claim_three():
    """``float("٣")`` is 3.0: the old reader matched the verdict to claim 3."""
    rows = "question_id,claim_index,label\nq1,٣,SUPPORTED\n".encode()
    verdicts = read_verdicts(rows, name="verdicts.csv", format="rows")
    assert verdicts.records == []
    assert [(i.line, i.field) for i in verdicts.issues] == [(2, "claim_index")]
