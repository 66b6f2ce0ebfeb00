/* Memory Studio: live updates over the websocket, dialogs, and small form helpers.
   Everything here is an enhancement: the pages work without it. */
(function () {
  "use strict";

  const live = { socket: null, state: "off", retry: 1000, refreshTimer: null, pending: false };
  const reindex = { total: null, lastMessage: 0, finished: false };

  // ------------------------------------------------------------ live updates
  function setLiveState(state) {
    live.state = state;
    const badge = document.getElementById("live-status");
    if (badge) {
      badge.dataset.state = state;
      badge.title = state === "on" ? "Live updates are on" : "Live updates are off (reconnecting)";
    }
  }

  function connect() {
    const path = document.body.dataset.wsPath;
    if (!path || !("WebSocket" in window)) return;
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + path);
    live.socket = socket;
    socket.addEventListener("open", function () {
      live.retry = 1000;
      setLiveState("on");
    });
    socket.addEventListener("message", function (event) {
      let message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      if (message.type === "memory.changed") scheduleRefresh();
      else if (message.type === "reindex.progress") onProgress(message);
      else if (message.type === "injection.recorded") scheduleLedgerRefresh();
    });
    socket.addEventListener("close", function (event) {
      setLiveState("off");
      if (event.code === 4403 || event.code === 4400) return;
      setTimeout(connect, live.retry);
      live.retry = Math.min(live.retry * 2, 15000);
    });
  }

  // A row being edited, or a row whose deletion is being confirmed, must not be replaced under
  // the user's hands (htmx drops a request whose element left the page).
  function editing() {
    const confirm = document.getElementById("confirm-dialog");
    return document.querySelector("#memory-list [data-editing]") !== null || (confirm !== null && confirm.open);
  }

  // Coalesce bursts (a websocket message and the response's own event) into one list refresh.
  function scheduleRefresh() {
    if (!document.getElementById("memory-list")) return;
    clearTimeout(live.refreshTimer);
    live.refreshTimer = setTimeout(function () {
      if (editing()) { live.pending = true; return; }
      live.pending = false;
      htmx.trigger(document.body, "refresh-list");
    }, 120);
  }

  document.body.addEventListener("memory-changed", scheduleRefresh);

  // A live refresh already on its way when an edit or a delete confirmation started waits too.
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.elt && event.detail.elt.id === "memory-list" && editing()) {
      event.detail.shouldSwap = false;
      live.pending = true;
    }
  });

  // ------------------------------------------------------------ reindex progress
  function progressElements() {
    const box = document.getElementById("reindex-progress");
    return box ? { box: box, bar: box.querySelector(".progress-bar"), label: box.querySelector(".progress-label") } : null;
  }

  function showProgress(done, total, finished) {
    const el = progressElements();
    if (!el) return;
    const pct = total > 0 ? Math.min(100, Math.round((done / total) * 100)) : 100;
    el.box.hidden = false;
    el.bar.style.width = pct + "%";
    el.box.dataset.percent = String(pct);
    let text = pct + " % (" + done + " / " + total + ")";
    if (finished) text = done >= total ? "100 % · " + done + " reindexed" : "Stopped at " + done + " / " + total;
    el.label.textContent = text;
  }

  function onProgress(message) {
    reindex.lastMessage = Date.now();
    reindex.total = message.total;
    reindex.finished = !!message.finished;
    showProgress(message.done, message.total, message.finished);
  }

  function onReindexStarted(node) {
    const total = parseInt(node.dataset.total || "0", 10);
    // With an inline task queue the whole run may already have been reported over the websocket.
    if (Date.now() - reindex.lastMessage < 10000) return;
    reindex.total = total;
    reindex.finished = total === 0;
    showProgress(0, total, total === 0);
  }

  // Without a shared channel layer (a separate worker process) the 5 s status poll still moves the bar.
  function onStatus(container) {
    const list = container.querySelector("[data-pending]");
    if (!list || reindex.total === null || reindex.finished) return;
    if (Date.now() - reindex.lastMessage < 6000) return;
    const pending = parseInt(list.dataset.pending || "0", 10);
    const done = Math.max(0, reindex.total - pending);
    reindex.finished = pending === 0;
    showProgress(done, reindex.total, reindex.finished);
  }

  // ------------------------------------------------------------ dialogs
  document.addEventListener("click", function (event) {
    const opener = event.target.closest("[data-open]");
    if (opener) {
      const dialog = document.getElementById(opener.dataset.open);
      if (dialog && typeof dialog.showModal === "function") {
        event.preventDefault();
        prepareDialog(dialog);
        if (!dialog.open) dialog.showModal();
      }
      return;
    }
    const closer = event.target.closest("[data-close]");
    if (closer) {
      const dialog = closer.closest("dialog");
      if (dialog) dialog.close();
    }
  });

  function prepareDialog(dialog) {
    dialog.querySelectorAll("#import-result, #compact-result").forEach(function (node) { node.innerHTML = ""; });
    const form = dialog.querySelector("#import-form");
    if (form) form.reset();
    dialog.querySelectorAll("form[data-validate]").forEach(updateValidity);
    const first = dialog.querySelector("input:not([type=hidden]), select, textarea");
    if (first) setTimeout(function () { first.focus(); }, 0);
  }

  document.body.addEventListener("close-dialog", function (event) {
    const id = event.detail && event.detail.id;
    const dialog = id && document.getElementById(id);
    if (dialog && dialog.open) dialog.close();
  });

  // hx-confirm through a styled dialog instead of window.confirm().
  document.addEventListener("htmx:confirm", function (event) {
    if (!event.detail.question) return;
    const dialog = document.getElementById("confirm-dialog");
    if (!dialog || typeof dialog.showModal !== "function") return;
    event.preventDefault();
    const elt = event.detail.elt;
    dialog.querySelector("#confirm-title").textContent = elt.dataset.confirmTitle || "Are you sure?";
    dialog.querySelector("#confirm-message").textContent = event.detail.question;
    dialog.querySelector("#confirm-ok").textContent = elt.dataset.confirmAction || "Confirm";
    dialog.returnValue = "";
    dialog.addEventListener("close", function () {
      if (dialog.returnValue === "ok") event.detail.issueRequest(true);
      else if (live.pending) scheduleRefresh();
    }, { once: true });
    dialog.showModal();
  });

  // ------------------------------------------------------------ forms
  function checkJson(textarea) {
    const slot = textarea.parentElement.querySelector("[data-json-error]");
    let message = "";
    const text = textarea.value.trim();
    if (text) {
      try {
        const value = JSON.parse(text);
        if (value === null || typeof value !== "object" || Array.isArray(value)) message = "Must be a JSON object.";
      } catch (e) {
        message = "Invalid JSON";
      }
    }
    textarea.setCustomValidity(message);
    if (slot) slot.textContent = message;
  }

  function updateValidity(form) {
    form.querySelectorAll("textarea[data-json-object]").forEach(checkJson);
    const valid = form.checkValidity();
    form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = !valid; });
  }

  document.addEventListener("input", function (event) {
    const form = event.target.form;
    if (event.target.matches && event.target.matches("input[type=range][data-mirror]")) {
      const target = document.getElementById(event.target.dataset.mirror);
      if (target) target.value = event.target.value;
    }
    if (form && form.hasAttribute("data-validate")) updateValidity(form);
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
    // The Providers form: open the chosen type's field list, close the others.
    if (event.target.matches("select[data-type-select]")) {
      const chosen = event.target.value;
      event.target.form.querySelectorAll("details[data-type-help]").forEach(function (node) {
        node.open = node.dataset.typeHelp === chosen;
      });
    }
  });

  // ------------------------------------------------------------ after every swap
  htmx.onLoad(function (root) {
    const scope = root.querySelectorAll ? root : document;
    scope.querySelectorAll("form[data-validate]").forEach(updateValidity);
    if (root.matches && root.matches("form[data-validate]")) updateValidity(root);
    setLiveState(live.state);
  });

  document.body.addEventListener("htmx:afterSwap", function (event) {
    const target = event.detail.target;
    if (!target) return;
    if (target.id === "reindex-result") {
      const started = target.querySelector("[data-reindex-started]");
      if (started) onReindexStarted(started);
    } else if (target.id === "engine-status") {
      onStatus(target);
    }
    if (live.pending && !editing()) scheduleRefresh();
  });

  // Errors of htmx requests (403, 500…) as a short notice instead of silence.
  // A Studio view's domain error (a provider down, say) comes as a short text/plain message: show it.
  document.body.addEventListener("htmx:responseError", function (event) {
    const xhr = event.detail.xhr;
    const status = xhr ? xhr.status : 0;
    const type = xhr ? xhr.getResponseHeader("Content-Type") || "" : "";
    if (type.indexOf("text/plain") === 0 && xhr.responseText && xhr.responseText.length < 500) {
      toast(xhr.responseText);
      return;
    }
    toast(status === 403 ? "You are not allowed to do that." : "The server answered " + status + ". Try again.");
  });
  document.body.addEventListener("htmx:sendError", function () { toast("The server cannot be reached."); });

  function toast(text) {
    const node = document.createElement("div");
    node.className = "toast";
    node.setAttribute("role", "alert");
    node.textContent = text;
    document.body.appendChild(node);
    setTimeout(function () { node.remove(); }, 5000);
  }

  // ------------------------------------------------------------ secrets shown once: copy buttons
  // The button copies with navigator.clipboard where the page may write it (a secure context, the
  // permission granted); otherwise, or when the write is refused, the secret is selected and the
  // status says to press the copy keys. Without JavaScript the button stays hidden and the secret
  // is selectable text.
  function revealCopyButtons(scope) {
    scope.querySelectorAll("button[data-copy][hidden]").forEach(function (button) { button.hidden = false; });
  }

  function selectText(node) {
    const range = document.createRange();
    range.selectNodeContents(node);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copyFallback(node, status) {
    selectText(node);
    status.textContent = "Copying is not available here: the secret is selected, press Ctrl+C (⌘C on a Mac).";
    status.dataset.state = "fallback";
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const node = document.getElementById(button.dataset.copy);
    const status = button.parentElement.querySelector("[data-copy-status]");
    if (!node || !status) return;
    const text = node.textContent.trim();
    if (!navigator.clipboard || !window.isSecureContext) {
      copyFallback(node, status);
      return;
    }
    navigator.clipboard.writeText(text).then(function () {
      status.textContent = "Copied.";
      status.dataset.state = "copied";
    }, function () {
      copyFallback(node, status);
    });
  });

  htmx.onLoad(function (root) { revealCopyButtons(root.querySelectorAll ? root : document); });
  revealCopyButtons(document);

  // ------------------------------------------------------------ the Ledger page
  // A new entry reloads the list with the filters on screen (a burst of answers makes one reload);
  // rows that were not there before are highlighted for a moment.
  const ledger = { timer: null, seen: null };

  function ledgerIds() {
    return new Set(Array.from(document.querySelectorAll("#ledger-list tr[data-entry]"), function (row) { return row.dataset.entry; }));
  }

  function scheduleLedgerRefresh() {
    if (!document.getElementById("ledger-list")) return;
    clearTimeout(ledger.timer);
    ledger.timer = setTimeout(function () {
      ledger.seen = ledgerIds();
      htmx.trigger(document.body, "ledger-refresh");
    }, 80);
  }

  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (!ledger.seen || !event.detail.target || event.detail.target.id !== "ledger-list") return;
    const list = document.getElementById("ledger-list");
    if (!list) return;
    list.querySelectorAll("tr[data-entry]").forEach(function (row) {
      if (!ledger.seen.has(row.dataset.entry)) row.classList.add("is-new");
    });
    ledger.seen = null;
  });

  connect();
})();
