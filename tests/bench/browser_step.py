"""Key press → next claim on screen, in a real browser (issue 24, target 2: ≤ 50 ms p95).

Run (from the repository root)::

    .venv/bin/python -m tests.bench.browser_step --database sqlite
    .venv/bin/python -m tests.bench.browser_step --database postgres --steps 200 --think 0.3
    .venv/bin/python -m tests.bench.browser_step --database sqlite --without-ahead

What it does, in order:

1. The database and server of tests/bench/load.py (``prepare``, ``start_server``): a
   fresh SQLite file or PostgreSQL database, the generated 50,004-claim project
   imported, one reviewer, ``gunicorn labeling.wsgi`` with 2 sync workers.
2. Debian's Chromium through Playwright (never ``playwright install``) logs in through
   the login form and opens the reviewer's next claim (``run_next``), as a person does.
3. ``--steps`` times: wait until the page takes keys (``main[aria-busy]`` cleared),
   give the reviewer ``--think`` seconds to read the claim (the page fetches the next
   claim meanwhile), press ``1``. A script of the page notes ``performance.now()`` at
   the keydown (capture phase, before the page's own handler) and when ``#claim-panel``
   first shows another claim (a MutationObserver: the panel is in the DOM), and the
   next animation frame after it (the frame that paints it). It also notes when the
   save was answered (``main[aria-busy]`` cleared).
4. Afterwards every claim the page moved past must carry the reviewer's current
   SUPPORTED label in the database: a missing one is a lost label.

Printed: key → panel in the DOM, key → its frame, key → save answered (p50/p95/max
ms), how many steps found the next claim held ready, lost labels, the load average
before and after. The figure of target 2 is "key → panel in the DOM".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tests.bench.load import (
    PASSWORD,
    PROJECT,
    ROOT,
    RUN,
    django_env,
    drop_database,
    fresh_database,
    load_average,
    prepare,
    start_server,
    stop_server,
    summarize,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
WAIT_MS = 60_000

# Runs in the page before its own scripts: times each "1" from keydown to the next claim's panel.
STEP_CLOCK = """
window.__steps = [];
document.addEventListener("keydown", function (event) {
  if (event.key !== "1") { return; }
  var panel = document.getElementById("claim-panel");
  window.__pending = { t0: performance.now(), from: panel ? panel.dataset.claim : "",
                       ahead: Boolean(panel && panel.dataset.ahead) };
}, true);
new MutationObserver(function () {
  var step = window.__pending;
  var panel = document.getElementById("claim-panel");
  if (!step || step.dom !== undefined || !panel || panel.dataset.claim === step.from) { return; }
  step.dom = performance.now() - step.t0;
  requestAnimationFrame(function () { step.frame = performance.now() - step.t0; });
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-claim"] });
new MutationObserver(function () {
  var step = window.__pending;
  var main = document.querySelector("main");
  if (!step || step.dom === undefined || step.answered !== undefined || !main
      || main.getAttribute("aria-busy") === "true") { return; }
  step.answered = performance.now() - step.t0;
  step.to = document.getElementById("claim-panel").dataset.claim;
  window.__steps.push(step);
  window.__pending = null;
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["aria-busy"] });
"""


def drive(port: int, username: str, steps: int, think: float, *, ahead: bool = True) -> list[dict]:
    """Log in as ``username`` in Chromium, open the next claim, label ``steps`` claims
    SUPPORTED with the key ``1``; returns the page's step records. Without ``ahead``
    the page's fetches of the next claim fail (the route aborts them), so every key
    takes the path of a page without the claim held ready: the figure before."""
    from playwright.sync_api import sync_playwright

    base = f"http://127.0.0.1:{port}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The clock is a script of the test, not of the app: the app's CSP does not apply to it.
        context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        page.add_init_script(STEP_CLOCK)
        if not ahead:
            page.route("**/claims/*/next/", lambda route: route.abort())
        page.goto(f"{base}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        page.goto(f"{base}/p/{PROJECT}/runs/{RUN}/next/")
        for done in range(steps):
            page.locator("main[aria-busy=true]").wait_for(state="detached")
            page.wait_for_timeout(think * 1000)  # the reviewer reads the claim
            page.keyboard.press("1")
            page.wait_for_function(f"window.__steps.length > {done}")
        records = page.evaluate("window.__steps")
        browser.close()
    return records


def lost(records: list[dict], username: str) -> int:
    """Claims the page moved past without the reviewer's current SUPPORTED label on them."""
    from django.db import connection

    from labeling.models import Label

    connection.close()
    saved = set(Label.objects.filter(reviewer__username=username, is_current=True, value="SUPPORTED")
                .values_list("claim_id", flat=True))
    return sum(1 for record in records if int(record["from"]) not in saved)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="sqlite")
    parser.add_argument("--postgres-url", default=os.environ.get("CITELAB_LOAD_POSTGRES_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--think", type=float, default=0.3, help="seconds the reviewer reads each claim")
    parser.add_argument("--answers", type=int, default=8_334, help="answers of 6 claims (default: 50,004 claims)")
    parser.add_argument("--port", type=int, default=8310)
    parser.add_argument("--without-ahead", action="store_true",
                        help="the page cannot fetch the next claim (the figure before it was held ready)")
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="citelab-browser-step-"))
    db_name = f"citelab_browser_step_{os.getpid()}"
    env = django_env(fresh_database(args.database, args.postgres_url, db_name, folder))
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    server = None
    try:
        setup = prepare(args.answers, 1, folder)
        server = start_server(args.port, 2, env, folder / "gunicorn.log")
        before = load_average()
        records = drive(args.port, setup["usernames"][0], args.steps, args.think, ahead=not args.without_ahead)
        after = load_average()
        missing = lost(records, setup["usernames"][0])
    finally:
        if server is not None:
            stop_server(server)
        from django.db import connection

        connection.close()
        if args.database == "postgres":
            drop_database(args.postgres_url, db_name)
    result = {
        "database": args.database, "claims": setup["claims"], "steps": len(records), "think_s": args.think,
        "key_to_panel_ms": summarize([r["dom"] for r in records]),
        "key_to_frame_ms": summarize([r["frame"] for r in records if "frame" in r]),
        "key_to_answered_ms": summarize([r["answered"] for r in records]),
        "held_ready": sum(1 for r in records if r["ahead"]), "lost_labels": missing,
        "load_average_before": before, "load_average_after": after,
    }
    dom, frame, answered = result["key_to_panel_ms"], result["key_to_frame_ms"], result["key_to_answered_ms"]
    print(f"[browser-step] {result['database']}, {result['claims']:,} claims, {result['steps']} steps, think "
          f"{args.think} s{', next claim NOT held ready' if args.without_ahead else ''}, load average {before} → "
          f"{after}")
    print(f"[browser-step] key → next claim's panel in the DOM: p50 {dom['p50']} ms, p95 {dom['p95']} ms, "
          f"max {dom['max']} ms (target p95 ≤ 50 ms)")
    print(f"[browser-step] key → its frame: p50 {frame['p50']} ms, p95 {frame['p95']} ms, max {frame['max']} ms")
    print(f"[browser-step] key → save answered: p50 {answered['p50']} ms, p95 {answered['p95']} ms, "
          f"max {answered['max']} ms")
    print(f"[browser-step] next claim held ready at {result['held_ready']} of {result['steps']} key presses; "
          f"lost labels: {missing}")
    return result


if __name__ == "__main__":
    main()
