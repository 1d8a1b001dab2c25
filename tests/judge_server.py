"""A fake OpenAI-compatible chat endpoint on 127.0.0.1 for the judge tests.

``JudgeServer`` answers ``POST /v1/chat/completions`` from a thread of its own
(``ThreadingHTTPServer`` on an ephemeral port). It reads the request's last
user message (the judge protocol's JSON object) and replies according to a
script keyed by question text (``behaviours``), default ``"valid"``:

- ``valid``: one verdict per claim; the label is ``labels_by_id[claim id]``,
  else ``labels[claim text]``, else SUPPORTED; the reason names it;
- ``missing``: like ``valid`` without the verdict of the first claim;
- ``unknown``: like ``valid`` plus a verdict for id ``"no-such-claim"``;
- ``duplicate``: like ``valid`` with the first claim's verdict twice;
- ``malformed``: like ``valid`` with the first claim's label ``"MAYBE"``;
- ``prose``: a sentence instead of the JSON object;
- ``rate_limit_once``: HTTP 429 (``retry-after-ms: 10``) the first time, then ``valid``;
- ``server_error``: HTTP 500 every time;
- ``not_found``: HTTP 404 every time (a host that answers, but is no judge);
- ``timeout``: answers only after ``delay`` seconds (default 60: far longer than a
  test client's timeout, so the client always gives up first however busy the
  machine), or when the server closes.
- ``html``: HTTP 200 with an HTML page (``Content-Type: text/html``), as a proxy's error page;
- ``not_json``: HTTP 200 announcing JSON but carrying a truncated body;
- ``nul_reason``, ``surrogate_reason``, ``control_reason``: like ``valid`` with the first
  claim's reason holding a NUL, a lone surrogate (``\\ud800`` in the JSON) or an ESC character;
- ``deep``: the message content is a JSON object nested 100,000 levels deep (RecursionError
  for a recursive parser);
- ``deep_body``: the HTTP body itself nested 100,000 levels deep.

``pause`` seconds pass before every reply; with ``gate`` (a ``threading.Event``)
every reply waits until the test sets it (a browser test sees the judge run under
way, whatever the machine's speed; closing the server sets it).
``requests`` keeps every request body and its ``Authorization`` header, so
tests can check the request shape and that the key was sent (and nowhere
printed).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The questions of the ``judging_run`` fixture (tests/conftest.py), one per scripted behaviour.
QUESTIONS = ("valid", "missing", "unknown", "prose", "rate limited", "timeout")
# What the bad-reason behaviours put in the first verdict's reason.
BAD_REASONS = {"nul_reason": "\x00", "surrogate_reason": "\ud800", "control_reason": "\x1b"}
DEPTH = 100_000


def judging_answers(path: Path) -> Path:
    """Write the answers file of run ``judged`` to ``path``: one answer per question of
    :data:`QUESTIONS`, each with two cited claims ("<q> one." citing P1, a passage
    that says it; "<q> two." citing P2, one that does not) and one uncited claim."""
    lines = []
    for question in QUESTIONS:
        lines.append(json.dumps({
            "question_id": question.replace(" ", "-"), "question": question, "run": "judged",
            "answer": f"{question} one [P1]. {question} two [P2]. {question} three.",
            "passages": [{"id": "P1", "source": "a.md", "text": f"{question} one, says the passage."},
                         {"id": "P2", "source": "b.md", "text": "Something else entirely."}],
            "claims": [{"text": f"{question} one.", "citations": [{"passage_id": "P1"}]},
                       {"text": f"{question} two.", "citations": [{"passage_id": "P2"}]},
                       {"text": f"{question} three.", "citations": []}],
        }))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class JudgeServer:
    def __init__(self, *, labels: dict[str, str] | None = None, behaviours: dict[str, str] | None = None,
                 delay: float = 60.0, labels_by_id: dict[str, str] | None = None, pause: float = 0.0,
                 gate: threading.Event | None = None):
        self.labels = dict(labels or {})
        self.pause = pause
        self.labels_by_id = dict(labels_by_id or {})
        self.behaviours = dict(behaviours or {})
        self.delay = delay
        self.gate = gate
        self._closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()  # a held reply ends now
        if self.gate is not None:
            self.gate.set()
        self._server.shutdown()
        self._server.server_close()

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
        """Status, headers and content of the reply to the request ``body``."""
        asked = json.loads(body["messages"][-1]["content"])
        question = asked["question"]
        behaviour = self.behaviours.get(question, "valid")
        with self._lock:
            attempt = self._attempts[question] = self._attempts.get(question, 0) + 1
        if behaviour == "rate_limit_once" and attempt == 1:
            return 429, {"retry-after-ms": "10"}, json.dumps({"error": {"message": "slow down", "type": "rate"}})
        if behaviour == "server_error":
            return 500, {}, json.dumps({"error": {"message": "boom", "type": "server"}})
        if behaviour == "not_found":
            return 404, {}, json.dumps({"error": {"message": "no such route", "type": "not_found"}})
        if self.gate is not None:
            self.gate.wait()
        if behaviour == "timeout":
            self._closing.wait(self.delay)
        elif self.pause:
            time.sleep(self.pause)
        if behaviour == "prose":
            return 200, {}, _completion(body, "I think every claim is supported by its sources.")
        if behaviour == "html":
            return 200, {"Content-Type": "text/html"}, "<html><body><h1>502 Bad Gateway</h1></body></html>"
        if behaviour == "not_json":
            return 200, {}, '{"id": "chatcmpl-test", "choices": [{"message": {"content": "{\\"verd'
        if behaviour == "deep":
            return 200, {}, _completion(body, '{"verdicts": ' + "[" * DEPTH + "]" * DEPTH + "}")
        if behaviour == "deep_body":
            return 200, {}, '{"choices": ' + "[" * DEPTH + "]" * DEPTH + "}"
        verdicts = []
        for claim in asked["claims"]:
            label = self.labels_by_id.get(claim["id"]) or self.labels.get(claim["text"], "SUPPORTED")
            verdicts.append({"id": claim["id"], "label": label, "reason": f"judged {label}: {claim['text'][:40]}"})
        if behaviour == "missing":
            verdicts = verdicts[1:]
        elif behaviour == "unknown":
            verdicts.append({"id": "no-such-claim", "label": "SUPPORTED", "reason": "?"})
        elif behaviour == "duplicate":
            verdicts.append(dict(verdicts[0], label="UNSUPPORTED"))
        elif behaviour == "malformed":
            verdicts[0] = dict(verdicts[0], label="MAYBE")
        elif behaviour in BAD_REASONS:
            verdicts[0] = dict(verdicts[0], reason=f"judged{BAD_REASONS[behaviour]}here")
        return 200, {}, _completion(body, json.dumps({"verdicts": verdicts}))

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization", "")})
                status, headers, content = server.reply(body)
                data = content.encode("utf-8")
                try:
                    self.send_response(status)
                    headers = {"Content-Type": "application/json", **headers}
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout behaviour)

            def log_message(self, *args) -> None:
                pass

        return Handler


def _completion(body: dict[str, Any], content: str) -> str:
    return json.dumps({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body.get("model", "judge"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
