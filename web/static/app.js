// Hookline dashboard: progressive enhancement only. Every page works without it; with it, times read in the
// viewer's time zone and stay current, copy buttons copy, pages of unfinished deliveries follow them, the
// event catalogue filters as you type, and the endpoint form shows only the fields of the choices taken.
// Loaded with <script defer> from /static (the CSP allows no inline script).
(() => {
  "use strict";

  // Relative times, like the server's: "just now", "12 s ago", "in 5 min", "3 h ago", "2 days ago".
  function ago(ms) {
    const future = ms < 0;
    let s = Math.abs(ms) / 1000;
    if (s < 5) return "just now";
    let text;
    if (s < 60) text = Math.floor(s) + " s";
    else if (s < 3600) text = Math.floor(s / 60) + " min";
    else if (s < 48 * 3600) text = Math.floor(s / 3600) + " h";
    else text = Math.floor(s / 86400) + " days";
    return future ? "in " + text : text + " ago";
  }

  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
  const utc = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "medium", timeZone: "UTC" });

  // time[data-rel] shows its age; its title the exact moment, local and UTC.
  function updateTimes(root) {
    const now = Date.now();
    for (const el of root.querySelectorAll("time[data-rel]")) {
      const t = Date.parse(el.dateTime);
      if (Number.isNaN(t)) continue;
      el.textContent = ago(now - t);
      if (!el.dataset.titled) {
        el.title = local.format(t) + " (" + zone + ")\n" + utc.format(t) + " UTC";
        el.dataset.titled = "1";
      }
    }
  }

  // One polite live region announces what copy buttons did.
  let announcer;
  function announce(msg) {
    if (!announcer) {
      announcer = document.createElement("div");
      announcer.className = "visually-hidden";
      announcer.setAttribute("aria-live", "polite");
      announcer.setAttribute("data-testid", "announcer");
      document.body.appendChild(announcer);
    }
    announcer.textContent = "";
    setTimeout(() => { announcer.textContent = msg; }, 50);
  }

  // button[data-copy] copies its value; it is hidden until this script shows it.
  function enableCopy(root) {
    for (const btn of root.querySelectorAll("button[data-copy]")) {
      if (btn.dataset.copyReady) continue;
      btn.dataset.copyReady = "1";
      btn.hidden = false;
      btn.disabled = false;
      const label = btn.querySelector(".copy-label");
      const idle = label ? label.textContent : "";
      btn.addEventListener("click", async () => {
        let ok = false;
        try {
          await navigator.clipboard.writeText(btn.dataset.copy);
          ok = true;
        } catch (e) {
          ok = false;
        }
        btn.dataset.copied = ok ? "yes" : "no";
        if (label) label.textContent = ok ? "Copied" : "Copy failed";
        announce(ok ? "Copied to the clipboard" : "Could not copy: select the text and copy it by hand");
        clearTimeout(btn._copyTimer);
        btn._copyTimer = setTimeout(() => {
          if (label) label.textContent = idle;
          delete btn.dataset.copied;
        }, 2500);
      });
    }
  }

  function enhance(root) {
    updateTimes(root);
    enableCopy(root);
  }

  // The catalogue's search (input[data-type-filter]) also filters the listed types as you type, by name,
  // hiding groups left empty. Only on the whole catalogue: a page the server already filtered lists a part
  // of it, and typing there must not claim that nothing else matches (submitting searches again).
  function filterTypes() {
    const input = document.querySelector("input[data-type-filter]");
    if (!input || input.defaultValue !== "") return;
    const count = document.querySelector("[data-type-count]");
    const none = document.querySelector("[data-testid=no-match-live]");
    const total = count ? count.dataset.total : "";
    input.addEventListener("input", () => {
      const q = input.value.trim().toLowerCase();
      let shown = 0;
      for (const group of document.querySelectorAll("[data-type-group]")) {
        let any = false;
        for (const type of group.querySelectorAll("[data-testid=event-type]")) {
          const hit = type.dataset.name.toLowerCase().includes(q);
          type.hidden = !hit;
          if (hit) {
            any = true;
            shown++;
          }
        }
        group.hidden = !any;
      }
      if (none) none.hidden = q === "" || shown > 0;
      const types = total + (total === "1" ? " type" : " types");
      if (count) count.textContent = q === "" ? types + "." : shown + " of " + types + " match \u201c" + input.value.trim() + "\u201d.";
    });
  }

  // The endpoint form's wildcards ("Every invoice event", invoice.*): while one is ticked, the types (and
  // narrower wildcards) it covers show checked, disabled and "covered by invoice.*", as the server renders
  // them; unticked, they are back as the person had chosen them (data-chosen).
  function followWildcards() {
    const choice = document.querySelector("[data-testid=event-types-choice]");
    if (!choice || choice.closest("fieldset:disabled")) return;
    const boxes = [...choice.querySelectorAll("input[name=event_types]")].filter((b) => b.value !== "*");
    const wildcards = boxes.filter((b) => b.dataset.prefix);
    // One pass; a wildcard freed in it may cover others in the next, so it runs until nothing changes.
    const pass = () => {
      let changed = false;
      for (const box of boxes) {
        let by = null;
        for (const w of wildcards) {
          if (w !== box && w.checked && !w.disabled && box.value.startsWith(w.dataset.prefix) &&
            (!by || w.dataset.prefix.length < by.dataset.prefix.length)) by = w;
        }
        const note = box.parentElement.querySelector("[data-testid=covered-by]");
        const pattern = note && note.querySelector("[data-covered-pattern]");
        if (by && (!box.disabled || (pattern && pattern.textContent !== by.value))) {
          box.checked = true;
          box.disabled = true;
          if (note) {
            pattern.textContent = by.value;
            note.hidden = false;
          }
          changed = true;
        } else if (!by && box.disabled) {
          box.disabled = false;
          box.checked = box.hasAttribute("data-chosen");
          if (note) note.hidden = true;
          changed = true;
        }
      }
      return changed;
    };
    for (const box of boxes) {
      box.addEventListener("change", () => {
        box.toggleAttribute("data-chosen", box.checked);
        for (let i = 0; i <= boxes.length && pass(); i++);
      });
    }
  }

  // The endpoint form's sections with a choice (fieldset[data-choice]: Authentication, Retry schedule) show
  // only the fields of the choice taken: a [data-when] part shows while the radio of that value is checked.
  // Without script every part shows, and the server reads only the chosen one's fields.
  function followChoices() {
    for (const set of document.querySelectorAll("fieldset[data-choice]")) {
      const radios = [...set.querySelectorAll(":scope > .choices input[type=radio]")];
      const parts = [...set.querySelectorAll(":scope > [data-when]")];
      const show = () => {
        const chosen = radios.find((r) => r.checked);
        for (const part of parts) part.hidden = !chosen || part.dataset.when !== chosen.value;
      };
      for (const r of radios) r.addEventListener("change", show);
      show();
    }
  }

  // The endpoint form's type choice ([data-type-choice]): while "I pull deliveries" is chosen, the fields
  // that only mean something when Hookline sends ([data-push-only]: the URL, headers, rate limit,
  // authentication, client certificate, retry schedule) are hidden and disabled, so not posted. A part
  // holding a refusal stays shown, with its message. Without script every part shows with a note, and the
  // server refuses any of them filled in for a polling subscription.
  function followType() {
    const choice = document.querySelector("[data-type-choice]");
    if (!choice) return;
    const radios = [...choice.querySelectorAll("input[name=type]")];
    const parts = [...document.querySelectorAll("[data-push-only]")];
    for (const note of document.querySelectorAll("[data-push-only-note]")) note.hidden = true;
    const show = () => {
      const pulled = radios.some((r) => r.checked && r.value === "polling");
      for (const part of parts) {
        const off = pulled && !part.querySelector(".field-error");
        part.hidden = off;
        part.disabled = off;
      }
    };
    for (const r of radios) r.addEventListener("change", show);
    show();
  }

  // [data-live] with an id: while it is there, fetch the page every few seconds and swap that element when
  // its data-version changed; the server drops data-live once the delivery is final.
  function follow() {
    const el = document.querySelector("[data-live][id]");
    if (!el) return;
    const id = el.id;
    let busy = false;
    let ticks = 0;
    const timer = setInterval(async () => {
      ticks++;
      // A hidden tab checks less often (every 10 s), but keeps following.
      if (busy || (document.hidden && ticks % 5 !== 0)) return;
      busy = true;
      try {
        const res = await fetch(location.href, { credentials: "same-origin" });
        if (!res.ok) return;
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        const cur = document.getElementById(id);
        const next = doc.getElementById(id);
        if (!cur || !next) {
          clearInterval(timer);
          return;
        }
        if (next.dataset.version !== cur.dataset.version) {
          const open = new Set([...cur.querySelectorAll("details[open][id]")].map((d) => d.id));
          const fresh = document.importNode(next, true);
          for (const d of fresh.querySelectorAll("details[id]")) if (open.has(d.id)) d.open = true;
          cur.replaceWith(fresh);
          enhance(fresh);
        }
        if (!next.hasAttribute("data-live")) clearInterval(timer);
      } catch (e) {
        // offline for a moment: try again next time
      } finally {
        busy = false;
      }
    }, 2000);
  }

  // In the platform's frame (HOOKLINE_PORTAL_FRAME_ANCESTORS), tell the parent the page's height, so the
  // frame can fit it: {type: "hookline:resize", height} on load and whenever the page's size changes, to the
  // allowed origins only (the server lists them on <html data-frame-origins>).
  function reportHeight() {
    const allowed = (document.documentElement.dataset.frameOrigins || "").split(" ").filter(Boolean);
    if (window.parent === window || allowed.length === 0) return;
    document.documentElement.classList.add("in-frame");
    // Where the browser tells the parent's origin, post only there; elsewhere post to each allowed origin
    // (the browser drops the message for every origin but the parent's).
    const ancestors = window.location.ancestorOrigins;
    const targets = ancestors && ancestors.length > 0 ? allowed.filter((o) => o === ancestors[0]) : allowed;
    let last = -1;
    const post = () => {
      const height = Math.ceil(document.body.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      for (const origin of targets) {
        try {
          window.parent.postMessage({ type: "hookline:resize", height }, origin);
        } catch (_) {
          // A malformed origin: nothing to tell.
        }
      }
    };
    post();
    window.addEventListener("load", post);
    if ("ResizeObserver" in window) new ResizeObserver(post).observe(document.body);
    else window.addEventListener("resize", post);
  }

  function start() {
    reportHeight();
    // The health panel folds at phone width (CSS shows it wide open); say it is open where it is shown.
    if (window.matchMedia("(min-width: 641px)").matches) {
      for (const d of document.querySelectorAll("details.health-fold")) d.open = true;
    }
    enhance(document);
    filterTypes();
    followWildcards();
    followChoices();
    followType();
    setInterval(() => updateTimes(document), 5000);
    follow();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
