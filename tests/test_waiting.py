"""The suite's one way of waiting (tests/waiting.py, SPEC §7): a server that
accepts a connection and does not answer in time (a gunicorn worker still
booting on a busy machine) is "not yet", not a failure. The production test's
old loop retried ``URLError`` and ``ConnectionError`` only, and a read timeout
is neither: it failed the README's test command at load 5–8."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request

import pytest

from tests.waiting import until, wait_for


@pytest.fixture
def booting_server():
    """A loopback HTTP server whose first connection is accepted and never answered;
    every later one gets ``200 ok``. Yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            if not held:
                held.append(connection)  # booting: read nothing, answer nothing
                continue
            with connection:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    stop.set()
    listener.close()
    for connection in held:
        connection.close()
    thread.join(timeout=60)


def test_a_read_timeout_while_the_server_boots_is_retried_until_it_answers(booting_server):
    """Attempt 1 is accepted and times out reading (TimeoutError: not a URLError,
    not a ConnectionError, so the old loop raised it); a later attempt reads "ok"."""
    errors: list[BaseException] = []

    def attempt() -> bytes:
        try:
            with urllib.request.urlopen(booting_server, timeout=0.3) as response:
                return response.read()
        except OSError as error:
            errors.append(error)
            raise

    assert wait_for(attempt, what="the booting server", pause=0.05) == b"ok"
    assert isinstance(errors[0], TimeoutError)
    assert not isinstance(errors[0], urllib.error.URLError | ConnectionError)


def test_waiting_stops_when_the_server_is_gone_and_names_why():
    calls = []

    def refused() -> None:
        calls.append(1)
        raise ConnectionRefusedError("nobody listens")

    with pytest.raises(AssertionError, match="gunicorn answering: gunicorn exited: no module named app"):
        wait_for(refused, what="gunicorn answering", gone=lambda: "gunicorn exited: no module named app")
    assert len(calls) == 1


def test_other_errors_propagate_and_a_deadline_names_the_last_error():
    with pytest.raises(ValueError, match="a real bug"):
        wait_for(lambda: int("a real bug"), what="parsing")
    with pytest.raises(AssertionError, match=r"the port: still not done after 0.2 s \(last: TimeoutError: slow"):
        wait_for(lambda: (_ for _ in ()).throw(TimeoutError("slow")), what="the port", seconds=0.2, pause=0.05)
    with pytest.raises(AssertionError, match="the flag: still not true after 0.1 s"):
        until(lambda: False, what="the flag", seconds=0.1, pause=0.02)
    flips = iter([False, False, True])
    until(lambda: next(flips), what="the flag", pause=0.01)
    assert next(flips, "done") == "done"
