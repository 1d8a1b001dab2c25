"""Grading a judge against the human labels (scoring.judge_grading), on frames computed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from scoring.judge_grading import borderline_signs, grade_judge, kappa_interval

S, U = "SUPPORTED", "UNSUPPORTED"


def _frame(labels: list[str], column: str = "justification", texts: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame({"claim_id": range(1, len(labels) + 1), "label": labels,
                         column: texts or [""] * len(labels)})


def test_grade_of_a_ten_claim_judge_computed_by_hand():
    """Humans: claims 1–6 SUPPORTED, 7–10 UNSUPPORTED. Judge: claim 6 UNSUPPORTED,
    claim 7 SUPPORTED, the rest as the humans.

    Confusion (rows humans, columns judge): [[5, 1], [1, 3]], n = 10.
    p_o = 8/10; margins 6/4 both sides, chance = 6·6 + 4·4 = 52;
    kappa = (10·8 − 52) / (100 − 52) = 28/48 = 0.58333.
    SE (Fleiss, Cohen & Everitt): p = cells/10, 1 − κ = 5/12,
    A = .5(1 − 1.2·5/12)² + .3(1 − .8·5/12)² = .125 + .13333 = .25833,
    B = (5/12)² · (.1·(.6+.4)² + .1·(.4+.6)²) = .034722,
    C = (7/12 − .52·5/12)² = .36667² = .13444,
    var = (A + B − C) / (.48² · 10) = .15861 / 2.304 = .068842, SE = .26238;
    interval 0.58333 ± 1.96·0.26238 = (0.06908, 1.0976 → 1.0).
    UNSUPPORTED calls: precision 3/4, recall 3/4, F1 0.75; one human
    UNSUPPORTED let through as SUPPORTED (claim 7)."""
    humans = _frame([S] * 6 + [U] * 4)
    judge = _frame([S] * 5 + [U, S] + [U] * 3, "reason")
    grade = grade_judge(humans, judge, judge_name="j", reference_name="h")
    assert grade.n == 10 and (grade.agreement.numerator, grade.agreement.denominator) == (8, 10)
    assert grade.kappa == pytest.approx(28 / 48, abs=1e-12)
    assert grade.kappa_se == pytest.approx(math.sqrt(0.158611111 / 2.304), abs=1e-6)
    assert grade.kappa_ci95 == pytest.approx((28 / 48 - 1.959964 * 0.2623769, 1.0), abs=1e-5)
    assert (grade.precision.numerator, grade.precision.denominator) == (3, 4)
    assert (grade.recall.numerator, grade.recall.denominator) == (3, 4)
    assert grade.f1 == 0.75 and grade.missed_unsupported == 1
    assert grade.confusion.to_numpy().tolist() == [[5, 1], [1, 3]]
    assert grade.disagreements[["claim_id", "reference", "judge"]].values.tolist() == [[6, S, U], [7, U, S]]


def test_claims_only_one_side_labeled_are_left_out_and_counted():
    """Humans labeled claims 1–3, the judge 2–5: n = 2 (claims 2, 3), reference_only = 1 (claim 1)."""
    humans = _frame([S, S, U])
    judge = pd.DataFrame({"claim_id": [2, 3, 4, 5], "label": [S, U, U, S]})
    grade = grade_judge(humans, judge)
    assert (grade.n, grade.reference_only, grade.agreement.numerator) == (2, 1, 2)


def test_undefined_figures_stay_none():
    """Everyone says SUPPORTED: p_e = 1, kappa undefined; no UNSUPPORTED call, so
    precision and recall have zero denominators and F1 is undefined."""
    grade = grade_judge(_frame([S, S]), _frame([S, S], "reason"))
    assert (grade.kappa, grade.kappa_se, grade.kappa_ci95) == (None, None, None)
    assert (grade.precision.value, grade.recall.value, grade.f1) == (None, None, None)
    assert grade_judge(_frame([]), _frame([], "reason")).n == 0


def test_kappa_of_perfect_agreement_is_exactly_one():
    kappa, se, interval = kappa_interval([[3, 0], [0, 2]])
    assert kappa == 1.0 and se == 0.0 and interval == (1.0, 1.0)


def test_disagreements_come_borderline_first():
    """Claim 1: no sign. Claim 2: a number. Claim 3: a number, a long cited text and
    'partially' in the human justification (3 signs). Order: 3, 2, 1."""
    humans = _frame([U, U, U], texts=["", "", "Only partially supported."])
    judge = _frame([S, S, S], "reason")
    claims = pd.DataFrame({"claim_id": [1, 2, 3], "claim": ["Plain.", "In 2019.", "About 40 %."],
                           "cited_chars": [10, 10, 600]})
    grade = grade_judge(humans, judge, claims=claims)
    assert grade.disagreements["claim_id"].tolist() == [3, 2, 1]
    assert grade.disagreements["borderline"].tolist() == [
        ["number", "long cited text", "partial support"], ["number"], []]
    assert grade.to_dict()["disagreements"][0]["justification"] == "Only partially supported."


def test_claims_given_as_a_function_are_read_for_the_disagreements_only():
    """Humans U, U, S, S; judge S, U, S, U: claims 1 and 4 differ. The function is asked
    for those two ids, once, and the grade is the one the whole frame gives."""
    humans = _frame([U, U, S, S])
    judge = _frame([S, U, S, U], "reason")
    claims = pd.DataFrame({"claim_id": [1, 2, 3, 4], "claim": ["Plain.", "In 2019.", "Two.", "About 40 %."],
                           "cited_chars": [10, 700, 10, 10]})
    asked = []

    def texts(claim_ids: list[int]) -> pd.DataFrame:
        asked.append(claim_ids)
        return claims[claims["claim_id"].isin(claim_ids)]

    lazy = grade_judge(humans, judge, claims=texts)
    assert asked == [[1, 4]]
    assert lazy.disagreements["claim_id"].tolist() == [4, 1]
    assert lazy.disagreements["claim"].tolist() == ["About 40 %.", "Plain."]
    assert lazy.to_dict() == grade_judge(humans, judge, claims=claims).to_dict()


def test_citation_markers_are_not_numbers():
    """A marker's digits name a passage: [3], [P1], [1, 3], [2-4], 【4】 alone raise no "number"
    sign; a quantity beside a marker still does."""
    for claim in ("Retries back off [3].", "Retries back off [P1][2].", "It is so [1, 3].", "It is so [2-4].",
                  "It is so【4】."):
        assert borderline_signs(claim, 0, "") == [], claim
    assert borderline_signs("It costs 5 euros [3].", 0, "") == ["number"]
    assert borderline_signs("In 2020 it changed [P2].", 0, "") == ["number"]


def test_number_sign_on_the_expertqa_claims():
    """fixtures/expertqa_dev.jsonl: 735 claims, 650 hold a digit, mostly in their markers
    ("… integrity[1]."); 85 hold one outside them ("A CTR of 50% or higher … [4].")."""
    import json

    from tests.conftest import FIXTURES_DIR

    claims = [claim["text"] for line in (FIXTURES_DIR / "expertqa_dev.jsonl").read_text().splitlines()
              for claim in json.loads(line).get("claims", [])]
    assert len(claims) == 735 and sum(any(ch.isdigit() for ch in text) for text in claims) == 650
    assert sum(borderline_signs(text, 0, "") == ["number"] for text in claims) == 85


def test_borderline_signs_read_the_claim_the_span_and_the_justification():
    assert borderline_signs("It costs 5 euros.", 0, "") == ["number"]
    assert borderline_signs("No digits.", 599, "incomplete") == ["partial support"]
    assert borderline_signs("No digits.", 600, "") == ["long cited text"]


@pytest.mark.parametrize(("frame", "message"), [
    (pd.DataFrame({"claim_id": [1, 1], "label": [S, U]}), "list claim 1 twice"),
    (pd.DataFrame({"claim_id": [1], "label": ["UNCITED"]}), "UNCITED are not SUPPORTED or UNSUPPORTED"),
    (pd.DataFrame({"claim_id": [1]}), "lack column"),
])
def test_bad_frames_are_refused(frame, message):
    with pytest.raises(ValueError, match=message):
        grade_judge(frame, _frame([S], "reason"))


def test_a_judge_with_one_label_throughout_has_kappa_zero_and_no_spread():
    """Humans 13 S / 15 U; judge UNSUPPORTED on all 28: p_o = 15/28 = p_e, kappa 0;
    A = (15/28)(1 − (15/28 + 1))² = (15/28)(15/28)², B = (13/28)(0 + 15/28)²,
    A + B = (15/28)²(15/28 + 13/28) = (15/28)² = C = (0 − 15/28)²: variance 0,
    SE 0, interval (0, 0)."""
    kappa, se, interval = kappa_interval([[0, 13], [0, 15]])
    assert kappa == 0.0 and se == pytest.approx(0.0, abs=1e-7)
    assert interval == pytest.approx((0.0, 0.0), abs=1e-6)
