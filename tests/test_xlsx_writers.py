"""The label table workbook's two writers (xlsxturbo, and openpyxl as the
fallback) make the same workbook: every sheet's cells (value, type, quote
prefix, wrap, number format), widths, frozen header, autofilter, drop-down and
label colours; the fallback is taken when xlsxturbo is missing or refuses."""

from __future__ import annotations

import io
import logging
import sys
from datetime import UTC, datetime

import pytest
from openpyxl import load_workbook

from labeling.exports.label_table import label_table_frame, passages_frame, table_claim_metrics
from labeling.exports.xlsx import WorkbookInfo, write_label_workbook
from labeling.exports.xlsx_openpyxl import write_openpyxl
from labeling.exports.xlsx_turbo import _excel_width, _letter, xlsxturbo_bytes
from labeling.models import Label, Passage, Run
from tests.conftest import FIXTURES_DIR

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
HOSTILE_JUSTIFICATIONS = {1: '=HYPERLINK("http://x","y")', 2: "-partly\r\nsecond line", 3: "bell\x07 @here",
                          4: "42", 5: ""}


@pytest.fixture
def seed_frames(db, settings, tmp_path):
    """The seed's 5 claims with formula-like, numeric-looking and control-character
    justifications, a 40,000-character passage and a question id starting with '='."""
    from labeling.importers.load import project_for_import, run_import

    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    run = Run.objects.select_related("project").get(project=project, name="seed-coverage-support")
    for index, text in HOSTILE_JUSTIFICATIONS.items():
        Label.objects.filter(claim__answer__run=run, claim__index=index, is_current=True).update(justification=text)
    Passage.objects.filter(answer__run=run, passage_id="P1").update(text="p" * 40_000)
    table = label_table_frame(run)
    table.loc[0, "question_id"] = "=1+1"
    info = WorkbookInfo(project="seed", run=run.name, version=None, sha256=None, reviewer=None,
                        exported_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    return {"table": table, "metrics": table_claim_metrics(table), "passages": passages_frame(run), "info": info}


def _number(value):
    """A float to 15 significant digits: rust_xlsxwriter writes 16 (as Excel and
    XlsxWriter do), openpyxl the shortest repr (up to 17), e.g. an interval bound
    0.23072428127601285 comes back as 0.2307242812760129."""
    return float(f"{value:.15g}") if isinstance(value, float) else value


def _sheet_facts(data: bytes) -> dict:
    workbook = load_workbook(io.BytesIO(data))
    facts = {}
    for sheet in workbook:
        facts[sheet.title] = {
            # An empty cell is compared by its (absent) value alone: xlsxturbo gives
            # blanks their column's look, openpyxl writes no cell.
            "cells": [[(_number(cell.value), cell.data_type, cell.quotePrefix, bool(cell.alignment.wrap_text),
                        cell.number_format) if cell.value is not None else None for cell in row]
                      for row in sheet.iter_rows()],
            # Colours as RRGGBB: openpyxl writes alpha 00, rust_xlsxwriter FF (Excel ignores it).
            "header": [(cell.font.b, cell.font.color.rgb[-6:], cell.fill.fgColor.rgb[-6:]) for cell in sheet[1]],
            # Per column: a writer may store neighbours of one width as one range.
            "widths": {column: dimension.width for dimension in sheet.column_dimensions.values()
                       if dimension.width for column in range(dimension.min, dimension.max + 1)},
            "freeze": sheet.freeze_panes,
            "filter": sheet.auto_filter.ref,
            "validations": [(v.type, v.formula1, str(v.sqref), v.showErrorMessage, v.errorTitle, v.error)
                            for v in sheet.data_validations.dataValidation],
            "colours": sorted((str(cf.sqref), rule.operator, rule.formula[0], rule.dxf.font.color.rgb[-6:],
                               rule.dxf.fill.bgColor.rgb[-6:]) for cf in sheet.conditional_formatting
                              for rule in cf.rules),
        }
    return facts


def test_xlsxturbo_and_openpyxl_write_the_same_workbook(seed_frames):
    fallback = io.BytesIO()
    write_openpyxl(fallback, **seed_frames)

    fast, slow = _sheet_facts(xlsxturbo_bytes(**seed_frames)), _sheet_facts(fallback.getvalue())

    assert list(fast) == list(slow) == ["Labels", "Answers", "Summary", "Passages"]
    for title in fast:
        assert fast[title] == slow[title], title
    labels = {row[0][0]: row for row in zip(*fast["Labels"]["cells"], strict=True)}  # by header: the column
    assert labels["question_id"][1] == ("=1+1", "s", True, False, "General")
    assert labels["justification"][1:] == (
        ('=HYPERLINK("http://x","y")', "s", True, True, "General"),
        ("-partly\nsecond line", "s", True, True, "General"),
        ("bell @here", "s", False, True, "General"),
        ("42", "s", False, True, "General"),  # a number's digits stay text
        None,  # "" is an empty cell
    )
    assert labels["claim_index"][1:] == tuple((k, "n", False, False, "General") for k in range(1, 6))
    assert fast["Labels"]["widths"][5] == 60  # claim, column E and fast["Labels"]["filter"] == "A1:R6"
    assert fast["Labels"]["validations"] == [("list", '"SUPPORTED,UNSUPPORTED,UNCITED"', "I2:I6", True,
                                              "Unknown label",
                                              "Choose SUPPORTED, UNSUPPORTED or UNCITED (or leave blank).")]
    assert [colour[2:] for colour in fast["Labels"]["colours"]] == [
        ('"SUPPORTED"', "1F8A4C", "E3F4EA"), ('"UNCITED"', "6B7280", "EEF0F3"),
        ('"UNSUPPORTED"', "B4372F", "FBE7E5")]
    passage = {row[0][0]: row for row in zip(*fast["Passages"]["cells"], strict=True)}["text"]
    assert len(passage[1][0]) == 32_767 and passage[1][0].endswith("…")
    summary = {row[0][0]: row[1] for row in fast["Summary"]["cells"][1:]}
    assert summary["support (pooled)"] == (0.6, "n", False, False, "0.00")  # 3/5, the 0.00 format
    assert summary["exported at (UTC)"][0] == "2025-01-02 03:04:05"


def test_openpyxl_writes_the_workbook_when_xlsxturbo_is_not_installed(seed_frames, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "xlsxturbo", None)  # `import xlsxturbo` raises ImportError
    out = io.BytesIO()

    with caplog.at_level(logging.INFO, logger="labeling.exports.xlsx"):
        write_label_workbook(out, **seed_frames)

    assert "xlsxturbo is not installed: writing the workbook with openpyxl" in caplog.text
    monkeypatch.delitem(sys.modules, "xlsxturbo")
    assert _sheet_facts(out.getvalue()) == _sheet_facts(xlsxturbo_bytes(**seed_frames))


def test_openpyxl_takes_over_when_xlsxturbo_refuses_and_out_holds_one_workbook(seed_frames, monkeypatch, caplog):
    import xlsxturbo

    def refuse(*args, **kwargs):
        raise xlsxturbo.ConfigurationError("no")

    monkeypatch.setattr(xlsxturbo, "dfs_to_xlsx", refuse)
    out = io.BytesIO()

    write_label_workbook(out, **seed_frames)

    assert "xlsxturbo refused the workbook (no): writing it with openpyxl" in caplog.text
    assert load_workbook(io.BytesIO(out.getvalue())).sheetnames == ["Labels", "Answers", "Summary", "Passages"]


def test_an_empty_label_table_still_gets_its_sheets(seed_frames):
    frames = seed_frames | {"table": seed_frames["table"].iloc[0:0]}

    facts = _sheet_facts(xlsxturbo_bytes(**frames))

    assert [row[0] for row in facts["Labels"]["cells"]][0][0] == "run"
    assert len(facts["Labels"]["cells"]) == 1


def test_widths_and_column_letters_match_what_openpyxl_writes():
    """rust_xlsxwriter stores trunc((w·7 + 5)/7·256)/256 for a width w: asking for
    (60·7 − 5 + 0.01)/7 = 59.2871… stores trunc(15360.36)/256 = 60."""
    for stored in (8, 9, 10, 12, 13, 14, 15, 16, 18, 20, 21, 22, 34, 40, 45, 54, 60, 68, 100):
        asked = _excel_width(stored)
        assert int((asked * 7 + 5) / 7 * 256) / 256 == stored
    assert [_letter(n) for n in (0, 8, 17, 25, 26, 27, 701, 702)] == ["A", "I", "R", "Z", "AA", "AB", "ZZ", "AAA"]
