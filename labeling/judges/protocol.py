"""The wire protocol of an LLM judge (SPEC §4.4): one chat request per answer to
an OpenAI-compatible endpoint, one verdict per claim back, keyed by id.

Request: a system message with :data:`JUDGE_PROMPT` (the seed's rule), then a
user message whose content is the JSON object::

    {"question": "...",
     "claims": [{"id": "17", "text": "...",
                 "citations": [{"passage_id": "P1", "text": "..."}]}]}

Reply: the assistant message must be the JSON object::

    {"verdicts": [{"id": "17", "label": "SUPPORTED" | "UNSUPPORTED", "reason": "..."}]}

JSON output is requested (``response_format={"type": "json_object"}``).
Verdicts are matched to claims by ``id`` only, never by position: a claim
without a verdict is *missing*, one with two verdicts is *duplicated*, a
verdict that is not an object with a known label and a string reason is
*malformed*, a verdict for an id that was not asked about is *unknown*. None
of these is guessed: the claim stays unlabeled by the judge and the count is
reported. A reason is stored as the label's justification, so it follows the
text rules of every justification (``labeling.names.text_problem``: no NUL,
lone surrogate or other control character but tab and line breaks): a
verdict whose reason breaks them is malformed, the reason saying why. A
reply that is not such a JSON object (prose, a list, a truncated object, an
HTML page, a body that is not JSON, JSON nested too deep to read) fails the
whole answer: :class:`JudgeReplyError`, nothing written.

The HTTP side is the maintained ``openai`` client pointed at ``base_url``: it
retries 429 and 5xx replies and timeouts with exponential backoff (honouring
``Retry-After``), ``max_retries`` times, each attempt bounded by ``timeout``
seconds. Errors are re-raised as :class:`JudgeRequestError` with a message
built from the status code and the endpoint alone: the API key never appears
in a message, a log line or the database.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from labeling.names import text_problem
from scoring.labels import SUPPORTED, UNSUPPORTED

JUDGE_LABELS = (SUPPORTED, UNSUPPORTED)

# The seed's rule (SPEC §3, seed "Measure Citation Coverage and Support").
JUDGE_PROMPT = """You check whether the citations of an answer support its claims.

You receive a JSON object {"question": ..., "claims": [{"id": ..., "text": ..., "citations": [{"passage_id": ..., \
"text": ...}]}]}. For every claim decide:
- SUPPORTED: at least one cited passage entails the claim exactly as written. Every part of the claim, including \
numbers, dates, names and qualifiers, must follow from the cited text alone.
- UNSUPPORTED: no cited passage entails the claim as written. Partial support (a passage supports only a weaker \
or narrower claim, or only part of it) is UNSUPPORTED. A passage that is merely on the same topic is UNSUPPORTED. \
A citation with empty text names a passage that was never sent: it supports nothing.
Do not use outside knowledge, and do not judge whether the claim is true: judge only whether the cited text \
entails it.

Reply with one JSON object and nothing else: {"verdicts": [{"id": <the claim's id>, "label": "SUPPORTED" or \
"UNSUPPORTED", "reason": <one or two sentences quoting or naming what supports the claim, or what is missing>}]}, \
one verdict per claim, with the claim's id exactly as given."""


def prompt_sha256(prompt: str = JUDGE_PROMPT) -> str:
    """SHA-256 (hex) of the prompt's UTF-8 bytes: two judge runs with the same hash asked the same question."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_TEMPERATURE = 0.0
API_KEY_VARIABLES = ("CITELAB_OPENAI_API_KEY", "OPENAI_API_KEY")
BASE_URL_VARIABLE = "CITELAB_OPENAI_BASE_URL"


def api_key_from_env() -> str:
    """The key from ``CITELAB_OPENAI_API_KEY``, else ``OPENAI_API_KEY``, else
    ``""`` (a self-hosted server often needs none; the client then sends a
    placeholder)."""
    for name in API_KEY_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return ""


def base_url_from_env() -> str:
    """``CITELAB_OPENAI_BASE_URL`` or ``""`` (the client's default endpoint)."""
    return os.environ.get(BASE_URL_VARIABLE, "").strip()


@dataclass(frozen=True)
class ClaimToJudge:
    """One claim in a request: ``id`` (str, unique in the request), its text and
    its citations as ``{"passage_id": str, "text": str}`` (text ``""`` for a
    fabricated citation)."""

    id: str
    text: str
    citations: list[dict[str, str]]


@dataclass(frozen=True)
class Verdict:
    """One usable verdict: ``label`` in :data:`JUDGE_LABELS`, ``reason`` (may be empty)."""

    label: str
    reason: str


@dataclass
class ParsedReply:
    """A reply matched to the request's claim ids.

    ``verdicts``: claim id → :class:`Verdict` for the claims with exactly one
    well-formed verdict. ``missing``, ``duplicated``, ``malformed``: claim ids
    of the request left unlabeled for that reason (in request order).
    ``unknown``: how many verdicts named an id not in the request, or no id.
    ``problems``: why verdicts were malformed, one sentence each, where the
    reason is worth keeping (a reason breaking the text rules).
    """

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    unknown: int = 0
    problems: list[str] = field(default_factory=list)


class JudgeReplyError(ValueError):
    """The reply is not a JSON object with a ``verdicts`` list: the answer fails, nothing is written."""


class JudgeRequestError(RuntimeError):
    """The request failed after the client's retries (HTTP error, timeout, connection refused).

    The message names the endpoint and the status, never the API key.
    """


def request_body(question: str, claims: list[ClaimToJudge]) -> dict[str, Any]:
    """The JSON object of the request's user message (module docstring)."""
    return {
        "question": question,
        "claims": [{"id": claim.id, "text": claim.text, "citations": claim.citations} for claim in claims],
    }


def request_messages(question: str, claims: list[ClaimToJudge], *, prompt: str = JUDGE_PROMPT) -> list[dict]:
    """The chat messages of one request: the system prompt, then the claims as a JSON user message (last)."""
    return [
        {"role": "system", "content": prompt},
        {"role": "user", "content": json.dumps(request_body(question, claims), ensure_ascii=False)},
    ]


def _verdict_id(raw: Any) -> str | None:
    """A verdict's id as the request spelled it: a string, or an integer a model wrote without quotes."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, int):
        return str(raw)
    return None


def parse_reply(content: str | None, claim_ids: list[str]) -> ParsedReply:
    """Match the reply ``content`` to ``claim_ids`` (module docstring).

    Raises :class:`JudgeReplyError` when ``content`` is not a JSON object whose
    ``verdicts`` is a list (prose, a bare list, an empty reply, JSON nested
    deeper than the parser's recursion limit).
    """
    if content is not None and not isinstance(content, str):
        raise JudgeReplyError(f"the reply's message is not text but {type(content).__name__}")
    text = (content or "").strip()
    if text.startswith("```"):
        # A fenced block is still the JSON object the prompt asked for.
        text = text.strip("`").removeprefix("json").strip()
    try:
        reply = json.loads(text)
    except ValueError:
        raise JudgeReplyError(f"the reply is not JSON (it begins {_shown(content)})") from None
    except RecursionError:
        raise JudgeReplyError("the reply is JSON nested too deep to read") from None
    if not isinstance(reply, dict) or not isinstance(reply.get("verdicts"), list):
        raise JudgeReplyError('the reply is not a JSON object with a "verdicts" list')
    asked = set(claim_ids)
    seen = Counter()
    usable: dict[str, Verdict] = {}
    broken: set[str] = set()
    parsed = ParsedReply()
    for item in reply["verdicts"]:
        claim_id = _verdict_id(item.get("id")) if isinstance(item, dict) else None
        if claim_id is None or claim_id not in asked:
            parsed.unknown += 1
            continue
        seen[claim_id] += 1
        label, reason = item.get("label"), item.get("reason", "")
        if isinstance(label, str) and label.strip().upper() in JUDGE_LABELS and isinstance(reason, str | None):
            problem = text_problem(reason or "")
            if problem:
                # A justification's rule (labeling.names): stored, it would break PostgreSQL or the export.
                broken.add(claim_id)
                parsed.problems.append(f"claim {claim_id}: the reason {problem}")
                continue
            usable[claim_id] = Verdict(label.strip().upper(), (reason or "").strip())
        else:
            broken.add(claim_id)
    for claim_id in claim_ids:
        if seen[claim_id] == 0:
            parsed.missing.append(claim_id)
        elif seen[claim_id] > 1:
            parsed.duplicated.append(claim_id)
        elif claim_id in broken:
            parsed.malformed.append(claim_id)
        else:
            parsed.verdicts[claim_id] = usable[claim_id]
    return parsed


def _shown(content: str | None, limit: int = 80) -> str:
    """The beginning of a reply, quoted, for an error message (control characters escaped by ``repr``)."""
    return repr((content or "").strip()[:limit])


def _message_content(completion: Any) -> str | None:
    """The assistant message's content of a chat completion, or JudgeReplyError
    when the reply is not one: the ``openai`` client hands back the body as
    text when it is not announced as JSON (an HTML error page of a proxy)."""
    if isinstance(completion, str):
        raise JudgeReplyError(f"the reply is not JSON but a page of text (it begins {_shown(completion)})")
    try:
        choices = completion.choices or []
        message = choices[0].message if choices else None
        return message.content if message else None
    except (AttributeError, TypeError, IndexError, KeyError):
        raise JudgeReplyError("the reply is JSON but not a chat completion (no choices[0].message)") from None


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where and how to ask: ``model``, ``base_url`` (``""``: the client's
    default), ``temperature``, ``timeout`` (seconds per attempt),
    ``max_retries`` (retries after the first attempt), ``prompt``."""

    model: str
    base_url: str = ""
    temperature: float = DEFAULT_TEMPERATURE
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    prompt: str = JUDGE_PROMPT


class JudgeClient:
    """Sends one answer's claims to ``endpoint`` and parses the verdicts.

    ``api_key``: ``None`` reads :func:`api_key_from_env`. The key lives only in
    the ``openai`` client's request headers.
    """

    def __init__(self, endpoint: JudgeEndpoint, *, api_key: str | None = None):
        import openai

        self.endpoint = endpoint
        key = api_key if api_key is not None else api_key_from_env()
        self._client = openai.OpenAI(
            api_key=key or "no-key", base_url=endpoint.base_url or None,
            timeout=endpoint.timeout, max_retries=endpoint.max_retries,
        )

    def judge(self, question: str, claims: list[ClaimToJudge]) -> ParsedReply:
        """Ask about ``claims`` of one answer; the parsed reply.

        Raises :class:`JudgeRequestError` when the request failed after the
        retries, :class:`JudgeReplyError` when the reply is not a chat
        completion (an HTML page, a body that is not JSON or too deeply nested
        to read) or its message is not the JSON object asked for.
        """
        import openai

        where = self.endpoint.base_url or "the default endpoint"
        try:
            completion = self._client.chat.completions.create(
                model=self.endpoint.model,
                messages=request_messages(question, claims, prompt=self.endpoint.prompt),
                temperature=self.endpoint.temperature,
                response_format={"type": "json_object"},
            )
        except openai.APITimeoutError:
            raise JudgeRequestError(f"no reply from {where} within {self.endpoint.timeout:g} s "
                                    f"(after {self.endpoint.max_retries} retries)") from None
        except openai.APIConnectionError:
            raise JudgeRequestError(f"could not connect to {where}") from None
        except openai.APIStatusError as exc:
            raise JudgeRequestError(f"{where} answered HTTP {exc.status_code}"
                                    + (f" (after {self.endpoint.max_retries} retries)"
                                       if exc.status_code == 429 or exc.status_code >= 500 else "")) from None
        except openai.OpenAIError as exc:
            raise JudgeRequestError(f"the request to {where} failed ({type(exc).__name__})") from None
        except RecursionError:
            raise JudgeReplyError(f"the reply from {where} is JSON nested too deep to read") from None
        except ValueError:
            # The client parses a body announced as JSON itself: a truncated or garbled one lands here.
            raise JudgeReplyError(f"the reply from {where} is not JSON") from None
        return parse_reply(_message_content(completion), [claim.id for claim in claims])
