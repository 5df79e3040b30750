// The pool dashboard: renders the coordinator's model of the pool and
// re-renders on every server-sent event (no reload).
"use strict";
(() => {
  const { el, replace, dur, when, clock, color, strip, lines, bars, live, post } = G;
  const $ = id => document.getElementById(id);
  let model = null, csrf = "", openJob = null, admin = false;

  // An administrator's action: the server checks the session, its Origin,
  // the CSRF token and the role again; the buttons are only a convenience.
  async function act(path, what, msg) {
    msg.textContent = what + "…";
    msg.className = "msg";
    try {
      await post(path, csrf);
      msg.textContent = what + ": done";
      msg.className = "msg ok";
      if (path.includes("/tokens/")) loadTokens();
    } catch (e) {
      msg.textContent = what + ": " + e.message;
      msg.className = "msg err";
    }
  }

  function stationActions(s) {
    if (!admin) return null;
    const msg = el("div", { class: "msg", "data-role": "action-msg" });
    const base = `/dashboard/api/stations/${encodeURIComponent(s.name)}/`;
    const drain = s.drained
      ? el("button", { class: "btn go", "data-action": "undrain", onclick: () => act(base + "undrain", "undrain " + s.name, msg) }, "Undrain")
      : el("button", { class: "btn", "data-action": "drain", title: "no new guests; running guests finish",
          onclick: () => act(base + "drain", "drain " + s.name, msg) }, "Drain");
    const vacate = el("button", { class: "btn primary", "data-action": "vacate", title: "guests checkpoint and move now",
      disabled: s.guests.length === 0 ? "" : null,
      onclick: () => { if (confirm(`Vacate every guest on ${s.name} now?`)) act(base + "vacate", "vacate " + s.name, msg); } }, "Vacate");
    return el("div", { class: "actions" }, drain, " ", vacate, msg);
  }

  // Administrators: the pool's tokens, each revocable.
  async function loadTokens() {
    const box = $("tokens");
    if (!admin) { box.hidden = true; return; }
    box.hidden = false;
    const r = await fetch("/dashboard/api/tokens", { credentials: "same-origin" });
    if (!r.ok) { replace($("token-list"), el("p", { class: "empty" }, "cannot list tokens: " + r.status)); return; }
    const { tokens } = await r.json();
    const msg = el("div", { class: "msg" });
    const head = el("tr", {}, el("th", {}, "Id"), el("th", {}, "Subject"), el("th", {}, "Role"),
      el("th", {}, "Expires"), el("th", {}, "State"), el("th", {}, ""));
    const rows = tokens.map(t => el("tr", { "data-token": t.token_id },
      el("td", {}, el("code", {}, t.token_id)), el("td", {}, t.subject), el("td", {}, t.join ? "join" : t.role),
      el("td", {}, t.expires_at ? when(t.expires_at * 1000) : "never"),
      el("td", { "data-role": "token-state" }, t.revoked ? "revoked" : "valid"),
      el("td", {}, t.revoked ? null : el("button", { class: "btn", "data-action": "revoke",
        onclick: () => { if (confirm(`Revoke token ${t.token_id} of ${t.subject}?`))
          act(`/dashboard/api/tokens/${encodeURIComponent(t.token_id)}/revoke`, "revoke " + t.token_id, msg); } }, "Revoke"))));
    replace($("token-list"), el("table", {}, el("thead", {}, head), el("tbody", {}, rows)), msg);
  }

  function stationCard(s, now) {
    const dayStart = now - 24 * 3600 * 1000;
    const guests = s.guests.length === 0
      ? el("li", { class: "empty" }, s.submit_only ? "submit only" : "no guests")
      : s.guests.map(g => el("li", { class: "chip " + g.state, "data-job": g.job, "data-home": g.home,
          "data-guest-state": g.state, title: `${g.owner}@${g.home}, since ${clock(g.since_ms)}` },
          el("a", { href: `#job/${g.home}/${g.job}`, onclick: () => showJob(g.home, g.job) }, g.job + "@" + g.home),
          el("span", { class: "st" }, g.state)));
    const si = s.si === null || s.si === undefined ? "–" : s.si.toFixed(1);
    return el("div", { class: "card " + s.state + (s.drained ? " drained" : ""), "data-station": s.name,
        "data-state": s.state, "data-drained": s.drained ? "yes" : "no" },
      el("h3", {}, s.name, el("span", { class: "badge " + s.state, "data-role": "state" },
        s.state === "AV" ? "AV · lending" : "NA · owner active"),
        s.drained ? el("span", { class: "badge drained", "data-role": "drained", title: "no new guests" }, "drained") : null),
      el("div", { class: "meta" },
        `${s.cpus} CPU · ${(s.memory_mb / 1024).toFixed(1)} GiB · SI ${si} · holds ${s.nodes_held}` +
        ` · ${s.idle_jobs} idle here · ${s.changes_today} owner changes today`),
      el("ul", { class: "guests" }, guests),
      el("div", { class: "timeline" },
        strip(s.owner_periods, dayStart, now, { label: `owner-active periods of ${s.name}` }),
        el("div", { class: "lbl" }, el("span", {}, "24 h ago"), el("span", {}, "now"))),
      stationActions(s));
  }

  function userTable(users, now) {
    const head = el("tr", {}, el("th", {}, "User"), el("th", {}, "Home"), el("th", { class: "num" }, "Idle"),
      el("th", { class: "num" }, "Running"), el("th", { class: "num" }, "Suspended"),
      el("th", { class: "num" }, "Held"), el("th", { class: "num" }, "Longest wait"));
    const rows = users.length === 0 ? [el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no jobs queued"))]
      : users.map(u => el("tr", { "data-user": u.user },
          el("td", {}, u.user), el("td", {}, u.station), el("td", { class: "num" }, u.idle),
          el("td", { class: "num" }, u.running), el("td", { class: "num" }, u.suspended),
          el("td", { class: "num" }, u.held), el("td", { class: "num" }, u.idle ? dur(u.oldest_wait_secs) : "–")));
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }

  function dagTable(dags) {
    const head = el("tr", {}, el("th", {}, "DAG"), el("th", {}, "Owner"), el("th", {}, "State"), el("th", {}, "Progress"));
    const rows = dags.length === 0 ? [el("tr", {}, el("td", { colspan: 4, class: "empty" }, "no DAGs"))]
      : dags.map(d => {
        const pct = d.nodes ? (100 * d.done) / d.nodes : 0;
        return el("tr", {},
          el("td", {}, `${d.name} (${d.station} #${d.id})`), el("td", {}, d.owner), el("td", {}, d.state),
          el("td", {}, `${d.done}/${d.nodes} done, ${d.running} running, ${d.failed} failed`,
            el("div", { class: "bar" }, el("i", { style: `width:${pct.toFixed(1)}%` }))));
      });
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }

  function recentTable(recent) {
    const head = el("tr", {}, el("th", {}, "When"), el("th", {}, "Job"), el("th", {}, "User"),
      el("th", {}, "What"), el("th", {}, "Reason"));
    const rows = recent.length === 0 ? [el("tr", {}, el("td", { colspan: 5, class: "empty" }, "none lately"))]
      : recent.map(r => el("tr", {},
          el("td", {}, when(r.at_ms)),
          el("td", {}, el("a", { href: `#job/${r.station}/${r.job}`, onclick: () => showJob(r.station, r.job) },
            `${r.job}@${r.station}`)),
          el("td", {}, r.user), el("td", { class: "kind-" + r.kind }, r.kind),
          el("td", { class: "reason" }, r.reason)));
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }

  function updownCharts(p) {
    const names = [...new Set(p.updown.flatMap(s => Object.keys(s.si)))].sort();
    const series = names.map((n, i) => ({ name: n, color: color(i),
      points: p.updown.filter(s => n in s.si).map(s => [s.at_ms, s.si[n]]) }));
    const held = names.map((n, i) => ({ name: n, color: color(i),
      points: p.updown.filter(s => n in (s.held || {})).map(s => [s.at_ms, s.held[n]]) }));
    const legend = () => el("div", { class: "legend" }, names.map((n, i) => el("span", { style: `--c:${color(i)}` }, n)));
    replace($("updown"), lines(series, { label: "Up-Down index per station over time",
      empty: "the first snapshot comes after one scheduling interval" }), legend());
    replace($("held"), lines(held, { label: "nodes held per station over time", height: 220 }), legend());
  }

  // What the coordinator knows of a job: where it runs, its evictions and
  // holds, and its newest events as its home's ad carries them (bounded:
  // the whole history stays on its home, glean q -l / glean history).
  function showJob(home, job) {
    openJob = [home, job];
    renderJob();
  }
  function renderJob() {
    const panel = $("job");
    if (!openJob || !model) { panel.hidden = true; return; }
    const [home, job] = openJob;
    const p = model.pool;
    const running = p.stations.flatMap(s => s.guests.filter(g => g.job === job && g.home === home)
      .map(g => ({ host: s.name, g })));
    const events = p.recent.filter(r => r.station === home && r.job === job);
    const trail = (p.trails || []).find(t => t.station === home && t.job === job);
    replace(panel,
      el("button", { class: "close", onclick: () => { openJob = null; panel.hidden = true; }, "aria-label": "close" }, "×"),
      el("h3", {}, `Job ${job} of ${home}`),
      running.length ? running.map(({ host, g }) => el("p", {}, `Runs on ${host} as ${g.owner}, ${g.state}, since ${when(g.since_ms)}.`))
        : el("p", { class: "note" }, "Not running on any host now."),
      el("h4", {}, "History"),
      trail ? el("ol", { class: "trail", "data-job": job, "data-home": home },
        trail.events.map(e => el("li", { "data-kind": e.kind },
          `${when(e.at_ms)} ${e.kind}${e.detail ? ": " + e.detail : ""}`)))
        : el("p", { class: "note" }, "not in its home's latest summary (it carries running jobs and recent evictions and holds)"),
      trail && trail.earlier ? el("p", { class: "note" }, `${trail.earlier} earlier event(s) on ${home}.`) : null,
      el("h4", {}, "Evictions and holds seen lately"),
      events.length ? el("ul", {}, events.map(e => el("li", {}, `${when(e.at_ms)} ${e.kind}: ${e.reason}`)))
        : el("p", { class: "note" }, "none in the home's recent list"),
      el("p", { class: "note" }, "Its whole history and output are kept on its home: ",
        el("code", {}, `glean q -l ${job}`), " or ", el("code", {}, `glean history`), ` on ${home}.`));
    panel.hidden = false;
  }

  function render(data) {
    model = data;
    csrf = data.viewer.csrf;
    const wasAdmin = admin;
    admin = data.viewer.role === "admin";
    if (admin !== wasAdmin) loadTokens();
    const p = data.pool, now = p.now_ms || Date.now();
    const av = p.stations.filter(s => s.state === "AV").length;
    const guests = p.stations.reduce((n, s) => n + s.guests.length, 0);
    $("summary").textContent = `${p.stations.length} stations · ${av} lending · ${guests} guests running · ` +
      `allocator ${p.allocator || "–"} · updated ${clock(now)}`;
    $("viewer").textContent = `${data.viewer.name} (${data.viewer.role})`;
    replace($("stations"), p.stations.length ? p.stations.map(s => stationCard(s, now))
      : el("p", { class: "empty" }, "no station has advertised yet"));
    replace($("users"), userTable(p.users, now));
    replace($("dags"), dagTable(p.dags));
    replace($("recent"), recentTable(p.recent));
    updownCharts(p);
    renderJob();
  }

  async function start() {
    const m = /^#job\/([^/]+)\/(.+)$/.exec(location.hash);
    if (m) openJob = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    const r = await fetch("/dashboard/api/state", { credentials: "same-origin" });
    if (r.ok) render(await r.json());
    live("/dashboard/api/events", "pool", render, $("live"));
    $("logout").addEventListener("click", async () => {
      try { await post("/dashboard/logout", csrf); } finally { location.reload(); }
    });
  }
  document.addEventListener("DOMContentLoaded", start);
})();
