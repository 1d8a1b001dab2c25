"""Citation precision from per-citation judgments and the supported rate (SPEC §4.3b), by hand."""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest

from scoring.claims import claim_metrics
from scoring.judgments import (
    FULL,
    NONE,
    PARTIAL,
    UNJUDGEABLE,
    citation_judgments,
    proposed_label,
    resolve_judgments,
)
from scoring.labels import SUPPORTED, UNCITED, UNSUPPORTED

# (answer, claim, label, factual, [(citation, judgment), ...])
WORKED = [
    ("a", "c1", SUPPORTED, True, [("k1", FULL), ("k2", NONE)]),
    ("a", "c2", SUPPORTED, True, [("k3", PARTIAL), ("k4", PARTIAL)]),  # supported by the union of two PARTIALs
    ("a", "c3", UNSUPPORTED, True, [("k5", UNJUDGEABLE)]),  # its only citation is UNJUDGEABLE
    ("a", "c4", UNSUPPORTED, True, [("k6", PARTIAL)]),
    ("a", "c5", SUPPORTED, False, [("k7", FULL)]),  # not a factual claim
    ("b", "d1", UNSUPPORTED, True, [("m1", NONE)]),
    ("b", "d2", UNCITED, True, []),
]


def frames(rows=WORKED) -> tuple[pd.DataFrame, pd.DataFrame]:
    claims = pd.DataFrame(
        [{"claim_id": claim, "answer_id": answer, "question_id": "q" + answer, "claim_index": i,
          "n_citations": len(cites), "label": label, "factual": factual}
         for i, (answer, claim, label, factual, cites) in enumerate(rows, start=1)])
    judgments = pd.DataFrame(
        [{"citation_id": citation, "claim_id": claim, "judgment": judgment}
         for _answer, claim, _label, _factual, cites in rows for citation, judgment in cites],
        columns=["citation_id", "claim_id", "judgment"])
    return claims, judgments


def test_strict_rule_counts_only_full_citations():
    """Factual claims' citations: k1 FULL, k2 NONE, k3 PARTIAL, k4 PARTIAL, k5 UNJUDGEABLE,
    k6 PARTIAL, m1 NONE = 7 judged (k7 belongs to the non-factual c5: left out).
    strict: precise = {k1} -> 1/7. Per answer: a 1/6, b 0/1 -> mean (1/6 + 0)/2 = 1/12."""
    claims, judgments = frames()

    result = citation_judgments(claims, judgments, rule="strict")

    assert (result.precise, result.judged) == (1, 7)
    assert result.precision.fraction == Fraction(1, 7)
    assert result.mean_precision == pytest.approx(1 / 12)
    assert result.counts == {FULL: 1, PARTIAL: 3, NONE: 2, UNJUDGEABLE: 1}
    assert result.to_dict()["rule"] == "strict"


def test_union_rule_credits_partials_of_a_supported_claim():
    """union: FULL k1, plus PARTIAL k3 and k4 (their claim c2 is SUPPORTED only by the two
    together); k6 is PARTIAL on the UNSUPPORTED c4 -> not precise. 3/7.
    Per answer: a 3/6, b 0/1 -> mean (1/2 + 0)/2 = 1/4."""
    claims, judgments = frames()

    result = citation_judgments(claims, judgments, rule="union")

    assert result.precision.fraction == Fraction(3, 7)
    assert result.mean_precision == pytest.approx(1 / 4)
    records = {r["answer_id"]: r for r in result.per_answer_records()}
    assert records["a"] == {"answer_id": "a", "judged": 6, "precise": 3, "precision": 0.5}
    assert records["b"] == {"answer_id": "b", "judged": 1, "precise": 0, "precision": 0.0}
    assert result.to_dict()["precision_fraction"] == "3/7"


def test_lenient_rule_counts_every_partial():
    """lenient: FULL k1 + PARTIAL k3, k4, k6 = 4/7. Per answer: a 4/6, b 0/1 -> mean 1/3."""
    claims, judgments = frames()

    result = citation_judgments(claims, judgments, rule="lenient")

    assert result.precision.fraction == Fraction(4, 7)
    assert result.mean_precision == pytest.approx(1 / 3)


def test_unjudgeable_only_citation_is_judged_but_never_precise():
    """c3's only citation k5 is UNJUDGEABLE: it counts in judged (1) and in no rule's
    precise count: 0/1 under strict, union and lenient."""
    claims, judgments = frames([WORKED[2]])

    for rule in ("strict", "union", "lenient"):
        result = citation_judgments(claims, judgments, rule=rule)
        assert (result.precise, result.judged, result.counts[UNJUDGEABLE]) == (0, 1, 1)


def test_non_factual_claim_leaves_every_denominator():
    """Dropping c5 from the input or marking it not factual gives the same figures:
    claims 6 (a: c1-c4, b: d1, d2), cited 5, supported 2 (c1, c2), labeled cited 5,
    coverage 5/6, support 2/5, supported rate 2/6 = 1/3 = coverage x support (5/6 x 2/5),
    non_factual 1; judged citations 7 under every rule."""
    claims, judgments = frames()
    without_c5 = claims[claims["claim_id"] != "c5"]

    marked = claim_metrics(claims)
    dropped = claim_metrics(without_c5)

    assert (marked.claims, marked.cited, marked.labeled_cited, marked.supported) == (6, 5, 5, 2)
    assert (dropped.claims, dropped.cited, dropped.labeled_cited, dropped.supported) == (6, 5, 5, 2)
    assert (marked.non_factual, dropped.non_factual) == (1, 0)
    assert marked.supported_rate.fraction == Fraction(1, 3)
    assert marked.supported_rate.fraction == marked.coverage.fraction * marked.support.fraction
    for rule in ("strict", "union", "lenient"):
        assert citation_judgments(claims, judgments, rule=rule).judged == 7
        assert (citation_judgments(claims, judgments, rule=rule).precision
                == citation_judgments(without_c5, judgments, rule=rule).precision)


def test_supported_rate_per_answer_mean():
    """a: 2 SUPPORTED of 4 factual claims = 1/2; b: 0 of 2 = 0 -> mean 1/4; pooled 2/6."""
    claims, _ = frames()

    metrics = claim_metrics(claims)

    records = {r["answer_id"]: r for r in metrics.per_answer_records()}
    assert (records["a"]["supported_rate"], records["b"]["supported_rate"]) == (0.5, 0.0)
    assert metrics.mean_supported_rate == pytest.approx(0.25)
    assert metrics.to_dict()["supported_rate"] == pytest.approx(1 / 3)


def test_nothing_judged_gives_null_precision():
    """Citations without judgments: judged 0, precision 0/0 = None, every answer skipped."""
    claims, judgments = frames()
    judgments["judgment"] = None

    result = citation_judgments(claims, judgments)

    assert result.judged == 0
    assert result.precision.value is None
    assert result.mean_precision is None
    assert result.to_dict()["precision"] is None
    assert result.unjudged == 7


def test_unknown_judgment_and_rule_are_refused():
    claims, judgments = frames()
    judgments.loc[0, "judgment"] = "MOSTLY"
    with pytest.raises(ValueError, match="MOSTLY"):
        citation_judgments(claims, judgments)
    with pytest.raises(ValueError, match="strict, union, lenient"):
        citation_judgments(*frames(), rule="generous")


@pytest.mark.parametrize(("judgments", "enough", "expected"), [
    ([FULL, NONE], False, SUPPORTED),
    ([PARTIAL, PARTIAL], False, UNSUPPORTED),
    ([PARTIAL, PARTIAL], True, SUPPORTED),
    ([UNJUDGEABLE], False, UNSUPPORTED),
    ([NONE, UNJUDGEABLE], True, UNSUPPORTED),
    ([None, FULL], False, None),
    ([], False, None),
])
def test_proposed_label(judgments, enough, expected):
    """Any FULL, or PARTIALs judged enough together -> SUPPORTED; else UNSUPPORTED; nothing
    until every citation is judged."""
    assert proposed_label(judgments, partials_enough=enough) == expected


def test_resolve_judgments_disputes_differing_reviewers():
    """k1: ann FULL, bob FULL -> FULL; k2: ann NONE, bob PARTIAL -> disputed (None);
    with reviewer=bob: k1 FULL, k2 PARTIAL."""
    long = pd.DataFrame({"citation_id": ["k1", "k1", "k2", "k2"], "reviewer": ["ann", "bob", "ann", "bob"],
                         "judgment": [FULL, FULL, NONE, PARTIAL]})

    both = resolve_judgments(long).set_index("citation_id")
    bob = resolve_judgments(long, reviewer="bob").set_index("citation_id")

    assert both.loc["k1", "judgment"] == FULL and not both.loc["k1", "disputed"]
    assert both.loc["k2", "judgment"] is None and both.loc["k2", "disputed"]
    assert (bob.loc["k1", "judgment"], bob.loc["k2", "judgment"]) == (FULL, PARTIAL)


def test_comparison_shows_supported_rate_and_judged_precision():
    """One question, one claim in each run. A: its citation FULL, SUPPORTED -> supported rate 1/1,
    precision 1/1. B: its citation PARTIAL, UNSUPPORTED -> 0/1 and 0/1 (union). Deltas -1."""
    from scoring.compare import RunFrames, compare_runs

    def side(name, label, judgment):
        claims = pd.DataFrame([{"claim_id": f"{name}1", "answer_id": name, "question_id": "q", "claim_index": 1,
                                "claim": "Paris is in France.", "n_citations": 1, "label": label}])
        citations = pd.DataFrame([{"claim_id": f"{name}1", "passage_id": "P1"}])
        judgments = pd.DataFrame([{"citation_id": f"{name}k", "claim_id": f"{name}1", "judgment": judgment}])
        return RunFrames(name=name, claims=claims, citations=citations, judgments=judgments)

    result = compare_runs(side("a", SUPPORTED, FULL), side("b", UNSUPPORTED, PARTIAL))

    rows = {row.key: row for row in result.summary}
    assert (rows["supported_rate"].a, rows["supported_rate"].b, rows["supported_rate"].delta) == (1.0, 0.0, -1.0)
    judged = rows["judged_precision"]
    assert (judged.a, judged.b, judged.delta) == (1.0, 0.0, -1.0)
    assert judged.label == "Citation precision, judged (union)"
    assert (judged.a_text, judged.b_text) == ("1/1 = 1.00", "0/1 = 0.00")
