// The labelling page's keyboard: a digit picks that verdict and sends the form, "s" skips,
// "n" goes to the note (Esc leaves it, so the keys work again). Keys typed in the note are
// the note's. Without this script the buttons post as usual.
(function () {
  "use strict";

  function bind() {
    var form = document.getElementById("label-form");
    if (!form) return;
    var note = document.getElementById("label-note");
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.target === note) {
        if (event.key === "Escape") note.blur();
        return;
      }
      if (event.key === "n") {
        event.preventDefault();
        note.focus();
        return;
      }
      var button = form.querySelector('button[data-key="' + CSS.escape(event.key) + '"]');
      if (!button) return;
      event.preventDefault();
      form.requestSubmit(button);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", bind);
  } else {
    bind();
  }
})();
