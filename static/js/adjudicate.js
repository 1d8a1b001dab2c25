// Adjudication page keys: 1 / 2 choose the verdict and move to the reason; Enter in the reason records it.
(function () {
  const form = document.getElementById("adjudicate-form");
  if (!form) return;
  const reason = form.querySelector("#reason");
  const choose = (value) => {
    form.querySelector(`input[name="value"][value="${value}"]`).checked = true;
    reason.focus();
  };
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.matches("textarea, input[type=text]");
    if (!typing && event.key === "1") { event.preventDefault(); choose("SUPPORTED"); }
    if (!typing && event.key === "2") { event.preventDefault(); choose("UNSUPPORTED"); }
    if (event.target === reason && event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
})();
