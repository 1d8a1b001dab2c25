"""Waiting in tests without depending on an idle machine (SPEC §7).

On the 2-core machine the suite shares, a booting server, a worker thread or
a browser's swap can take many times longer than on an idle one (load 5–8).
Every wait of the suite therefore polls with a generous deadline and treats
every "not yet" as "try again": a refused connection, a reset, a read that
timed out because a worker is still importing Django (``TimeoutError`` is an
``OSError`` but neither a ``URLError`` nor a ``ConnectionError``), a reply cut
short. A deadline is a bound on a hung test, never a performance check: it
costs nothing when things go well.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# What a server that is still starting answers: refused, reset, timed out (all OSError,
# urllib's URLError and HTTPError included) or a half-sent reply (HTTPException).
NOT_YET: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)
# Seconds a test waits for a server, worker or page before it calls it hung.
BOOT_SECONDS = 180.0
# Seconds one request may take on a busy machine (a read timeout, not a target).
REQUEST_SECONDS = 60.0
# Milliseconds a browser test waits for a page, a swap or a text (Playwright's waits,
# ``expect`` included, whose own default is 5 s): at load 8 a swap can take seconds.
BROWSER_WAIT_MS = 60_000


def wait_for(attempt: Callable[[], T], *, what: str, seconds: float = BOOT_SECONDS,
             not_yet: tuple[type[BaseException], ...] = NOT_YET, pause: float = 0.25,
             gone: Callable[[], str | None] | None = None) -> T:
    """Call ``attempt()`` until it returns, and return its result.

    An exception of ``not_yet`` means "not yet": wait ``pause`` seconds and try
    again, until ``seconds`` have passed since the first call. ``gone()`` (when
    given) is asked after each failed attempt and returns why waiting is
    pointless (a server process that exited, with its output), or ``None``.

    Raises AssertionError naming ``what`` with the last "not yet" error (after
    the deadline) or with ``gone()``'s reason; any other exception of
    ``attempt`` propagates at once.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            return attempt()
        except not_yet as error:
            last = error
        reason = gone() if gone is not None else None
        if reason:
            raise AssertionError(f"{what}: {reason}") from last
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: still not done after {seconds:g} s "
                                 f"(last: {type(last).__name__}: {last})") from last
        time.sleep(pause)


def until(condition: Callable[[], object], *, what: str, seconds: float = BOOT_SECONDS,
          pause: float = 0.2) -> None:
    """Poll ``condition()`` every ``pause`` seconds until it is true.

    Raises AssertionError naming ``what`` when it is still false after ``seconds``.
    """
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: still not true after {seconds:g} s")
        time.sleep(pause)
