// Sends the submission form with XMLHttpRequest to show upload progress. Without this script
// the form posts as usual; with it, the answer's content replaces the page's: the form with its
// errors, or the page a successful submission is redirected to.
(function () {
  "use strict";

  function bind() {
    var form = document.getElementById("submit-form");
    if (!form || !window.FormData || !window.XMLHttpRequest) return;
    form.addEventListener("submit", function (event) {
      var maxBytes = Number(form.dataset.maxBytes || 0);
      var fileInput = form.querySelector("input[type=file]");
      var kind = form.querySelector("input[name=artifact_kind]:checked");
      var file = fileInput && fileInput.files.length ? fileInput.files[0] : null;
      var sendsFile = file && kind && kind.value !== "registry-ref";
      if (sendsFile && maxBytes && file.size > maxBytes) {
        event.preventDefault();
        alert(file.name + " is larger than this challenge accepts (" + maxBytes + " bytes).");
        return;
      }
      event.preventDefault();
      send(form, sendsFile);
    });
  }

  function send(form, sendsFile) {
    var data = new FormData(form);
    if (!sendsFile) data.delete("artifact");
    var box = form.querySelector(".upload-progress");
    var bar = box.querySelector("progress");
    var label = box.querySelector("span");
    var button = form.querySelector("button[type=submit]");
    box.hidden = false;
    button.disabled = true;
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action || window.location.href);
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      bar.value = Math.round((100 * e.loaded) / e.total);
      label.textContent = bar.value + " % of " + (e.total / 1048576).toFixed(1) + " MiB sent";
    });
    xhr.upload.addEventListener("load", function () {
      label.textContent = "Upload complete; checking the archive...";
    });
    xhr.addEventListener("load", function () {
      // The answer is either the form with its errors or, after a redirect, the page the
      // server sent us on to (it carries the one-time "received" message): show it in place.
      var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
      var main = page.querySelector("main");
      if (!main) {
        label.textContent = "The server answered " + xhr.status + "; please try again.";
        button.disabled = false;
        return;
      }
      document.querySelector("main").replaceWith(main);
      document.title = page.title;
      if (xhr.responseURL && xhr.responseURL !== window.location.href) {
        window.history.pushState(null, page.title, xhr.responseURL);
      }
      bind();
    });
    xhr.addEventListener("error", function () {
      label.textContent = "The upload was interrupted; please try again.";
      button.disabled = false;
    });
    xhr.send(data);
  }

  bind();
})();
