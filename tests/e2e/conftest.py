"""Browser fixtures for the e2e tests (marker ``e2e``): Debian's Chromium driven
through Playwright's sync API against pytest-django's ``live_server``.

- ``browser``: one Chromium per test module (skips, saying why, when
  ``/usr/bin/chromium`` is absent — the only skip of the suite);
- ``page``: a fresh browser context and page, 1280×800, that fails the test on
  any JavaScript error of the page (the Content-Security-Policy bypassed, as
  Playwright's ``wait_for_function`` needs ``eval``); every wait (``expect``
  included) gives up after ``BROWSER_WAIT_MS`` (tests/waiting.py: a busy
  machine swaps slowly), and ``goto``/``reload`` return once a review page
  takes keys (``ready_after_navigation``);
- ``strict_page``: the same under the app's policy, failing on any violation;
- ``logged_in_page``: ``page`` logged in through the login form as the
  ``reviewer`` fixture (``alice``). Make ``alice`` a member of the project the
  test opens (``project.members.add(reviewer)``).

Helpers for the review page: ``review_url``, ``panel_claim`` (the claim on
screen), ``wait_for_htmx`` and ``wait_for_claim_after``.

Playwright's sync API runs an event loop in the test's thread, so Django's ORM
would refuse to run there; this is the only place that allows it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.urls import reverse

from tests.waiting import BROWSER_WAIT_MS

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 800}
PASSWORD = "pw-for-tests-1"  # the ``reviewer`` fixture's password (tests/conftest.py)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """A headless Chromium for the module's tests (closed at the end of the module,
    so another module may start its own Playwright)."""
    if not CHROMIUM.exists():
        pytest.skip("browser tests need Debian's Chromium at /usr/bin/chromium, which is absent here")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=BROWSER_WAIT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _page(browser, *, bypass_csp: bool) -> Iterator:
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True, bypass_csp=bypass_csp)
    context.set_default_timeout(BROWSER_WAIT_MS)  # for every page of the context (a second tab too)
    page = context.new_page()
    ready_after_navigation(page)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and ("Content Security Policy" in message.text
                                            or "evalDisallowed" in message.text) else None)
    yield page
    context.close()
    assert errors == [], f"JavaScript errors or CSP violations on the page: {errors}"


@pytest.fixture
def page(browser) -> Iterator:
    """A new page in its own context; JavaScript errors on the page fail the test.

    The app's Content-Security-Policy is bypassed here: Playwright's
    ``wait_for_function`` evaluates its expression with ``eval``, which the
    policy forbids. ``strict_page`` keeps the policy (tests/e2e/test_csp_e2e.py)."""
    yield from _page(browser, bypass_csp=True)


@pytest.fixture
def strict_page(browser) -> Iterator:
    """``page`` under the app's Content-Security-Policy: any violation (an inline
    script or style, an eval) fails the test, as a JavaScript error does. Wait with
    ``expect`` or locators, not ``wait_for_function`` (an eval)."""
    yield from _page(browser, bypass_csp=False)


@pytest.fixture
def logged_in_page(live_server, reviewer, page):
    """``page`` after logging in as ``reviewer`` through the login form."""
    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + reverse("project_list"))
    return page


def ready_after_navigation(page) -> None:
    """Make ``page.goto`` and ``page.reload`` return only once the page takes keys:
    no ``main[aria-busy=true]`` (static/js/app.js sets it on a review page until the
    claim is painted; other pages never have it). A key pressed before that is
    ignored by design, so a test must not race it. A locator wait, no ``eval``:
    it works under the app's Content-Security-Policy too."""
    for name in ("goto", "reload"):
        navigate = getattr(page, name)

        def then_ready(*args, _navigate=navigate, **kwargs):
            response = _navigate(*args, **kwargs)
            page.locator("main[aria-busy=true]").wait_for(state="detached")
            return response

        setattr(page, name, then_ready)


def review_url(run, answer, claim=None) -> str:
    """The review page of ``answer`` in ``run``, opened at ``claim`` when given."""
    url = reverse("answer_review", kwargs={"project_slug": run.project.slug, "run_name": run.name,
                                           "answer_id": answer.pk})
    return url + (f"?claim={claim.pk}" if claim is not None else "")


def panel_claim(page) -> int:
    """Id of the claim the review page's panel shows."""
    return int(page.get_attribute("#claim-panel", "data-claim"))


def wait_for_htmx(page, *, painted: bool = False) -> None:
    """Wait until no htmx request, swap or settle is under way; with ``painted``, also
    until the page has painted the claim (``main[aria-busy]`` cleared: keys pressed
    before that are ignored)."""
    busy = ".htmx-request, .htmx-swapping, .htmx-settling" + (", main[aria-busy=true]" if painted else "")
    page.wait_for_function(f"!document.querySelector('{busy}')")


def wait_for_claim_after(page, claim_id: int) -> int:
    """Wait until the claim panel shows another claim than ``claim_id`` and the page is
    ready for the next keystroke; return the new claim's id."""
    page.wait_for_function(f"document.querySelector('#claim-panel').dataset.claim !== '{claim_id}'")
    wait_for_htmx(page, painted=True)
    return panel_claim(page)
