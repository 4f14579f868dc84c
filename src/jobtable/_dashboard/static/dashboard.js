// jobtable dashboard: the only script. It keeps the parts of a page marked
// data-refresh up to date with server-rendered, escaped HTML from the same
// origin: pushed as server-sent events from data-events where the stream
// opens, else fetched again every data-every milliseconds; it
// asks before the forms marked data-confirm are sent, and ticks every job's
// box when the select-all box of a job table is ticked.
"use strict";

function refresh(el) {
  const url = el.dataset.refresh;
  const every = Number(el.dataset.every) || 2000;
  async function tick() {
    const began = Date.now();
    try {
      const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (response.ok) {
        el.innerHTML = await response.text();
        el.dataset.updated = String(Date.now());
        if (response.headers.get("x-jobtable-final") === "1") {
          return; // the job is finished: nothing more will change by itself
        }
      }
    } catch (err) {
      // The server is unreachable for now: keep the last page and try again.
    }
    // A page slow to compute (a huge table) is asked for less often, so an
    // open tab never keeps the database busy more than a fifth of the time.
    window.setTimeout(tick, Math.max(every, 4 * (Date.now() - began)));
  }
  window.setTimeout(tick, every);
}

function stream(el) {
  const source = new EventSource(el.dataset.events);
  let opened = false;
  function show(message) {
    opened = true;
    el.innerHTML = message.data;
    el.dataset.updated = String(Date.now());
    el.dataset.live = "events";
  }
  source.onmessage = show;
  source.addEventListener("final", (message) => {
    show(message);
    source.close(); // the job is finished: nothing more will change by itself
  });
  source.onerror = () => {
    if (!opened) {
      source.close(); // no stream gets through (a buffering proxy, say): poll instead
      refresh(el);
    }
  };
}

function live(el) {
  if (el.dataset.events && window.EventSource) {
    // The page is fresh: the stream, whose first event is the part as it is
    // now, opens when the first poll would have been sent.
    window.setTimeout(() => stream(el), Number(el.dataset.every) || 2000);
  } else {
    refresh(el);
  }
}

function confirmSubmit(event) {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
}

function selectAll(event) {
  const box = event.target.closest("input[data-select-all]");
  if (box) {
    const form = box.dataset.selectAll;
    document.querySelectorAll(`input[name="id"][form="${form}"]`).forEach((each) => {
      each.checked = box.checked;
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-refresh]").forEach(live);
  document.addEventListener("submit", confirmSubmit);
  document.addEventListener("change", selectAll);
});
