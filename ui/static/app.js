// kagent ui: the live part of a run page. It follows the run's event log
// (server-sent events), appends each event to the log table as text, and
// reloads the rounds section from the server after a change. Nothing from
// the server is ever inserted as HTML except the server's own escaped page.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var url = live.getAttribute("data-events");
  var status = document.getElementById("live-status");
  var table = document.getElementById("events");
  var body = table ? table.querySelector("tbody") : null;
  var pending = null;
  var src = new EventSource(url);

  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
  }

  // clock is an event's time as the server's rows show it: 15:04:05.000.
  function clock(at) {
    var d = new Date(at);
    if (isNaN(d.getTime())) { return String(at || ""); }
    function pad(n, w) { return String(n).padStart(w, "0"); }
    return pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2) + "." + pad(d.getMilliseconds(), 3);
  }

  function refresh() {
    pending = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["summary", "rounds"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var old = document.getElementById(id);
          if (fresh && old) { old.replaceWith(document.adoptNode(fresh)); }
        });
      })
      .catch(function () {});
  }

  src.onopen = function () { status.textContent = "live: following the run's events"; };
  src.onerror = function () { status.textContent = "live: disconnected, retrying"; };
  src.onmessage = function (m) {
    var e;
    try { e = JSON.parse(m.data); } catch (err) { return; }
    if (body) {
      var row = document.createElement("tr");
      row.className = "event";
      cell(row, String(e.id));
      cell(row, clock(e.at));
      cell(row, e.round >= 0 ? String(e.round) : "");
      cell(row, e.candidate_id || "");
      cell(row, e.kind || "");
      cell(row, e.message || "");
      body.appendChild(row);
    }
    if (!pending) { pending = setTimeout(refresh, 500); }
  };
  window.addEventListener("pagehide", function () { src.close(); });
})();
