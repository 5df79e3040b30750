// The owner's page: what ran on this machine, how quickly guests got out
// of the way, and the owner's controls. Refreshes every second.
"use strict";
(() => {
  const { el, replace, dur, when, clock, bars, lines, post, live } = G;
  const $ = id => document.getElementById(id);
  let csrf = "", last = null, formsFilled = false;
  const POLICY_WORDS = {
    immediate_eviction: "Immediate-Eviction: kill at once",
    pause_and_migrate: "Pause-and-Migrate: freeze, then move",
    linger_longer: "Linger-Longer: idle priority, move if you stay",
    linger_forever: "Linger-Forever: run on at idle priority",
    condor1988: "Condor 1988: freeze, vacate after a grace",
    checkpoint_then_kill: "Checkpoint-then-Kill",
  };

  function status(o) {
    const line = $("status-line"), note = $("status-note");
    if (o.lending) {
      line.replaceChildren(el("span", { class: "badge AV", id: "lending-badge", "data-state": "AV" }, "LENDING"),
        ` ${o.guests.length} guest${o.guests.length === 1 ? "" : "s"} running`);
    } else {
      const why = { stopped: "you stopped lending", schedule: "outside your schedule", owner: "you are using the machine" }[o.why] || "not lending";
      line.replaceChildren(el("span", { class: "badge NA", id: "lending-badge", "data-state": "NA" }, "NOT LENDING"), " " + why);
    }
    const stop = o.controls.stop;
    const parts = [`Policy: ${o.policy}.`, `Guests may use ${o.offered_memory_mb} of ${o.memory_mb} MiB.`];
    if (stop) parts.unshift(stop.until_unix ? `Stopped until ${when(stop.until_unix * 1000)}.` : `Stopped since ${when(stop.since_unix * 1000)}, until you lend again.`);
    note.textContent = parts.join(" ");
    replace($("guests-now"), o.guests.length === 0 ? el("li", { class: "empty" }, "no guests now")
      : o.guests.map(g => el("li", { class: "chip " + g.state, "data-job": g.job, "data-guest-state": g.state },
          `${g.job}@${g.home} (${g.owner})`, el("span", { class: "st" }, g.state))));
  }

  function fillForms(o) {
    if (formsFilled) return;
    formsFilled = true;
    $("schedule").value = (o.controls.schedule || o.schedule_config).join("\n");
    replace($("policy"), o.policies.map(p => el("option", { value: p, selected: p === o.policy }, POLICY_WORDS[p] || p)));
    $("memory").value = o.controls.guest_memory_mb || "";
    $("memory").placeholder = String(o.memory_mb);
  }

  function returnsTable(rs) {
    const head = el("tr", {}, el("th", {}, "When"), el("th", {}, "Why"), el("th", {}, "Until"),
      el("th", {}, "Guests out of the way"));
    const rows = rs.length === 0 ? [el("tr", {}, el("td", { colspan: 4, class: "empty" }, "no returns recorded yet"))]
      : rs.map(r => el("tr", {}, el("td", {}, when(r.at_ms)), el("td", {}, r.cause),
          el("td", {}, r.until_ms ? clock(r.until_ms) : "now"),
          el("td", {}, r.guests.length === 0 ? el("span", { class: "empty" }, "no guest was running")
            : r.guests.map(g => el("div", {}, `${g.job}@${g.home}: ${g.action} in ${g.latency_ms.toFixed(1)} ms`)))));
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }

  function runsTable(runs) {
    const head = el("tr", {}, el("th", {}, "Job"), el("th", {}, "Owner"), el("th", {}, "Started"),
      el("th", {}, "Ended"), el("th", { class: "num" }, "Wall"), el("th", { class: "num" }, "CPU"), el("th", {}, "How it ended"));
    const rows = runs.length === 0 ? [el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no guest has run here yet"))]
      : runs.map(r => el("tr", {}, el("td", {}, `${r.job}@${r.home}`), el("td", {}, r.owner),
          el("td", {}, when(r.started_ms)), el("td", {}, when(r.ended_ms)),
          el("td", { class: "num" }, dur((r.ended_ms - r.started_ms) / 1000)),
          el("td", { class: "num" }, r.cpu_secs.toFixed(1) + " s"), el("td", { class: "reason" }, r.outcome)));
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }

  function charts(o) {
    const reactions = o.returns.slice(0, 12).reverse().flatMap(r => r.guests.map(g => ({
      label: `${clock(r.at_ms)} ${g.job}`, value: g.latency_ms,
      color: g.action === "suspended" ? "#b7791f" : g.action === "lowered" ? "#7c3aed" : "#c2410c" })));
    replace($("latency"), reactions.length ? bars(reactions, { label: "owner event to guest action, ms", fmt: v => v.toFixed(1) + " ms" })
      : el("p", { class: "empty" }, "appears after your first return with guests running"));
    const byOwner = {};
    for (const r of o.runs) byOwner[r.owner] = (byOwner[r.owner] || 0) + r.cpu_secs;
    const rows = Object.entries(byOwner).sort((a, b) => b[1] - a[1]).map(([k, v]) => ({ label: k, value: v }));
    replace($("cpu"), rows.length ? bars(rows, { label: "guest CPU seconds by job owner", fmt: v => v.toFixed(1) + " s" })
      : el("p", { class: "empty" }, "no guest has finished here yet"));
  }

  function render(data) {
    csrf = data.viewer.csrf;
    const o = data.owner;
    // A change's answer may be older than an update the stream brought
    // meanwhile (the station's clock says): keep the newer.
    if (last && o.now_ms < last.now_ms) return;
    last = o;
    $("title").textContent = `${o.station}: this machine`;
    $("sub").textContent = `owner ${o.account || "root"} · updated ${clock(o.now_ms)}`;
    $("viewer").textContent = data.viewer.name;
    status(o);
    fillForms(o);
    $("policy-note").textContent = `Now: ${o.policy} (the station's: ${o.policy_config}). Guests already running keep theirs.`;
    $("memory-note").textContent = o.controls.guest_memory_mb ? `Capped at ${o.controls.guest_memory_mb} MiB.` : `No cap of yours: ${o.memory_mb} MiB offered.`;
    replace($("returns"), returnsTable(o.returns));
    replace($("runs"), runsTable(o.runs));
    charts(o);
  }

  async function refresh() {
    try {
      const r = await fetch("/owner/api/state", { credentials: "same-origin" });
      if (!r.ok) throw new Error(r.statusText);
      render(await r.json());
      $("live").classList.add("on");
    } catch (e) {
      $("live").classList.remove("on");
    }
  }

  async function change(body, msg) {
    const m = $(msg);
    m.className = "msg";
    m.textContent = "…";
    try {
      const o = await post("/owner/api/controls", csrf, body);
      m.className = "msg ok";
      m.textContent = "done";
      render({ viewer: { name: $("viewer").textContent, csrf }, owner: o });
    } catch (e) {
      m.className = "msg err";
      m.textContent = e.message;
    }
  }

  function start() {
    $("stop-now").addEventListener("click", () => change({ action: "stop", until_unix: null }, "msg-stop"));
    $("stop-until-btn").addEventListener("click", () => {
      const v = $("stop-until").value;
      if (!v) { $("msg-stop").textContent = "pick a time first"; return; }
      change({ action: "stop", until_unix: Math.floor(new Date(v).getTime() / 1000) }, "msg-stop");
    });
    $("resume").addEventListener("click", () => change({ action: "resume" }, "msg-stop"));
    $("schedule-save").addEventListener("click", () => change({ action: "schedule",
      windows: $("schedule").value.split("\n").map(s => s.trim()).filter(Boolean) }, "msg-schedule"));
    $("schedule-reset").addEventListener("click", () => {
      if (last) $("schedule").value = last.schedule_config.join("\n");
      change({ action: "schedule", windows: null }, "msg-schedule");
    });
    $("policy-save").addEventListener("click", () => change({ action: "policy", name: $("policy").value }, "msg-policy"));
    $("memory-save").addEventListener("click", () => change({ action: "memory", mb: Number($("memory").value) || null }, "msg-memory"));
    $("memory-clear").addEventListener("click", () => { $("memory").value = ""; change({ action: "memory", mb: null }, "msg-memory"); });
    // The state at once, then live over server-sent events (no polling).
    refresh();
    live("/owner/api/events", "owner", render, $("live"));
  }
  document.addEventListener("DOMContentLoaded", start);
})();
