"""Context and source precision/recall/F1 against gold references and expected
sources (SPEC §4.3, seed "RAG Citation Quality"). Each test's docstring spells
out the arithmetic."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import pytest

from scoring.gold import answer_gold_matches, gold_metrics
from scoring.matching import Verdict, get_matcher
from scoring.ratio import Ratio

METHODS = ["substring", "ngram"]

# The seed's three worked examples, verbatim.
VPN = (
    "Remote workers must use a company-approved VPN at all times when accessing internal "
    "systems from outside the office."
)
REQUEST = (
    "Employees shall submit a remote work request at least five (5) business days prior to "
    "the requested start date."
)
NOTICE = "Employees are required to provide a minimum of four (4) weeks written notice of resignation."
PROBATION = (
    "Employees on probation are not entitled to severance pay upon termination within the "
    "first ninety (90) days of employment."
)
DEVICES = (
    "All devices used for remote work must have full-disk encryption and approved endpoint "
    "security software installed."
)
STORAGE = (
    "Employees must not store confidential company data on personal devices or unapproved "
    "cloud storage services."
)
TRAINING = "Annual security training is mandatory for all employees with access to sensitive data."

SEED = {
    # (a) right source, right passage
    "a": {
        "citations": [("Remote Work Policy.pdf", REQUEST)],
        "references": [("Remote Work Policy.pdf", REQUEST)],
        "expected": ["Remote Work Policy.pdf"],
    },
    # (b) right source, wrong passage
    "b": {
        "citations": [("Employment Contract.pdf", PROBATION)],
        "references": [("Employment Contract.pdf", NOTICE)],
        "expected": ["Employment Contract.pdf"],
    },
    # (c) three citations, three references, one passage match, two of three sources
    "c": {
        "citations": [
            ("Data Security Policy.pdf", VPN),
            ("Remote Work Policy.pdf", REQUEST),
            ("IT Compliance Handbook.pdf", TRAINING),
        ],
        "references": [
            ("Data Security Policy.pdf", VPN),
            ("Remote Work Policy.pdf", DEVICES),
            ("Acceptable Use Policy.pdf", STORAGE),
        ],
        "expected": [
            "Data Security Policy.pdf",
            "Remote Work Policy.pdf",
            "Acceptable Use Policy.pdf",
        ],
    },
}


def frames(spec: dict[str, dict]) -> tuple[pd.DataFrame, ...]:
    """(answers, citations, references, expected_sources) from
    ``{answer_id: {"citations": [(source, text)], "references": [...] | None,
    "expected": [source] | None}}``; ``None`` = no gold of that kind."""
    answers, citations, references, expected = [], [], [], []
    for answer_id, answer in spec.items():
        refs, exp = answer.get("references"), answer.get("expected")
        answers.append(
            {
                "answer_id": answer_id,
                "question_id": f"q-{answer_id}",
                "has_references": refs is not None,
                "has_expected_sources": exp is not None,
            }
        )
        for k, (source, text) in enumerate(answer.get("citations", [])):
            citations.append(
                {"answer_id": answer_id, "citation_id": f"{answer_id}:c{k}", "source": source,
                 "text": text}
            )
        references += [{"answer_id": answer_id, "source": s, "text": t} for s, t in refs or []]
        expected += [{"answer_id": answer_id, "source": s} for s in exp or []]
    return (
        pd.DataFrame(
            answers,
            columns=["answer_id", "question_id", "has_references", "has_expected_sources"],
        ),
        pd.DataFrame(citations, columns=["answer_id", "citation_id", "source", "text"]),
        pd.DataFrame(references, columns=["answer_id", "source", "text"]),
        pd.DataFrame(expected, columns=["answer_id", "source"]),
    )


def score(spec: dict[str, dict], method: str = "ngram", **options):
    return gold_metrics(*frames(spec), matcher=get_matcher(method, **options))


class RecordingMatcher:
    """A Matcher that answers from a table (default: ngram) and records every pair
    it was asked about; ``undecided`` pairs get ``None`` (pending)."""

    def __init__(self, undecided: Sequence[tuple[str, str]] = ()):
        self.undecided = set(undecided)
        self.asked: list[tuple[str, str]] = []
        self.keys: list[str] = []
        self.ngram = get_matcher("ngram")

    def match(self, cited: str, reference: str) -> Verdict:
        return self.match_many([(cited, reference)])[0]

    def match_many(self, pairs, *, keys=None):
        self.asked += list(pairs)
        self.keys += list(keys or [])
        return [
            None if pair in self.undecided else self.ngram.match(*pair) for pair in pairs
        ]


# --- the seed's worked examples ------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_seed_a_right_source_right_passage_scores_all_ones(method):
    """1 citation, 1 reference, same source and passage: context P = R = 1/1,
    source P = R = 1/1, every F1 and mean exactly 1.0."""
    result = score({"a": SEED["a"]}, method)
    assert (result.context.precision, result.context.recall) == (Ratio(1, 1), Ratio(1, 1))
    assert (result.source.precision, result.source.recall) == (Ratio(1, 1), Ratio(1, 1))
    for part in result.to_dict().values():
        for key in ("precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1"):
            assert part[key] == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_seed_b_right_source_wrong_passage(method):
    """The cited passage (probation, severance) is not the reference (resignation
    notice): context P = 0/1, R = 0/1, F1 = 0; the source is the expected one:
    source P = R = 1/1."""
    result = score({"b": SEED["b"]}, method)
    assert (result.context.precision, result.context.recall) == (Ratio(0, 1), Ratio(0, 1))
    assert result.context.f1 == 0.0
    assert (result.source.precision, result.source.recall) == (Ratio(1, 1), Ratio(1, 1))
    assert result.source.f1 == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_seed_c_one_passage_match_two_of_three_sources(method):
    """Only the Data Security Policy citation matches its reference: context
    P = 1/3 (of 3 citations), R = 1/3 (of 3 references). Cited sources {DSP,
    RWP, ITC}, expected {DSP, RWP, AUP}: 2 in common, source P = R = 2/3."""
    result = score({"c": SEED["c"]}, method)
    assert (result.context.precision, result.context.recall) == (Ratio(1, 3), Ratio(1, 3))
    assert (result.source.precision, result.source.recall) == (Ratio(2, 3), Ratio(2, 3))
    assert result.context.f1 == pytest.approx(1 / 3)
    assert result.source.f1 == pytest.approx(2 / 3)


@pytest.mark.parametrize("method", METHODS)
def test_seed_cases_pooled_and_per_answer_mean(method):
    """Pooled over a, b, c: context matched citations 1+0+1 = 2 of 1+1+3 = 5 →
    P = 2/5; matched references 2 of 5 → R = 2/5. Per-answer mean of P:
    (1 + 0 + 1/3) / 3 = 4/9. Sources: 1+1+2 = 4 of 1+1+3 = 5 both ways;
    mean (1 + 1 + 2/3) / 3 = 8/9."""
    result = score(SEED, method)
    assert (result.context.precision, result.context.recall) == (Ratio(2, 5), Ratio(2, 5))
    assert result.context.mean_precision == pytest.approx(4 / 9)
    assert result.context.mean_recall == pytest.approx(4 / 9)
    assert (result.source.precision, result.source.recall) == (Ratio(4, 5), Ratio(4, 5))
    assert result.source.mean_precision == pytest.approx(8 / 9)
    assert result.context.answers == result.source.answers == 3
    assert result.to_dict() == {
        "context": {
            "precision": 0.4,
            "recall": 0.4,
            "f1": pytest.approx(0.4),
            "mean_precision": pytest.approx(4 / 9),
            "mean_recall": pytest.approx(4 / 9),
            # per-answer F1: 1, 0, 1/3
            "mean_f1": pytest.approx(4 / 9),
            "matched_citations": 2,
            "citations": 5,
            "matched_references": 2,
            "references": 5,
            "answers": 3,
            "pending": 0,
        },
        "source": {
            "precision": 0.8,
            "recall": 0.8,
            "f1": pytest.approx(0.8),
            "mean_precision": pytest.approx(8 / 9),
            "mean_recall": pytest.approx(8 / 9),
            "mean_f1": pytest.approx(8 / 9),
            "matched_cited_sources": 4,
            "cited_sources": 5,
            "matched_expected_sources": 4,
            "expected_sources": 5,
            "answers": 3,
        },
    }


def test_per_answer_rows_of_the_seed_cases():
    rows = {row["answer_id"]: row for row in score(SEED).per_answer_records()}
    assert rows["c"] == {
        "answer_id": "c",
        "question_id": "q-c",
        "has_references": True,
        "has_expected_sources": True,
        "context_pending": False,
        "citations": 3,
        "matched_citations": 1,
        "references": 3,
        "matched_references": 1,
        "context_precision": 1 / 3,
        "context_recall": 1 / 3,
        "context_f1": pytest.approx(1 / 3),
        "cited_sources": 3,
        "matched_cited_sources": 2,
        "expected_sources": 3,
        "matched_expected_sources": 2,
        "source_precision": 2 / 3,
        "source_recall": 2 / 3,
        "source_f1": pytest.approx(2 / 3),
    }
    assert [row["answer_id"] for row in score(SEED).per_answer_records()] == ["a", "b", "c"]


# --- edge cases ----------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_empty_reference_passage_is_matched_by_any_citation_of_its_source(method):
    """Reference (Handbook.pdf, "") is matched by the citation of handbook.pdf
    (sources compare normalized) whatever its passage: R = 1/1. Of the 3
    citations, only that one matches: P = 1/3 — the other source's citation
    and the source-less one do not count as 'the same source'."""
    result = score(
        {
            "x": {
                "citations": [("handbook.pdf", TRAINING), ("Other.pdf", TRAINING), ("", TRAINING)],
                "references": [("Handbook.pdf", "")],
            }
        },
        method,
    )
    assert (result.context.precision, result.context.recall) == (Ratio(1, 3), Ratio(1, 1))


def test_no_citations_gives_recall_zero_and_undefined_precision():
    """2 references, 0 citations: R = 0/2 = 0, P = 0/0 = None, F1 None (SPEC §4:
    null on a zero denominator, never 0); the mean skips the undefined P."""
    result = score({"x": {"citations": [], "references": [("A", VPN), ("B", REQUEST)],
                          "expected": ["A"]}})
    context = result.context
    assert (context.precision, context.recall) == (Ratio(0, 0), Ratio(0, 2))
    assert context.precision.value is None and context.recall.value == 0.0
    assert context.f1 is None
    assert (context.mean_precision, context.precision_skipped) == (None, 1)
    assert (context.mean_recall, context.recall_skipped) == (0.0, 0)
    assert (result.source.precision, result.source.recall) == (Ratio(0, 0), Ratio(0, 1))


def test_empty_gold_makes_every_citation_wrong_and_recall_undefined():
    """has_references with R = []: P = 0/2 = 0, R = 0/0 = None. Same for sources
    with E = []: P = 0/1 (one distinct cited source), R = None."""
    result = score(
        {"x": {"citations": [("A", VPN), ("A", REQUEST)], "references": [], "expected": []}}
    )
    assert (result.context.precision, result.context.recall) == (Ratio(0, 2), Ratio(0, 0))
    assert result.context.f1 is None
    assert (result.source.precision, result.source.recall) == (Ratio(0, 1), Ratio(0, 0))


def test_answer_without_gold_is_left_out_of_the_metrics():
    """Answer y has no gold at all: only x counts (P = R = 1/1); y's per-answer
    values are None and its counts NA."""
    result = score({"x": SEED["a"], "y": {"citations": [("A", VPN)]}})
    assert result.context.answers == result.source.answers == 1
    assert result.context.precision == Ratio(1, 1)
    row = {r["answer_id"]: r for r in result.per_answer_records()}["y"]
    assert row["citations"] is None and row["context_precision"] is None
    assert row["source_recall"] is None


@pytest.mark.parametrize("method", METHODS)
def test_duplicate_citations_count_once(method):
    """The same (source, passage) cited three times — once with other case and
    spacing — is one citation, as cited ids are sets (SPEC §4.2): P = 1/1, not
    3/3; with a wrong citation added, P = 1/2, not 3/4."""
    cited = [("Remote Work Policy.pdf", REQUEST)] * 2 + [
        ("remote work policy.pdf ", "  " + REQUEST.upper())
    ]
    result = score({"x": {**SEED["a"], "citations": cited}}, method)
    assert (result.context.precision, result.context.recall) == (Ratio(1, 1), Ratio(1, 1))
    result = score({"x": {**SEED["a"], "citations": [*cited, ("X.pdf", TRAINING)]}}, method)
    assert result.context.precision == Ratio(1, 2)
    assert result.source.precision == Ratio(1, 2)


def test_duplicate_references_count_once():
    result = score({"x": {"citations": [("A", VPN)], "references": [("A", VPN), ("a", VPN)]}})
    assert result.context.recall == Ratio(1, 1)


@pytest.mark.parametrize("method", METHODS)
def test_citations_in_reverse_order_change_nothing(method):
    answers, citations, references, expected = frames({"c": SEED["c"]})
    matcher = get_matcher(method)
    forward = gold_metrics(answers, citations, references, expected, matcher=matcher)
    backward = gold_metrics(answers, citations.iloc[::-1], references.iloc[::-1],
                            expected.iloc[::-1], matcher=matcher)
    assert forward.to_dict() == backward.to_dict()
    assert forward.per_answer_records() == backward.per_answer_records()


def test_quote_with_curly_quotes_en_dash_and_ellipsis_matches_the_ascii_passage():
    """Cited span (typographic) vs the plain-ASCII gold passage: substring folds
    both, the parts before/after `…` occur in order → P = R = 1/1."""
    gold = 'The so-called "hybrid" policy - three office days a week - applies to all staff.'
    cited = "the so-called \u201chybrid\u201d policy \u2013 three office days\u2026all staff"
    result = score({"x": {"citations": [("P.pdf", cited)], "references": [("P.pdf", gold)]}},
                   "substring")
    assert (result.context.precision, result.context.recall) == (Ratio(1, 1), Ratio(1, 1))


def test_quote_stitched_out_of_order_is_no_match():
    """'outside the office … must use' has both parts in the reference but in the
    reverse order: P = R = 0/1."""
    result = score(
        {"x": {"citations": [("D.pdf", "outside the office … must use a company-approved VPN")],
               "references": [("D.pdf", VPN)]}},
        "substring",
    )
    assert (result.context.precision, result.context.recall) == (Ratio(0, 1), Ratio(0, 1))


def test_two_token_reference_matches_by_shrinking_n():
    """Reference 'Remote workers' has 2 tokens < n = 3: bigrams; the cited VPN
    passage contains it → matched, P = R = 1/1."""
    result = score({"x": {"citations": [("D", VPN)], "references": [("D", "Remote workers")]}})
    assert (result.context.precision, result.context.recall) == (Ratio(1, 1), Ratio(1, 1))


@pytest.mark.parametrize("method", METHODS)
def test_identical_cited_and_gold_score_exactly_one(method):
    spec = {
        "x": {
            "citations": [("A.pdf", VPN), ("B.pdf", REQUEST)],
            "references": [("A.pdf", VPN), ("B.pdf", REQUEST)],
            "expected": ["A.pdf", "B.pdf"],
        }
    }
    summary = score(spec, method).to_dict()
    for part in ("context", "source"):
        for key in ("precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1"):
            assert summary[part][key] == 1.0


def test_sources_compare_normalized_urls():
    """https://www.Example.org/policy/ and http://example.org/policy#s2 are one
    source: source P = R = 1/1."""
    result = score({"x": {"citations": [("https://www.Example.org/policy/", VPN)],
                          "expected": ["http://example.org/policy#s2"]}})
    assert (result.source.precision, result.source.recall) == (Ratio(1, 1), Ratio(1, 1))


def test_citation_without_source_is_judged_on_its_passage():
    """Sources must be equal only when both have one (SPEC §4.3): a source-less
    citation of the right passage matches, but adds no cited source."""
    result = score({"x": {"citations": [("", VPN)], "references": [("A", VPN)],
                          "expected": ["A"]}})
    assert result.context.precision == Ratio(1, 1)
    assert (result.source.precision, result.source.recall) == (Ratio(0, 0), Ratio(0, 1))


def test_fabricated_citation_with_empty_passage_matches_nothing_but_counts():
    """A citation with no passage text counts in |C| and matches no reference
    that has a passage: P = 1/2, R = 1/1."""
    result = score({"x": {"citations": [("A", VPN), ("A", "")], "references": [("A", VPN)]}})
    assert (result.context.precision, result.context.recall) == (Ratio(1, 2), Ratio(1, 1))


def test_matcher_is_asked_only_about_pairs_whose_sources_agree():
    """Answer c: DSP×DSP and RWP×RWP share a source; ITC cites no reference's
    source; AUP is cited by no one. So 2 of the 9 pairs go to the matcher,
    each with a '<citation_id>|<reference_id>' key."""
    matcher = RecordingMatcher()
    gold_metrics(*frames({"c": SEED["c"]}), matcher=matcher)
    assert sorted(matcher.asked) == sorted([(VPN, VPN), (REQUEST, DEVICES)])
    assert sorted(matcher.keys) == ["c:c0|0", "c:c1|1"]


def test_identical_pairs_across_answers_are_asked_once():
    matcher = RecordingMatcher()
    gold_metrics(*frames({"a1": SEED["a"], "a2": SEED["a"]}), matcher=matcher)
    assert matcher.asked == [(REQUEST, REQUEST)]


def test_undecided_pair_makes_its_answer_pending():
    """The matcher cannot decide VPN×VPN (answer c): c is pending — out of every
    count and mean — while a and b are scored: P = 1/2, R = 1/2. Sources need
    no matcher: all three answers count."""
    result = gold_metrics(*frames(SEED), matcher=RecordingMatcher(undecided=[(VPN, VPN)]))
    context = result.context
    assert (context.pending, context.pending_answer_ids, context.answers) == (1, ("c",), 2)
    assert (context.precision, context.recall) == (Ratio(1, 2), Ratio(1, 2))
    assert context.mean_precision == 0.5
    assert result.to_dict()["context"]["pending"] == 1
    assert result.source.answers == 3
    row = {r["answer_id"]: r for r in result.per_answer_records()}["c"]
    assert row["context_pending"] is True
    assert (row["citations"], row["matched_citations"], row["context_precision"]) == (3, None, None)
    assert row["source_precision"] == 2 / 3


def test_matcher_returning_the_wrong_number_of_verdicts_is_an_error():
    class Broken:
        def match(self, cited, reference):
            return True

        def match_many(self, pairs):
            return []

    with pytest.raises(ValueError, match="0 verdicts for 1 pairs"):
        gold_metrics(*frames({"a": SEED["a"]}), matcher=Broken())


def test_to_dict_has_exactly_the_documented_keys_and_no_nan():
    result = score({"x": {"citations": [], "references": [("A", VPN)], "expected": []}})
    summary = result.to_dict()
    assert list(summary) == ["context", "source"]
    assert set(summary["context"]) == {
        "precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1",
        "matched_citations", "citations", "matched_references", "references", "answers",
        "pending",
    }  # fmt: skip
    assert set(summary["source"]) == {
        "precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1",
        "matched_cited_sources", "cited_sources", "matched_expected_sources",
        "expected_sources", "answers",
    }  # fmt: skip
    values = [v for part in summary.values() for v in part.values()]
    values += [v for row in result.per_answer_records() for v in row.values()]
    assert not any(isinstance(v, float) and math.isnan(v) for v in values)


def test_no_answers_gives_undefined_metrics():
    result = score({})
    assert result.to_dict()["context"]["precision"] is None
    assert result.context.answers == 0 and len(result.per_answer) == 0


def test_null_cells_read_as_empty_strings():
    """source/text NaN or None (as pandas gives for missing cells) behave like
    "": the NaN-text reference is matched by the citation of its source
    (R = 1/1); the citation with a null passage matches nothing (P = 1/2); the
    null-source expected source is dropped (E = {RWP})."""
    answers, citations, references, expected = frames(
        {"x": {**SEED["a"], "citations": [SEED["a"]["citations"][0], ("X.pdf", "x")],
               "expected": ["Remote Work Policy.pdf", "tmp"]}}
    )
    references.loc[0, "text"] = float("nan")
    citations.loc[1, "text"] = None
    expected.loc[1, "source"] = None
    result = gold_metrics(answers, citations, references, expected, matcher=get_matcher("ngram"))
    assert (result.context.precision, result.context.recall) == (Ratio(1, 2), Ratio(1, 1))
    assert result.source.recall == Ratio(1, 1)


# --- input validation ----------------------------------------------------------


def test_missing_column_is_named():
    answers, citations, references, expected = frames(SEED)
    with pytest.raises(ValueError, match="citation_id"):
        gold_metrics(answers, citations.drop(columns="citation_id"), references, expected,
                     matcher=get_matcher("ngram"))


def test_duplicate_citation_id_is_rejected():
    answers, citations, references, expected = frames(SEED)
    citations.loc[1, "citation_id"] = citations.loc[0, "citation_id"]
    with pytest.raises(ValueError, match="more than once"):
        gold_metrics(answers, citations, references, expected, matcher=get_matcher("ngram"))


def test_rows_of_unknown_answers_are_rejected():
    answers, citations, references, expected = frames(SEED)
    with pytest.raises(ValueError, match="not in answers: 'z'"):
        gold_metrics(answers, citations, references,
                     pd.concat([expected, pd.DataFrame([{"answer_id": "z", "source": "A"}])]),
                     matcher=get_matcher("ngram"))


def test_references_on_an_answer_without_gold_are_rejected():
    answers, citations, references, expected = frames(SEED)
    answers.loc[answers["answer_id"] == "a", "has_references"] = False
    with pytest.raises(ValueError, match="has_references is False: 'a'"):
        gold_metrics(answers, citations, references, expected, matcher=get_matcher("ngram"))


# --- the review page's view of one answer ------------------------------------------


def test_answer_gold_matches_names_which_citation_matched_which_reference():
    _, citations, references, _ = frames({"c": SEED["c"]})
    matches = answer_gold_matches(citations, references, matcher=get_matcher("ngram"))
    assert [(c.citation_id, c.matched, c.reference_ids) for c in matches.citations] == [
        ("c:c0", True, (0,)),
        ("c:c1", False, ()),
        ("c:c2", False, ()),
    ]
    assert [(r.reference_id, r.matched, r.citation_ids) for r in matches.references] == [
        (0, True, ("c:c0",)),
        (1, False, ()),
        (2, False, ()),
    ]
    assert matches.pending is False


def test_answer_gold_matches_shows_duplicates_and_pending_pairs():
    """c1 repeats c0 and inherits its match; the REQUEST×DEVICES pair is
    undecided, so c2 and reference 1 are None and the answer is pending."""
    citations = pd.DataFrame(
        {
            "citation_id": ["c0", "c1", "c2"],
            "source": ["DSP", "dsp", "RWP"],
            "text": [VPN, VPN.upper(), REQUEST],
        }
    )
    references = pd.DataFrame(
        {"reference_id": ["r-vpn", "r-dev"], "source": ["DSP", "RWP"], "text": [VPN, DEVICES]}
    )
    matcher = RecordingMatcher(undecided=[(REQUEST, DEVICES)])
    matches = answer_gold_matches(citations, references, matcher=matcher)
    assert [(c.matched, c.reference_ids, c.duplicate_of) for c in matches.citations] == [
        (True, ("r-vpn",), None),
        (True, ("r-vpn",), "c0"),
        (None, (), None),
    ]
    assert [(r.matched, r.citation_ids) for r in matches.references] == [
        (True, ("c0", "c1")),
        (None, ()),
    ]
    assert matches.pending is True
