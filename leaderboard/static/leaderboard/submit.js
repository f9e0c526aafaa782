// Sends the submission form with XMLHttpRequest to show upload progress. Before a byte of the
// file is sent it asks the server whether the team may submit on the ticked tasks and splits
// (data-quota-url: quota, phase, rules, the choice, the largest upload; for a build context,
// the base images and models it declares) and stops with the server's reason when not. Without
// this script the form posts as usual; with it, the answer's content replaces the page's: the
// form with its errors, or the page a successful submission is redirected to.
(function () {
  "use strict";

  function bind() {
    var form = document.getElementById("submit-form");
    if (!form || !window.FormData || !window.XMLHttpRequest) return;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var fileInput = form.querySelector("input[type=file]");
      var kind = form.querySelector("input[name=artifact_kind]:checked");
      var file = fileInput && fileInput.files.length ? fileInput.files[0] : null;
      var sendsFile = file && kind && kind.value !== "registry-ref";
      refuse(form, "");
      preflight(form, sendsFile ? file : null, function (problem, maxBytes) {
        maxBytes = maxBytes || Number(form.dataset.maxBytes || 0);
        if (!problem && sendsFile && maxBytes && file.size > maxBytes) {
          problem = file.name + " is " + (file.size / 1048576).toFixed(1) + " MiB; the tasks " +
            "you chose take at most " + (maxBytes / 1048576).toFixed(1) + " MiB.";
        }
        if (problem) refuse(form, problem);
        else send(form, sendsFile);
      });
    });
  }

  // The server's answer to "may this team submit on these tasks now?": calls back with the
  // reason it may not (or "") and the largest upload it takes. A build context's Dockerfile and
  // manifests, read here (build_context.js), go with the question (POST): the server checks
  // their base images and models as the upload will. When the question cannot be asked
  // (network), the form is sent and the server decides.
  function preflight(form, file, done) {
    var url = form.dataset.quotaUrl;
    var team = form.querySelector("select[name=team]");
    if (!url || !window.fetch || !team) return done("", 0);
    var asked = { team: team.options[team.selectedIndex].text, tasks: [], splits: [] };
    form.querySelectorAll("input[name=tasks]:checked").forEach(function (box) {
      asked.tasks.push(box.value);
      form.querySelectorAll("input[name=splits]:checked").forEach(function (split) {
        if (split.value.indexOf(box.value + "/") === 0) asked.splits.push(split.value);
      });
    });
    if (!asked.tasks.length) return done("Choose at least one task.", 0);
    var kind = form.querySelector("input[name=artifact_kind]:checked");
    var context = file && kind && kind.value === "build-context" && window.PodiumBuildContext;
    (context ? window.PodiumBuildContext.read(file) : Promise.resolve(null))
      .then(function (declared) { return fetch.apply(null, request(url, asked, file, declared)); })
      .then(function (response) {
        return response.json().then(function (body) {
          if (response.ok) return done(body.allowed ? "" : body.problem, body.max_artifact_bytes);
          done(messages(body) || "The server answered " + response.status + ".", 0);
        });
      })
      .catch(function () { done("", 0); });
  }

  // GET with the choice in the query; POST with a build context's declarations too.
  function request(url, asked, file, declared) {
    if (!declared) {
      var query = new URLSearchParams({ team: asked.team });
      asked.tasks.forEach(function (task) { query.append("tasks", task); });
      asked.splits.forEach(function (split) { query.append("splits", split); });
      return [url + "?" + query.toString(), { credentials: "same-origin" }];
    }
    var token = document.querySelector("#submit-form input[name=csrfmiddlewaretoken]");
    var body = Object.assign({ filename: file.name }, asked, declared);
    return [url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": token ? token.value : "" },
      body: JSON.stringify(body),
    }];
  }

  function messages(body) {
    if (!body || typeof body !== "object") return "";
    if (body.detail) return String(body.detail);
    return Object.keys(body).map(function (field) {
      var text = [].concat(body[field]).join(" ");
      return field === "non_field_errors" || field === "artifact" ? text : field + ": " + text;
    }).join("; ");
  }

  function refuse(form, text) {
    var box = form.querySelector(".preflight");
    if (!box) return;
    box.textContent = text;
    box.hidden = !text;
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
