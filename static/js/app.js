// Keyboard shortcuts live here (STYLE §4); pages work without this file.

// ---- Labeling screen (answer_review.html) ----
// 1 SUPPORTED (saves and moves on) · 2 UNSUPPORTED (type why, Enter saves) ·
// j/k next/previous claim · n next unlabeled claim of the run · e justification ·
// u undo · s split · ? help. Every key clicks or focuses an element of the page
// (data-shortcut), so the page keeps working without this file.
(function () {
  "use strict";
  var TYPING = "input, textarea, select, [contenteditable=''], [contenteditable='true']";
  var busy = null;   // the review request in flight (an XHR): keys wait for its answer
  var queue = [];

  function byShortcut(key) {
    return document.querySelector('#claim-panel [data-shortcut="' + key + '"]') ||
      document.querySelector('[data-shortcut="' + key + '"]');
  }
  function labelForm() { return document.getElementById("label-form"); }

  function hint(form, text) {
    var node = form.querySelector("[data-armed-hint]");
    if (node) { node.textContent = text; }
  }

  function arm(value) {
    var form = labelForm();
    if (!form) { return; }
    form.dataset.armed = value;
    form.classList.add("armed");
    form.classList.toggle("armed-SUPPORTED", value === "SUPPORTED");
    form.querySelectorAll("button[name=value]").forEach(function (button) {
      button.classList.toggle("armed", button.value === value);
    });
    hint(form, "Type the justification, then Enter saves " + value + " and moves on · Esc cancels.");
    focusJustification(form);
  }

  function disarm() {
    var form = labelForm();
    if (!form) { return; }
    delete form.dataset.armed;
    form.classList.remove("armed", "armed-SUPPORTED");
    form.querySelectorAll("button[name=value]").forEach(function (b) { b.classList.remove("armed"); });
    hint(form, "Press 1 for SUPPORTED, 2 for UNSUPPORTED.");
  }

  function focusJustification(form) {
    var area = form.querySelector("textarea[name=justification]");
    if (!area) { return; }
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  }

  function save(value) {
    var form = labelForm();
    var button = form && form.querySelector('button[name=value][value="' + value + '"]');
    if (button) { button.click(); }
  }

  function chosenValue(form) {
    var chosen = form.querySelector("button[name=value].chosen");
    return chosen ? chosen.value : "";
  }

  function onJustificationKey(event, form) {
    if (event.key === "Enter" && !event.shiftKey && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      var value = form.dataset.armed || chosenValue(form);
      if (value) { save(value); } else { hint(form, "Esc, then 1 (SUPPORTED) or 2 (UNSUPPORTED) chooses the label."); }
    } else if (event.key === "Escape") {
      event.preventDefault();
      disarm();
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

  function toggleHelp() {
    var help = document.getElementById("shortcut-help");
    if (!help) { return; }
    if (help.open) { help.close(); } else { help.showModal(); }
  }

  // Returns true when the key was a shortcut of the review page.
  function run(key) {
    var form = labelForm();
    switch (key) {
      case "1":
        if (!form) { return true; }
        var area = form.querySelector("textarea[name=justification]");
        if (form.dataset.requireSupported === "true" && area && !area.value.trim()) { arm("SUPPORTED"); }
        else { save("SUPPORTED"); }
        return true;
      case "2":
        arm("UNSUPPORTED");
        return true;
      case "e":
        if (form) { focusJustification(form); }
        return true;
      case "?":
        toggleHelp();
        return true;
      case "Escape":
        var cancel = document.querySelector("#claim-panel [data-cancel]");
        if (cancel) { cancel.click(); }
        return Boolean(cancel);
      case "j": case "k": case "n": case "u": case "s":
        var target = byShortcut(key);
        if (target) { target.click(); }
        return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("claim-panel") || event.defaultPrevented || event.isComposing) { return; }
    var target = event.target;
    if (target.closest && target.closest(TYPING)) {
      var form = target.form || target.closest("form");
      if (!form) { return; }
      if (form.id === "label-form" && target.name === "justification") { onJustificationKey(event, form); }
      else if (form.hasAttribute("data-submit-on-ctrl-enter")) { onFormKey(event, form); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var help = document.getElementById("shortcut-help");
    if (help && help.open && event.key !== "?") { return; }
    if (busy) {
      if (event.key.length === 1 || event.key === "Enter") { queue.push(event.key); event.preventDefault(); }
      return;
    }
    if (run(event.key)) { event.preventDefault(); }
  });

  function replay() {
    while (queue.length && !busy) {
      var key = queue.shift();
      var active = document.activeElement;
      if (active && active.name === "justification") {
        // Typed while the previous claim was saving: it belongs in the justification.
        if (key === "Enter") { onJustificationKey(new KeyboardEvent("keydown", { key: "Enter" }), active.form); }
        else { active.value += key; }
      } else {
        run(key);
      }
    }
  }

  function inReview(element) { return element && element.closest && element.closest("#review"); }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (inReview(event.detail.elt)) { busy = event.detail.xhr; }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.xhr === busy && (!event.detail.successful || event.detail.xhr.status === 204)) {
      busy = null;
      queue = [];
    }
  });

  function settle(root) {
    var panel = document.getElementById("claim-panel");
    var form = labelForm();
    if (form && form.dataset.armed) { arm(form.dataset.armed); }
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
  }

  // A save within the answer says how many labels it added: move the run bar at once
  // (the server recounts it on every other write, see answer_review.html).
  document.body.addEventListener("labelSaved", function (event) {
    var delta = event.detail && event.detail.labeled;
    var box = document.getElementById("run-progress");
    if (typeof delta !== "number" || !delta || !box) { return; }
    var bar = box.querySelector("progress");
    var text = box.querySelector(".metric");
    var parts = text ? text.textContent.split("/") : [];
    if (!bar || parts.length !== 2) { return; }
    var done = Math.min(parseInt(parts[0], 10) + delta, parseInt(parts[1], 10));
    bar.value = done;
    text.textContent = done + "/" + parts[1];
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (busy && event.detail.xhr !== busy) { return; }
    var id = event.detail.elt && event.detail.elt.id;
    // Out-of-band swaps (answer text, claim list) settle too: act once, on the panel or the whole review.
    if (id !== "claim-panel" && id !== "review") { return; }
    busy = null;
    settle(event.detail.elt);
    replay();
  });
  document.addEventListener("DOMContentLoaded", function () { settle(document.body); });
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest('button[data-shortcut="?"]')) { toggleHelp(); }
  });
})();
// ---- end labeling screen ----
