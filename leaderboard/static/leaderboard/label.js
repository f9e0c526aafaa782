// The labelling page's keyboard: a digit picks that verdict and sends the form, "s" skips,
// "n" goes to the note (Esc leaves it, so the keys work again), "u" goes back to the last item
// labelled. Keys typed in the note are the note's. Without this script the buttons and the
// link work as usual.
(function () {
  "use strict";

  function bind() {
    var form = document.getElementById("label-form");
    var note = document.getElementById("label-note");
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.target === note) {
        if (event.key === "Escape") note.blur();
        return;
      }
      if (event.key === "n" && note) {
        event.preventDefault();
        note.focus();
        return;
      }
      var target = document.querySelector('[data-key="' + CSS.escape(event.key) + '"]');
      if (!target) return;
      event.preventDefault();
      if (target.tagName === "A") {
        window.location.assign(target.href);
      } else {
        form.requestSubmit(target);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", bind);
  } else {
    bind();
  }
})();
