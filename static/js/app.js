// Keyboard shortcuts live here (STYLE §4); pages work without this file.

// ---- Labeling screen (answer_review.html) ----
// 1 SUPPORTED (saves and moves on) · 2 UNSUPPORTED (type why, Enter saves) ·
// j/k next/previous claim · n next unlabeled claim of the run · e justification ·
// u undo · s split · t edit the claim text · m merge with the next claim · g guidelines · ? help.
// Every key clicks or focuses an element of the page (data-shortcut), so the page
// keeps working without this file.
//
// A key applies to the claim on screen when it was pressed, or is ignored, and the
// page says so. Keys are never queued for later: while a request of the review is
// in flight, and until the claim that answers it has been painted, the claim a key
// would land on is one the reviewer has not seen.
//
// The next claim held ready: once a claim is shown, the page fetches the review of
// the claim the queue would hand out after it (claim_next, nothing reserved). A label
// saved then shows that claim at once and the save goes on behind it, sent from
// #save-channel (outside #review, so the swap leaves it in place). The server answers
// "Citelab-Ack: <claim>" when its queue handed out that very claim, unchanged (the rest
// comes out of band); any other answer, an error or no answer puts the claim saved back
// on screen first, and then goes as without the claim held ready: the server's claim
// (a conflict, the claim it does hand out) or the reason it was not saved. Until the
// answer, the claim shown says it is saving and keys on it are ignored.
(function () {
  "use strict";
  // A 409 (the claim or label changed since the page was rendered) carries the
  // review with the conflict explained: swap it in as a 200 would be.
  if (window.htmx) { window.htmx.config.responseHandling.unshift({code: "409", swap: true, error: false}); }
  var TYPING = "input, textarea, select, [contenteditable=''], [contenteditable='true']";
  // Elements that Enter activates by itself (a link, a button): Enter there is theirs.
  var ACTIVATES = "a[href], button, summary, select";
  // Keys that act on the claim shown (everything but ? and Esc).
  var CLAIM_KEYS = ["1", "2", "e", "j", "k", "n", "u", "s", "t", "m", "0", "f", "p", "x", "c", "v", "a", "Enter"];
  var busy = null;        // the XHR of the review request being answered: set until its swap settles
  var requesting = null;  // the same, until its response is in (clicks wait only for this)
  var shown = false;      // the claim panel has been painted since it last changed
  var statusTimer = null;
  var ahead = null;       // the next claim held ready: {after, claim, revision, swap, html}
  var aheadAsked = null;  // the claim whose next claim is being fetched
  var saving = null;      // a save sent with the next claim shown: {xhr, claim, undo: [[shown, taken back]], title}

  // <main aria-busy="true"> while keys would be ignored: assistive technology (and tests)
  // can tell when the claim on screen takes keys again.
  function markBusy() {
    var main = document.querySelector("main");
    if (main) { main.setAttribute("aria-busy", String(Boolean(busy) || !shown)); }
  }

  function byShortcut(key) {
    return document.querySelector('#claim-panel [data-shortcut="' + key + '"]') ||
      document.querySelector('[data-shortcut="' + key + '"]');
  }
  function labelForm() { return document.getElementById("label-form"); }
  function judgeForm() { return document.getElementById("judge-form"); }
  function justificationOf(form) { return form.querySelector("textarea[name=justification]"); }
  function shownClaim() {
    var panel = document.getElementById("claim-panel");
    return panel ? panel.dataset.claimIndex || "" : "";
  }

  function hint(form, text) {
    var node = form.querySelector("[data-armed-hint]");
    if (node) { node.textContent = text; }
  }

  // A short message beside the label form that outlives the panel swaps (it sits
  // outside #review): why a key did nothing, or why a save failed.
  function status(text) {
    var node = document.getElementById("key-status");
    if (!node) { return; }
    node.textContent = text;
    node.hidden = false;
    clearTimeout(statusTimer);
    statusTimer = setTimeout(function () { node.hidden = true; }, 4000);
  }

  function ignored(key) {
    var node = document.getElementById("key-status");
    if (node) { node.dataset.ignored = String(Number(node.dataset.ignored || 0) + 1); }
    var what = key === "Enter" ? "Enter" : "“" + key + "”";
    status(saving
      ? "Key " + what + " ignored: the label of claim " + saving.index + " is still being saved. " +
        "Press it again on claim " + shownClaim() + " in a moment."
      : busy
      ? "Key " + what + " ignored: claim " + shownClaim() + " is still being saved or loaded. " +
        "Press it again on the claim shown next."
      : "Key " + what + " ignored: the next claim was still appearing. Press it again now that it is shown.");
  }

  // The label being given with a justification (2, or 1 where SUPPORTED needs one,
  // or the reviewer's own label while they edit its text). The text typed while a
  // label is armed belongs to that label: Esc, or choosing the other label, puts
  // back the justification saved on the claim, so no save carries a text written
  // for another label.
  function arm(form, value, focus) {
    if (form.dataset.armed && form.dataset.armed !== value) { restoreSaved(form); }
    form.dataset.armed = value;
    showArmed(form);
    if (focus) { focusJustification(form); }
  }

  function disarm(form) {
    delete form.dataset.armed;
    restoreSaved(form);
    showArmed(form);
  }

  function restoreSaved(form) {
    var area = justificationOf(form);
    if (area) { area.value = area.dataset.saved || ""; }
  }

  function showArmed(form) {
    var value = form.dataset.armed || "";
    form.classList.toggle("armed", Boolean(value));
    form.classList.toggle("armed-SUPPORTED", value === "SUPPORTED");
    form.querySelectorAll("button[name=value]").forEach(function (button) {
      button.classList.toggle("armed", button.value === value);
    });
    var conflict = form.querySelector(".conflict");
    hint(form, !value ? "Press 1 for SUPPORTED, 2 for UNSUPPORTED."
      : conflict ? "Enter saves " + value + " with your justification in place of the newer label · " +
        "Esc keeps the newer label."
      : "Enter saves " + value + " with this justification and moves on · Esc cancels.");
  }

  function focusJustification(form) {
    var area = justificationOf(form);
    if (!area) { return; }
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  }

  function chosenValue(form) {
    var chosen = form.querySelector("button[name=value].chosen");
    return chosen ? chosen.value : "";
  }

  function save(form, value) {
    var button = form.querySelector('button[name=value][value="' + value + '"]');
    if (!button) { return; }
    // Acknowledged: the pressed button shows it is saving until the answer comes.
    button.classList.add("sending");
    if (form.id === "label-form" && saveAhead(form, button)) { return; }
    button.click();
  }

  // ---- The next claim held ready (see the top of this file) ----
  function fetchAhead() {
    ahead = null;
    var panel = document.getElementById("claim-panel");
    var url = panel && panel.dataset.nextUrl;
    if (!url || !window.fetch || !window.htmx) { aheadAsked = null; return; }
    var after = panel.dataset.claim;
    aheadAsked = after;
    fetch(url, { credentials: "same-origin" }).then(function (response) {
      // Only the claim_next fragment itself (a session that ended is redirected to the login page).
      if (response.status !== 200 || response.redirected || !response.headers.get("Citelab-Next-Claim")) {
        return null;
      }
      return response.text().then(function (html) {
        return { after: after, html: html, claim: response.headers.get("Citelab-Next-Claim"),
                 state: response.headers.get("Citelab-Next-State"),
                 swap: response.headers.get("Citelab-Next-Swap") };
      });
    }).then(function (ready) {
      // Kept only while the claim it follows is still the one shown, and no save is on its way.
      if (ready && aheadAsked === after && shownId() === after && !busy) {
        ahead = ready;
        // Says which claim is held ready (tests, and anyone reading the page's markup).
        document.getElementById("claim-panel").dataset.ahead = ready.claim;
      }
    }).catch(function () { /* offline: the save takes the usual path */ });
  }

  function shownId() {
    var panel = document.getElementById("claim-panel");
    return panel ? panel.dataset.claim || "" : "";
  }

  // Puts the claim held ready on screen; returns the swaps to take back.
  function showAhead(ready) {
    var holder = document.createElement("template");
    holder.innerHTML = ready.html;
    var undo = [];
    Array.prototype.slice.call(holder.content.children).forEach(function (node) {
      var old = node.id && document.getElementById(node.id);
      if (!old) { return; }  // the <title>: the answer to the save brings it
      node.removeAttribute("hx-swap-oob");
      old.replaceWith(node);
      undo.push([node, old]);
      window.htmx.process(node);
    });
    return undo;
  }

  function takeBack() {
    if (!saving) { return; }
    saving.undo.slice().reverse().forEach(function (pair) { pair[0].replaceWith(pair[1]); });
    saving = null;
  }

  function saveAhead(form, button) {
    var panel = document.getElementById("claim-panel");
    if (!ahead || !panel || ahead.after !== panel.dataset.claim || busy || !shown) { return false; }
    // A save the server would refuse for its text alone, or one answering a conflict, shows its reason here.
    var text = (justificationOf(form) || {}).value || "";
    var needsText = button.value === "UNSUPPORTED" || form.dataset.requireSupported === "true";
    if (form.querySelector(".conflict") || (needsText && !text.trim())) { return false; }
    var values = {};
    new FormData(form).forEach(function (value, key) { values[key] = value; });
    values.value = button.value;
    values.prefetched = ahead.claim;
    values.prefetched_state = ahead.state;
    var ready = ahead;
    ahead = null;
    var saved = { claim: panel.dataset.claim, index: panel.dataset.claimIndex, value: button.value };
    var sent = window.htmx.ajax("POST", form.getAttribute("hx-post"),
      { source: document.getElementById("save-channel"), target: panel, swap: "outerHTML", values: values });
    // Its promise fails with the request: failed() has said why on the page by then.
    if (sent && sent.catch) { sent.catch(function () {}); }
    if (!busy) { return true; }  // htmx did not send it: the claim saved stays, and says why
    saving = { xhr: busy, claim: saved.claim, index: saved.index, undo: showAhead(ready) };
    button.classList.remove("sending");  // the claim saved leaves the screen (and is what the back button shows)
    var notice = document.getElementById("claim-notice");
    if (notice) {
      var line = document.createElement("p");
      line.className = "notice saving";
      line.setAttribute("role", "status");
      line.textContent = "Saving " + saved.value + " on claim " + saved.index + "…";
      notice.replaceChildren(line);
    }
    whenPainted();
    settle(document.getElementById(ready.swap === "review" ? "review" : "claim-panel"));
    return true;
  }

  function acknowledged(xhr) {
    return Boolean(saving && saving.xhr === xhr && xhr.getResponseHeader("Citelab-Ack") === saving.claim);
  }

  function swapPairs(pairs, back) {
    (back ? pairs.slice().reverse() : pairs).forEach(function (pair) {
      (back ? pair[0] : pair[1]).replaceWith(back ? pair[1] : pair[0]);
    });
  }

  // Just before it takes in the acknowledgement, htmx keeps a copy of the page for the back
  // button under the URL of the claim saved: let that copy show the claim saved, not the one
  // shown ahead. The claim ahead is back before the acknowledgement's out-of-band parts go in,
  // in the same task, so nothing of it is painted.
  document.addEventListener("htmx:beforeHistorySave", function () {
    if (!saving || !saving.acked || saving.inCopy) { return; }
    swapPairs(saving.undo, true);
    saving.inCopy = true;
  });
  function afterCopy() {
    if (saving && saving.inCopy) { swapPairs(saving.undo, false); saving.inCopy = false; }
  }
  document.addEventListener("htmx:pushedIntoHistory", afterCopy);
  document.addEventListener("htmx:replacedInHistory", afterCopy);
  // A page brought back by the back button takes keys and holds its next claim ready again.
  // A request of the review still on its way belongs to the page that was left: its answer
  // is only reported (abandoned), never swapped into this one nor allowed to move its address.
  var abandoned = null;
  document.addEventListener("htmx:historyRestore", function () {
    abandoned = busy;
    // Its events go to the page that was left (no longer in the document): listen on the request.
    if (abandoned) {
      abandoned.addEventListener("loadend", function () { reportAbandoned(this); });
    }
    saving = null;
    free();
    settle(document.body);
    fetchAhead();
  });
  document.addEventListener("htmx:beforeHistoryUpdate", function (event) {
    if (abandoned && event.detail.xhr === abandoned) {
      event.detail.history.type = "replace";
      event.detail.history.path = location.pathname + location.search;
    }
  });
  function reportAbandoned(xhr) {
    var saved = /Saved (\w+) on claim (\d+)/.exec(xhr.responseText || "");
    var type = xhr.getResponseHeader ? xhr.getResponseHeader("Content-Type") || "" : "";
    var text = type.indexOf("text/plain") === 0 && xhr.responseText.length < 400 ? " " + xhr.responseText : "";
    status(xhr.status >= 200 && xhr.status < 300 && saved
      ? "Saved " + saved[1] + " on claim " + saved[2] + " while you went back (the page shown is the earlier one)."
      : xhr.status ? "Not saved: the server answered " + xhr.status + "." + text
      : "Not saved: the server could not be reached.");
  }

  function saveArmed(form) {
    if (form.dataset.armed) { save(form, form.dataset.armed); }
    else { status("Choose the label first: Esc, then 1 (SUPPORTED) or 2 (UNSUPPORTED)."); }
  }

  function onJustificationKey(event, form) {
    var plainEnter = event.key === "Enter" && !event.shiftKey && !event.ctrlKey && !event.metaKey && !event.altKey;
    if (plainEnter) {
      event.preventDefault();
      if (busy || !shown) { ignored("Enter"); } else { saveArmed(form); }
    } else if (event.key === "Escape") {
      event.preventDefault();
      if (form.dataset.armed) { disarm(form); }
      event.target.blur();
    }
  }

  function onFormKey(event, form) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === "Escape") {
      var cancel = form.querySelector("[data-cancel]");
      if (cancel) { event.preventDefault(); cancel.click(); }
    }
  }

  function toggleDialog(id) {
    var dialog = document.getElementById(id);
    if (!dialog) { return; }
    if (dialog.open) { dialog.close(); return; }
    dialog.showModal();
    // The title has autofocus; should a browser focus Close instead, still open at the top.
    dialog.scrollTop = 0;
  }
  function toggleHelp() { toggleDialog("shortcut-help"); }
  // g: the project's labeling guidelines (SPEC §4.4), also in the ? help.
  function toggleGuidelines() { toggleDialog("guidelines-dialog"); }

  // ---- Judging each citation (projects with "judge citations" on; SPEC §4.3b) ----
  // f FULL · p PARTIAL · x NONE · c UNJUDGEABLE on the highlighted citation (then the
  // next one is highlighted) · ↓/↑ or Tab move · v evidence · a PARTIALs together
  // enough · Enter confirms the proposed label · 1/2 overrule it (type why, Enter saves).
  var JUDGMENT_KEYS = { f: "FULL", p: "PARTIAL", x: "NONE", c: "UNJUDGEABLE" };

  function judgments() { return Array.prototype.slice.call(document.querySelectorAll("#claim-panel fieldset.judgment")); }
  function activeJudgment() { return document.querySelector("#claim-panel fieldset.judgment.active"); }

  function activate(fieldset) {
    judgments().forEach(function (f) { f.classList.toggle("active", f === fieldset); });
    if (fieldset) { fieldset.scrollIntoView({ block: "nearest" }); }
  }

  function moveJudgment(step) {
    var all = judgments();
    if (!all.length) { return; }
    var at = all.indexOf(activeJudgment());
    activate(all[Math.max(0, Math.min(all.length - 1, at + step))]);
  }

  function judgedValue(fieldset) {
    var checked = fieldset.querySelector("input[type=radio]:checked");
    return checked ? checked.value : "";
  }

  // The label the judgments propose (scoring.judgments.proposed_label): "" until every citation is judged.
  function proposal() {
    var values = judgments().map(judgedValue);
    if (!values.length || values.indexOf("") >= 0) { return ""; }
    var form = judgeForm();
    var enough = form && form.querySelector("input[name=partials_enough]:checked");
    if (values.indexOf("FULL") >= 0 || (enough && values.indexOf("PARTIAL") >= 0)) { return "SUPPORTED"; }
    return "UNSUPPORTED";
  }

  function showProposal() {
    var node = document.querySelector("#judge-form [data-proposal]");
    if (!node) { return; }
    var value = proposal();
    node.textContent = value || "judge every citation";
    node.className = "badge " + (value || "pending");
    judgments().forEach(function (f) { f.classList.toggle("judged", Boolean(judgedValue(f))); });
  }

  function judge(value) {
    var fieldset = activeJudgment();
    if (!fieldset) { return; }
    var radio = fieldset.querySelector('input[type=radio][value="' + value + '"]');
    if (!radio || radio.disabled) {
      status("A fabricated citation can be NONE (x) or UNJUDGEABLE (c), never " + value + ".");
      return;
    }
    radio.checked = true;
    showProposal();
    var all = judgments();
    var next = all.slice(all.indexOf(fieldset) + 1).filter(function (f) { return !judgedValue(f); })[0] ||
      all.filter(function (f) { return !judgedValue(f); })[0];
    if (next) { activate(next); }
  }

  function confirmJudged(form) {
    if (!proposal()) { status("Judge every citation first (f, p, x or c on each), then Enter."); return; }
    var button = form.querySelector("button[data-confirm]");
    button.classList.add("sending");
    button.click();
  }

  function overrule(form, value) {
    if (value === proposal()) {
      // The same as the proposal: nothing to justify.
      var button = form.querySelector('button[name=value][value="' + value + '"]');
      button.classList.add("sending");
      button.click();
      return;
    }
    if (!proposal()) { status("Judge every citation first (f, p, x or c on each)."); return; }
    form.dataset.armed = value;
    hint(form, "The judgments propose " + proposal() + ": say why it is " + value + ", Enter saves · Esc cancels.");
    focusJustification(form);
  }

  function onJudgeTextKey(event, form) {
    var target = event.target;
    var plainEnter = event.key === "Enter" && !event.shiftKey && !event.ctrlKey && !event.metaKey && !event.altKey;
    if (target.name === "justification") {
      if (plainEnter) {
        event.preventDefault();
        if (busy || !shown) { ignored("Enter"); return; }
        var value = form.dataset.armed;
        if (value) { form.querySelector('button[name=value][value="' + value + '"]').click(); }
        else { confirmJudged(form); }
      } else if (event.key === "Escape") {
        event.preventDefault();
        delete form.dataset.armed;
        restoreSaved(form);
        target.blur();
      }
    } else if (plainEnter || event.key === "Escape") {
      // Evidence: Enter or Esc goes back to the keys, on the same citation.
      event.preventDefault();
      target.blur();
    }
  }

  function runJudge(key, event) {
    var form = judgeForm();
    if (JUDGMENT_KEYS[key]) { judge(JUDGMENT_KEYS[key]); return true; }
    switch (key) {
      case "ArrowDown": moveJudgment(1); return true;
      case "ArrowUp": moveJudgment(-1); return true;
      case "Tab": moveJudgment(event.shiftKey ? -1 : 1); return true;
      case "v":
        var fieldset = activeJudgment();
        var evidence = fieldset && fieldset.querySelector("input.evidence");
        if (evidence) { evidence.focus(); }
        return true;
      case "a":
        var box = form.querySelector("input[name=partials_enough]");
        box.checked = !box.checked;
        showProposal();
        return true;
      case "Enter":
        if (form.dataset.armed) { form.querySelector('button[name=value][value="' + form.dataset.armed + '"]').click(); }
        else { confirmJudged(form); }
        return true;
      case "1": overrule(form, "SUPPORTED"); return true;
      case "2": overrule(form, "UNSUPPORTED"); return true;
      case "e": focusJustification(form); return true;
      case "Escape":
        if (form.dataset.armed) { delete form.dataset.armed; restoreSaved(form); showProposal(); return true; }
        return false;
    }
    return false;
  }

  function initJudging() {
    if (!judgeForm()) { return; }
    var all = judgments();
    activate(all.filter(function (f) { return !judgedValue(f); })[0] || all[0] || null);
    showProposal();
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.form && target.form.id === "judge-form" && (target.type === "radio" || target.type === "checkbox")) {
      if (target.type === "radio") { activate(target.closest("fieldset.judgment")); }
      showProposal();
    }
  });

  // Returns true when the key was a shortcut of the review page.
  function run(key) {
    var form = labelForm();
    switch (key) {
      case "1":
        if (!form) { return true; }
        // Choosing SUPPORTED drops a justification typed for UNSUPPORTED.
        if (form.dataset.armed && form.dataset.armed !== "SUPPORTED") { disarm(form); }
        var area = justificationOf(form);
        if (form.dataset.requireSupported === "true" && area && !area.value.trim()) { arm(form, "SUPPORTED", true); }
        else { save(form, "SUPPORTED"); }
        return true;
      case "2":
        if (form) { arm(form, "UNSUPPORTED", true); }
        return true;
      case "e":
        // Edit the justification of the label you gave (Enter saves it with the same label).
        if (form) {
          if (!form.dataset.armed && chosenValue(form)) { arm(form, chosenValue(form), false); }
          focusJustification(form);
        }
        return true;
      case "Enter":
        // Armed with the text typed (e.g. the form came back after a conflict): save it.
        if (!form || !form.dataset.armed) { return false; }
        save(form, form.dataset.armed);
        return true;
      case "?":
        toggleHelp();
        return true;
      case "g":
        toggleGuidelines();
        return true;
      case "Escape":
        if (form && form.dataset.armed) { disarm(form); return true; }
        var cancel = document.querySelector("#claim-panel [data-cancel]");
        if (cancel) { cancel.click(); }
        return Boolean(cancel);
      case "j": case "k": case "n": case "u": case "s": case "t": case "m": case "0":
        var target = byShortcut(key);
        if (target) { target.click(); }
        return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("claim-panel") || event.defaultPrevented || event.isComposing) { return; }
    var target = event.target;
    var choosing = target.type === "radio" || target.type === "checkbox";
    if (target.closest && target.closest(TYPING) && !choosing) {
      var form = target.form || target.closest("form");
      if (!form) { return; }
      if (form.id === "judge-form") { onJudgeTextKey(event, form); }
      else if (form.id === "label-form" && target.name === "justification") { onJustificationKey(event, form); }
      else if (form.hasAttribute("data-submit-on-ctrl-enter")) { onFormKey(event, form); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "Enter" && target.closest && target.closest(ACTIVATES)) { return; }
    var help = document.getElementById("shortcut-help");
    if (help && help.open && event.key !== "?") { return; }
    var rules = document.getElementById("guidelines-dialog");
    if (rules && rules.open && event.key !== "g") { return; }
    if ((busy || !shown) && CLAIM_KEYS.indexOf(event.key) >= 0) {
      if (event.key !== "Enter" || (labelForm() && labelForm().dataset.armed) || judgeForm()) {
        event.preventDefault();
        ignored(event.key);
      }
      return;
    }
    if (judgeForm() && runJudge(event.key, event)) { event.preventDefault(); return; }
    if (run(event.key)) { event.preventDefault(); }
  });

  // Focusing the justification of a claim you labeled edits that label's text:
  // Enter saves it with the label shown as yours, never with another one.
  document.addEventListener("focusin", function (event) {
    var area = event.target;
    if (!area || area.name !== "justification" || !area.form || area.form.id !== "label-form") { return; }
    var form = area.form;
    if (!form.dataset.armed && chosenValue(form)) { arm(form, chosenValue(form), false); }
  });

  function inReview(element) { return element && element.closest && element.closest("#review, #save-channel"); }

  function free() {
    busy = requesting = null;
    document.querySelectorAll("#label-form .sending").forEach(function (b) { b.classList.remove("sending"); });
    markBusy();
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!inReview(event.detail.elt)) { return; }
    if (requesting) {
      // A click while another request of the review is in flight: the page it
      // would act on is about to change.
      event.preventDefault();
      status("Still saving or loading claim " + shownClaim() + ": that click was ignored. Click again on the claim shown next.");
      return;
    }
    busy = requesting = event.detail.xhr;
    ahead = aheadAsked = null;
    markBusy();
  });
  // The answer to a save sent with the next claim shown: anything but its acknowledgement
  // puts the claim saved back first, so htmx swaps the answer where it belongs.
  document.addEventListener("htmx:beforeOnLoad", function (event) {
    if (!saving || event.detail.xhr !== saving.xhr) { return; }
    if (acknowledged(event.detail.xhr)) { saving.acked = true; } else { takeBack(); }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.xhr !== busy) { return; }
    // htmx has swapped the response in by now (or will not).
    requesting = null;
    if (acknowledged(event.detail.xhr)) {
      afterCopy();
      saving = null;
      free();
      fetchAhead();
      return;
    }
    if (!event.detail.successful || event.detail.xhr.status === 204) { free(); }
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (busy && event.detail.xhr === busy) { whenPainted(); }
  });
  function failed(event) {
    var xhr = event.detail.xhr;
    if (!inReview(event.detail.elt)) { return; }
    takeBack();
    var type = xhr && xhr.getResponseHeader ? xhr.getResponseHeader("Content-Type") || "" : "";
    var text = xhr && xhr.status && type.indexOf("text/plain") === 0 && xhr.responseText.length < 400
      ? xhr.responseText : "";
    status(xhr && xhr.status
      ? "Not saved: the server answered " + xhr.status + ". " + (text || "Reload the page and try again.")
      : "Not saved: the server could not be reached. Check the connection and press the key again.");
    free();
  }
  document.addEventListener("htmx:responseError", failed);
  document.addEventListener("htmx:sendError", failed);

  // Keys count for a claim swapped in once it has been painted: the rendering step
  // that runs this frame callback paints before the browser handles another key.
  // (Asked at the swap, it is usually done before htmx settles the swap 20 ms later.)
  function whenPainted() {
    shown = false;
    markBusy();
    requestAnimationFrame(function () { shown = true; markBusy(); });
  }

  function settle(root) {
    var panel = document.getElementById("claim-panel");
    var form = labelForm();
    if (form && form.dataset.armed) {
      showArmed(form);
      if (form.querySelector(".conflict")) {
        // After a conflict, read the newer label before typing on: keys are shortcuts
        // again (Enter saves the armed label, 2 goes back to the text, Esc keeps the newer label).
        if (document.activeElement && document.activeElement.form === form) { document.activeElement.blur(); }
      } else {
        focusJustification(form);
      }
    }
    initJudging();
    var field = panel && panel.querySelector("[data-autofocus]");
    if (field) {
      field.focus();
      if (field.setSelectionRange) { field.setSelectionRange(field.value.length, field.value.length); }
    }
    if (root && root.id === "review") {
      // Another answer came in: start at its question, not where the last one was scrolled to.
      window.scrollTo({ top: 0 });
    } else if (panel && root !== document.body && panel.getBoundingClientRect().top < 0) {
      window.scrollTo({ top: window.scrollY + panel.getBoundingClientRect().top - 12 });
    }
    var answer = document.querySelector(".review-answer");
    var mark = document.querySelector(".claim-mark.current");
    if (answer && mark && getComputedStyle(answer).position === "sticky") {
      var box = answer.getBoundingClientRect();
      var spot = mark.getBoundingClientRect();
      if (spot.top < box.top || spot.bottom > box.bottom) {
        answer.scrollTop += spot.top - box.top - box.height / 3;
      }
    }
    // A page just loaded has no claim before it that a key could have been meant for.
    if (root === document.body) { shown = true; }
    markBusy();
  }

  // A label save or undo says how far the run bar moves (+1, 0 or -1): move it at once,
  // with no request. Other writes (splits, merges, edits) say nothing: the bar is then
  // reloaded through "progressStale" (an hx-trigger filter would need eval, which the CSP forbids).
  document.body.addEventListener("labelSaved", function (event) {
    var delta = event.detail && event.detail.labeled;
    var box = document.getElementById("run-progress");
    if (typeof delta !== "number") {
      if (box && window.htmx) { window.htmx.trigger(box, "progressStale"); }
      return;
    }
    if (!delta || !box) { return; }
    var bar = box.querySelector("progress");
    var text = box.querySelector(".metric");
    var parts = text ? text.textContent.split("/") : [];
    if (!bar || parts.length !== 2) { return; }
    var done = Math.max(0, Math.min(parseInt(parts[0], 10) + delta, parseInt(parts[1], 10)));
    bar.value = done;
    text.textContent = done + "/" + parts[1];
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (busy && event.detail.xhr !== busy) { return; }
    var id = event.detail.elt && event.detail.elt.id;
    // Out-of-band swaps (answer text, claim list) settle too: act once, on the panel or the whole review.
    if (id !== "claim-panel" && id !== "review") { return; }
    free();
    settle(event.detail.elt);
    fetchAhead();
  });
  document.addEventListener("DOMContentLoaded", function () { settle(document.body); fetchAhead(); });
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest('button[data-shortcut="?"]')) { toggleHelp(); }
  });
})();
// ---- end labeling screen ----
