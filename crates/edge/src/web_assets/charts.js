// Gleaner's page helpers: DOM built with text nodes only (no HTML from
// data), SVG charts, durations, and live updates over server-sent events.
"use strict";
const G = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      // Through the CSSOM: the pages' CSP forbids inline style attributes.
      else if (k === "style") for (const d of String(v).split(";")) {
        const i = d.indexOf(":");
        if (i > 0) e.style.setProperty(d.slice(0, i).trim(), d.slice(i + 1).trim());
      }
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids.flat()) if (k) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function dur(secs) {
    if (secs === null || secs === undefined) return "–";
    secs = Math.max(0, Math.round(secs));
    if (secs < 60) return secs + " s";
    if (secs < 3600) return Math.floor(secs / 60) + " min " + (secs % 60) + " s";
    const h = Math.floor(secs / 3600);
    if (h < 48) return h + " h " + Math.floor((secs % 3600) / 60) + " min";
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }
  function clock(ms) {
    const d = new Date(ms);
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  function when(ms) {
    const d = new Date(ms);
    return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + clock(ms);
  }
  const PALETTE = ["#2563eb", "#c2410c", "#0f766e", "#7c3aed", "#b7791f", "#be185d",
    "#4d7c0f", "#0369a1", "#9f1239", "#57534e"];
  function color(i) { return PALETTE[i % PALETTE.length]; }

  // A day's strip: [from,to] periods shaded between `from` and `to` (ms).
  function strip(periods, from, to, opts) {
    const w = 300, h = (opts && opts.height) || 14, span = Math.max(1, to - from);
    const g = svg("svg", { viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none",
      role: "img", "aria-label": (opts && opts.label) || "owner-active periods" });
    g.append(svg("rect", { x: 0, y: 0, width: w, height: h, rx: 3, fill: "#e3f6ea" }));
    for (const [a, b] of periods) {
      const x2 = ((Math.min(b, to) - from) / span) * w;
      // A period too short to see still gets 3 units, kept inside the strip.
      const width = Math.max(3, x2 - ((Math.max(a, from) - from) / span) * w);
      const x = Math.min(((Math.max(a, from) - from) / span) * w, w - width);
      g.append(svg("rect", { x: x.toFixed(2), y: 0, width: width.toFixed(2), height: h,
        fill: (opts && opts.fill) || "#c2410c" }));
    }
    return g;
  }

  // Lines over time: series = [{name, points: [[ms, value]]}].
  function lines(series, opts) {
    const W = 760, H = (opts && opts.height) || 220, L = 48, R = 10, T = 10, B = 26;
    const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": (opts && opts.label) || "chart" });
    const pts = series.flatMap(s => s.points);
    if (pts.length === 0) {
      g.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#667085", "font-size": 13 },
        (opts && opts.empty) || "no data yet"));
      return g;
    }
    let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
    let y0 = Math.min(0, ...pts.map(p => p[1])), y1 = Math.max(0, ...pts.map(p => p[1]));
    if (x1 === x0) x1 = x0 + 1000;
    if (y1 === y0) y1 = y0 + 1;
    const pad = (y1 - y0) * 0.08; y0 -= pad; y1 += pad;
    const X = t => L + ((t - x0) / (x1 - x0)) * (W - L - R);
    const Y = v => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const v = y0 + ((y1 - y0) * i) / 4, y = Y(v);
      g.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y, stroke: "#eef1f5" }));
      g.append(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end", "font-size": 11, fill: "#667085" },
        Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)));
    }
    if (y0 < 0 && y1 > 0) g.append(svg("line", { x1: L, x2: W - R, y1: Y(0), y2: Y(0), stroke: "#98a2b3" }));
    for (let i = 0; i <= 4; i++) {
      const t = x0 + ((x1 - x0) * i) / 4;
      g.append(svg("text", { x: X(t), y: H - 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle",
        "font-size": 11, fill: "#667085" }, clock(t)));
    }
    series.forEach((s, i) => {
      if (s.points.length === 0) return;
      const d = s.points.map((p, j) => (j ? "L" : "M") + X(p[0]).toFixed(1) + " " + Y(p[1]).toFixed(1)).join(" ");
      g.append(svg("path", { d, fill: "none", stroke: s.color || color(i), "stroke-width": 2,
        "stroke-linejoin": "round" }));
      const last = s.points[s.points.length - 1];
      g.append(svg("circle", { cx: X(last[0]), cy: Y(last[1]), r: 3, fill: s.color || color(i) }));
    });
    return g;
  }

  // Horizontal bars: rows = [{label, value, color}].
  function bars(rows, opts) {
    const W = 760, rowH = 22, L = 150, R = 60, H = Math.max(1, rows.length) * rowH + 8;
    const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": (opts && opts.label) || "bars" });
    const max = Math.max(1e-9, ...rows.map(r => r.value));
    rows.forEach((r, i) => {
      const y = 4 + i * rowH, w = ((W - L - R) * r.value) / max;
      g.append(svg("text", { x: L - 8, y: y + 15, "text-anchor": "end", "font-size": 12, fill: "#344054" }, r.label));
      g.append(svg("rect", { x: L, y: y + 3, width: Math.max(1, w).toFixed(1), height: rowH - 8, rx: 3,
        fill: r.color || color(i) }));
      g.append(svg("text", { x: L + w + 6, y: y + 15, "font-size": 12, fill: "#475467" },
        (opts && opts.fmt) ? opts.fmt(r.value) : r.value));
    });
    return g;
  }

  // Live updates: fn(data) on every `event` message; `dot` shows the link.
  function live(url, event, fn, dot) {
    let es = null, retry = 1000;
    function open() {
      es = new EventSource(url);
      es.addEventListener(event, m => {
        retry = 1000;
        if (dot) dot.classList.add("on");
        try { fn(JSON.parse(m.data)); } catch (e) { console.warn("bad update", e); }
      });
      es.onerror = () => {
        if (dot) dot.classList.remove("on");
        es.close();
        setTimeout(open, retry);
        retry = Math.min(retry * 2, 30000);
      };
    }
    open();
  }

  async function post(url, csrf, body) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Gleaner-CSRF": csrf },
      body: JSON.stringify(body || {}),
    });
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!r.ok) {
      const msg = data && data.error ? data.error.message : (text || r.statusText);
      throw new Error(msg);
    }
    return data;
  }

  function replace(node, ...kids) { node.replaceChildren(...kids.flat().filter(k => k !== null && k !== undefined)); }

  return { el, svg, dur, clock, when, color, strip, lines, bars, live, post, replace };
})();
