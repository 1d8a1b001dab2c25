"""The SPEC §3 label rule and the label values have one home
(``scoring.labels``): the browser, the answers import, the label table import
and scoring refuse the same labels for the same reason."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.exceptions import ValidationError

from labeling.exports import xlsx
from labeling.importers import answer_labels, answers_jsonl, label_table
from labeling.importers.label_table import read_label_table
from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import LabelValue
from labeling.review.label_writes import label_save
from labeling.tables.import_preview import label_table_import_preview
from scoring.claims import claim_metrics
from scoring.labels import LABEL_VALUES, label_codes, label_problem, label_rule_breaks
from tests.factories import CitationFactory, ClaimFactory, ProjectFactory, ReviewerFactory, RunFactory

UNCITED_ON_CITED = "UNCITED on a claim with 1 citation(s): a cited claim is SUPPORTED or UNSUPPORTED"
SUPPORTED_ON_UNCITED = ("SUPPORTED on a claim without citations: a claim that cites nothing is UNCITED "
                        "automatically")
NO_JUSTIFICATION = "a justification is required for UNSUPPORTED"


def test_label_values_have_one_home():
    assert tuple(LabelValue.values) == LABEL_VALUES == ("SUPPORTED", "UNSUPPORTED", "UNCITED")
    assert answer_labels.LABEL_VALUES is label_table.LABEL_VALUES is xlsx.LABEL_CHOICES is LABEL_VALUES
    assert not hasattr(answers_jsonl, "LABEL_VALUES")  # it asks scoring.labels.label_problem


@pytest.mark.parametrize(
    ("value", "n_citations", "justification", "supported_needs", "expected"),
    [
        ("UNCITED", 1, "", False, UNCITED_ON_CITED),
        ("UNCITED", 0, "", False, None),
        ("SUPPORTED", 0, "", False, SUPPORTED_ON_UNCITED),
        ("UNSUPPORTED", 0, "why", False,
         "UNSUPPORTED on a claim without citations: a claim that cites nothing is UNCITED automatically"),
        ("UNSUPPORTED", 2, "  ", False, NO_JUSTIFICATION),
        ("UNSUPPORTED", 2, None, False, None),  # an imported dataset keeps its labels as given
        ("UNSUPPORTED", 2, "the passage says linear", False, None),
        ("SUPPORTED", 1, "", False, None),
        ("SUPPORTED", 1, "", True, "a justification is required for SUPPORTED in this project"),
    ],
)
def test_label_problem(value, n_citations, justification, supported_needs, expected):
    problem = label_problem(value, n_citations=n_citations, justification=justification,
                            supported_needs_justification=supported_needs)
    assert (problem.message if problem else None) == expected


def test_the_vectorized_rule_is_the_same_rule():
    """Every (label or none, cited or not) combination: scoring's frame check
    agrees with label_problem."""
    values = pd.Series([*LABEL_VALUES, None] * 2, dtype=object)
    cited = np.array([True] * 4 + [False] * 4)

    breaks = label_rule_breaks(label_codes(values, allow_null=True), cited)

    expected = [v is not None and label_problem(v, n_citations=int(c)) is not None
                for v, c in zip(values, cited, strict=True)]
    assert breaks.tolist() == expected == [False, False, True, False, True, True, False, False]


@pytest.fixture
def claims(db):
    """A claim with one citation and a claim without any, in project ``rule``."""
    run = RunFactory(project=ProjectFactory(slug="rule"), name="r")
    cited = ClaimFactory(answer__run=run, index=1, text="Retries use exponential backoff.")
    CitationFactory(claim=cited)
    uncited = ClaimFactory(answer=cited.answer, index=2, text="Backups are kept for a month.")
    return cited, uncited


def _browser_reason(claim, value: str, justification: str = "") -> str:
    with pytest.raises(ValidationError) as refused:
        label_save(claim=claim, reviewer=ReviewerFactory(username="alice"), value=value,
                   justification=justification, base_revision=1, base_label_id=None)
    return refused.value.messages[0]


def _label_table_reason(run, claim, value: str, justification: str = "") -> str:
    row = {"claim_id": claim.pk, "label": value, "justification": justification}
    file = read_label_table(json.dumps(row).encode(), format="jsonl")
    preview = label_table_import_preview(run=run, reviewer=ReviewerFactory(username="alice"), table_file=file)
    [issue] = preview.issues
    return issue.reason


def _answers_file_reason(claim_label: str, citations: list) -> str:
    line = {"question_id": "q9", "question": "Q?", "run": "import", "answer": "A.",
            "passages": [{"id": "P1", "source": "s", "text": "t"}],
            "claims": [{"text": "A.", "citations": citations, "label": claim_label}]}
    with pytest.raises(ImportFailed) as failed:
        run_import(project=ProjectFactory(slug="rule"), source=io.BytesIO(json.dumps(line).encode() + b"\n"))
    [issue] = failed.value.issues
    return issue.reason


def _scoring_refuses(label: str, n_citations: int) -> bool:
    frame = pd.DataFrame({"answer_id": [1], "question_id": ["q"], "claim_index": [1],
                          "n_citations": [n_citations], "label": pd.Series([label], dtype=object)})
    try:
        claim_metrics(frame)
    except ValueError as exc:
        return "break 'UNCITED if and only if no citation'" in str(exc)
    return False


@pytest.mark.parametrize(
    ("position", "value", "citations", "reason"),
    [(0, "UNCITED", [{"passage_id": "P1"}], UNCITED_ON_CITED), (1, "SUPPORTED", [], SUPPORTED_ON_UNCITED)],
    ids=["uncited-on-cited", "supported-on-uncited"],
)
def test_a_label_against_the_citations_is_refused_everywhere_for_the_same_reason(claims, position, value,
                                                                                 citations, reason):
    claim = claims[position]

    assert _browser_reason(claim, value) == f"Claim {claim.index}: {reason}."
    assert _label_table_reason(claim.answer.run, claim, value) == reason
    assert _answers_file_reason(value, citations) == reason
    assert _scoring_refuses(value, len(citations))


def test_unsupported_needs_a_justification_from_a_reviewer_not_from_a_dataset(claims):
    cited, _uncited = claims

    assert _browser_reason(cited, "UNSUPPORTED", " ") == f"Claim 1: {NO_JUSTIFICATION}."
    assert _label_table_reason(cited.answer.run, cited, "UNSUPPORTED") == NO_JUSTIFICATION
    assert not _scoring_refuses("UNSUPPORTED", 1)


SUPPORTED_ON_FABRICATED = ("SUPPORTED on a claim whose every citation is fabricated (it names a passage that "
                           "was not sent with the answer): nothing it cites can entail it, so it is UNSUPPORTED")


@pytest.mark.parametrize(
    ("value", "n_sent", "expected"),
    [("SUPPORTED", 0, SUPPORTED_ON_FABRICATED), ("SUPPORTED", 1, None), ("SUPPORTED", None, None),
     ("UNSUPPORTED", 0, None)],
)
def test_supported_needs_a_citation_of_a_passage_that_was_sent(value, n_sent, expected):
    problem = label_problem(value, n_citations=2, n_sent=n_sent)
    assert (problem.message if problem else None) == expected


def test_supported_on_a_claim_citing_only_fabricated_ids_is_refused_everywhere(db):
    """SPEC §4.2: a fabricated id names a passage the model never read, so no
    cited span can entail the claim. Claim 1 cites only [9] (not sent): SUPPORTED
    is refused in the browser, the label table and the answers file; UNSUPPORTED
    is recorded. Claim 2 cites [9] and P1 (sent): SUPPORTED is fine."""
    run = RunFactory(project=ProjectFactory(slug="fab"), name="r")
    only_fabricated = ClaimFactory(answer__run=run, index=1, text="They dream in color.")
    CitationFactory(claim=only_fabricated, passage=None, cited_id="9")
    mixed = ClaimFactory(answer=only_fabricated.answer, index=2, text="Cats sleep a lot.")
    CitationFactory(claim=mixed, passage=None, cited_id="9")
    CitationFactory(claim=mixed)

    assert _browser_reason(only_fabricated, "SUPPORTED") == f"Claim 1: {SUPPORTED_ON_FABRICATED}."
    assert _label_table_reason(run, only_fabricated, "SUPPORTED") == SUPPORTED_ON_FABRICATED
    assert _answers_file_reason("SUPPORTED", [{"passage_id": "9"}]) == SUPPORTED_ON_FABRICATED

    alice = ReviewerFactory(username="bob")
    saved = label_save(claim=only_fabricated, reviewer=alice, value="UNSUPPORTED", justification="[9] was never sent",
                       base_revision=1, base_label_id=None)
    assert saved.value == "UNSUPPORTED" and saved.is_current
    assert label_save(claim=mixed, reviewer=alice, value="SUPPORTED", justification="",
                      base_revision=1, base_label_id=None).value == "SUPPORTED"


def test_an_answers_file_may_support_a_claim_cited_by_source_when_that_source_was_sent(db):
    line = {"question_id": "q9", "question": "Q?", "run": "import", "answer": "A.",
            "passages": [{"id": "P1", "source": "https://example.org/a", "text": "t"}],
            "claims": [{"text": "A.", "citations": [{"source": "https://example.org/a"}], "label": "SUPPORTED"}]}
    report = run_import(project=ProjectFactory(slug="src"), source=io.BytesIO(json.dumps(line).encode() + b"\n"))
    assert report.labels_created == 1 and report.fabricated_citations == 0
