/* bootlens report viewer. Data: the JSON in #bootlens-data (see render/html.py).
   Every string from the log reaches the page through textContent, never as markup. */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("bootlens-data").textContent);
  const NAMES = DATA.names;
  const $ = (id) => document.getElementById(id);
  const el = bootlensEl;
  // the palette (render/palette.py) reaches the page once, as CSS variables: the legend and the
  // stage bar use them in CSS, the canvas reads them here
  const ROOT_STYLE = getComputedStyle(document.documentElement);
  const PAL_CACHE = {};
  function pal(key, fallback) {
    let v = PAL_CACHE[key];
    if (v === undefined) v = PAL_CACHE[key] = ROOT_STYLE.getPropertyValue("--" + key).trim();
    return v || (fallback === undefined ? pal("pal-fallback", "#9e9e9e") : fallback);
  }
  const colour = (key) => pal("pal-" + key);
  const colour2 = (key) => pal("pal-" + key + "-2", colour(key)); // a pair's second shade
  const ink = (key) => pal("ink-" + key, pal("pal-text", "#1d2430"));

  function fmtDur(us) {
    if (us === null || us === undefined || us < 0) return "—";
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (a >= 1e3) return (us / 1e3).toFixed(3) + " ms";
    return us + " µs";
  }
  function fmtT(us) {
    return us === null || us === undefined ? "—" : (us / 1e6).toFixed(6) + " s";
  }

  // ---------------------------------------------------------------- state
  const S = {
    boot: null, v0: 0, v1: 1, lo: 0, hi: 1, layout: [], sel: -1, hover: -1, search: "", match: null, chain: null,
    stats: { visible: 0, drawn: 0, frames: 0, lastFrameMs: 0 }, logHl: [0, -1],
  };
  window.bootlens = S; // for tests and the curious: S.stats, S.v0/S.v1, S.select(i)

  // ---------------------------------------------------------------- boot choice
  function setupBootPick() {
    const sel = $("boot-select");
    if (DATA.boots.length < 2) return;
    $("boot-pick").hidden = false;
    DATA.boots.forEach((b, i) => {
      const inp = DATA.inputs[b.group];
      const label = (inp.boots > 1 ? `${inp.name} · boot ${b.pos + 1}` : inp.name) +
        (b.total.dur !== null ? ` · ${fmtDur(b.total.dur)}` : "");
      const o = el("option", label);
      o.value = String(i);
      sel.appendChild(o);
    });
    sel.addEventListener("change", () => showBoot(+sel.value));
  }

  function showBoot(i) {
    const b = DATA.boots[i];
    S.boot = b;
    S.bootIndex = i;
    S.sel = -1;
    S.hover = -1;
    headline(b);
    stageBar(b);
    buildLayout(b);
    tables(b);
    logView(b);
    resetView();
    resize();
  }

  // ---------------------------------------------------------------- headline + stage bar
  // an input of several boots (a run folder): the median total with min and max, not one boot's
  function groupHeadline(g) {
    const head = `${g.from} → ${g.end_name}: `;
    const k = (x) => x.toLocaleString("en");  // 100,000 boots (a soak test's)
    if (g.median === null) return head + `not measured in any of ${k(g.boots)} boots`;
    const of = g.n === g.boots ? `${k(g.n)} boots` : `${k(g.n)} of ${k(g.boots)} boots`;
    return head + `median ${fmtDur(g.median)} · min–max ${fmtRange(g.min, g.max)} · ${of}`;
  }
  // "3.903–6.903 s"; the unit once when both ends share it
  function fmtRange(a, b) {
    const x = fmtDur(a), y = fmtDur(b), sp = x.lastIndexOf(" "), u = sp < 0 ? "" : x.slice(sp);
    return u && y.endsWith(u) ? x.slice(0, sp) + "–" + y : x + " – " + y;
  }

  function headline(b) {
    const t = b.total;
    const from = t.from || "start";
    const one = t.dur !== null
      ? `${from} → ${t.end_name}: ${t.fig || fmtDur(t.dur)}${t.estimated ? " (estimated)" : ""}`
      : `${from} → ready: not measured`;
    const g = DATA.inputs[b.group].total;
    $("headline").textContent = g ? groupHeadline(g) : one;
    $("headline").title = g ? "" : (t.evidence || "");  // what the total rests on, on hover
    const measured = b.stages.filter((s) => !s.parent && s.status === "measured").map((s) => s.name);
    const unknown = b.stages.filter((s) => !s.parent && s.status === "not measured").map((s) => s.name);
    // with a median above, the sub-line says which boot the page shows, and its own total
    const shown = g ? ` · showing boot ${(b.pos + 1).toLocaleString("en")} of ${g.boots.toLocaleString("en")}: ${t.dur !== null ? fmtDur(t.dur) : "not measured"}`
      : (DATA.boots.length > 1 ? ` · boot ${b.pos + 1}` : "");
    let sub = `${b.source}` + shown +
      ` · end: ${t.end_what}` + ` · measured: ${measured.join(", ") || "none"}`;
    if (unknown.length) sub += ` · not measured: ${unknown.join(", ")}`;
    if (b.kernel.kernel_version) sub += ` · kernel ${b.kernel.kernel_version}`;
    $("sub").textContent = sub;
    const p = $("partial");
    p.hidden = !b.partial.length;
    p.textContent = b.partial.length ? "partial boot: " + b.partial.join("; ") : "";
    document.title = g ? `bootlens · ${DATA.inputs[b.group].name} · ` +
      (g.median !== null ? `median ${fmtDur(g.median)} over ${g.n} boots` : "no ready marker")
      : `bootlens · ${b.source} · ${t.dur !== null ? fmtDur(t.dur) : "no ready marker"}`;
    legend(b);
  }

  // the legend shows what this boot's timeline draws
  function legend(b) {
    const keys = new Set(b.legend || []);
    for (const grp of document.querySelectorAll("#legend .lg-group")) {
      let any = false;
      for (const it of grp.querySelectorAll(".lg")) { it.hidden = !keys.has(it.dataset.key); any = any || !it.hidden; }
      grp.hidden = !any;
    }
  }

  function stageBar(b) {
    const bar = $("stagebar");
    bar.textContent = "";
    const top = b.stages.filter((s) => !s.parent && s.status !== "absent");
    const total = top.reduce((a, s) => a + (s.dur > 0 ? s.dur : 0), 0) || 1;
    for (const s of top) {
      const d = el("div");
      d.dataset.stage = s.name;
      const measured = s.dur !== null;
      d.style.flex = measured ? `${Math.max(s.dur, total * 0.004)} 1 0` : `${total * 0.03} 1 0`;
      if (measured) { d.style.background = colour("stage-" + s.name); d.style.color = ink("stage-" + s.name); }
      else d.className = "nm";
      d.appendChild(el("div", s.label)).style.cssText = "padding:0;border:0;font-weight:600";
      d.appendChild(el("div", measured ? (s.fig || fmtDur(s.dur)) : s.status)).style.cssText = "padding:0;border:0";
      d.title = `${s.label}: ${measured ? (s.fig || fmtDur(s.dur)) : s.status}` +
        (s.start_line ? ` (lines ${s.start_line}–${s.end_line})` : "") + (s.evidence ? `\n${s.evidence}` : "");
      // a duration-only stage (read on the bootloader's clock) has no place on the axis
      if (measured && s.start !== null) d.addEventListener("click", () => zoomTo(s.start, s.start + s.dur, 0.03));
      if (measured && s.start === null) d.title += " (start not known on this axis: not drawn)";
      bar.appendChild(d);
    }
  }

  // ---------------------------------------------------------------- timeline layout
  const AXIS_H = 22, MARK_H = 18, LANE_H = 16, BAR_H = 12, ROW_GAP = 8, GUTTER = 150;

  function buildLayout(b) {
    // y positions: stage rows first, then one block per event row
    const L = [];
    let y = AXIS_H + MARK_H + 4;
    const hasSub = b.stages.some((s) => s.parent && s.dur !== null);
    L.push({ type: "stages", title: "stages", y: y, h: LANE_H * (hasSub ? 2 : 1) });
    y += LANE_H * (hasSub ? 2 : 1) + ROW_GAP;
    for (const r of b.rows) {
      const lanes = r.lanes.map((ln, j) => ({ a: ln[0], b: ln[1], y: y + j * LANE_H }));
      L.push({ type: "events", title: r.title, kind: r.kind, paint: r.paint, y: y, h: r.lanes.length * LANE_H, lanes: lanes });
      y += r.lanes.length * LANE_H + ROW_GAP;
    }
    S.layout = L;
    S.height = y + 4;
    // the extent: everything that has a time
    const ev = b.ev;
    let lo = 0, hi = 1;
    for (const s of b.stages) if (s.start !== null && s.dur !== null) hi = Math.max(hi, s.start + s.dur);
    if (b.total.end !== null) hi = Math.max(hi, b.total.end);
    for (let i = 0; i < ev.s.length; i++) {
      const e = ev.s[i] + Math.max(ev.d[i], 0);
      if (e > hi) hi = e;
      if (ev.s[i] < lo) lo = ev.s[i];
    }
    for (const m of b.marks) { if (m.t > hi) hi = m.t; if (m.t < lo) lo = m.t; }
    if (b.samples) for (const ts of [b.samples.t, b.samples.dt]) if (ts.length) hi = Math.max(hi, ts[ts.length - 1]);
    S.lo = lo;
    S.hi = hi + (hi - lo) * 0.01;
  }

  function resetView() { S.v0 = S.lo; S.v1 = S.hi; }

  function zoomTo(a, b, pad) {
    const w = Math.max(b - a, 20);
    S.v0 = a - w * pad; S.v1 = b + w * pad;
    clampView();
    draw();
  }

  function clampView() {
    const span = S.hi - S.lo;
    let w = S.v1 - S.v0;
    if (w < 5) { const c = (S.v0 + S.v1) / 2; S.v0 = c - 2.5; S.v1 = c + 2.5; w = 5; }
    if (w > span * 1.5) { const c = (S.lo + S.hi) / 2; S.v0 = c - span * 0.75; S.v1 = c + span * 0.75; return; }
    const margin = span * 0.05 + w * 0.5;
    if (S.v0 < S.lo - margin) { S.v0 = S.lo - margin; S.v1 = S.v0 + w; }
    if (S.v1 > S.hi + margin) { S.v1 = S.hi + margin; S.v0 = S.v1 - w; }
  }

  // ---------------------------------------------------------------- drawing
  const canvas = $("tl-canvas");
  const ctx = canvas.getContext("2d");
  let W = 800, DPR = 1, pending = false;

  function resize() {
    DPR = window.devicePixelRatio || 1;
    W = canvas.parentElement.clientWidth || 800;
    canvas.style.height = S.height + "px";
    canvas.width = Math.round(W * DPR);
    canvas.height = Math.round(S.height * DPR);
    const sw = $("samples-wrap");
    sw.hidden = !S.boot || !S.boot.samples;
    if (!sw.hidden) {
      sc.style.height = SAMPLES_H + "px";
      sc.style.width = W + "px"; // the timeline's width (its box may hold a scrollbar): one x axis
      sc.width = Math.round(W * DPR);
      sc.height = Math.round(SAMPLES_H * DPR);
      sampleKey();
    }
    draw();
  }

  // ---------------------------------------------------------------- CPU/IO panel (bootchart)
  // under the timeline, on its x axis: CPU use stacked (user, system, io-wait; 0-100 %) above,
  // disk read and write throughput below; each sample covers the time since the one before
  const sc = $("samples-canvas");
  const sctx = sc.getContext("2d");
  const SAMPLES_H = 120, CPU_H = 60;
  const SAMPLE_COLOURS = { user: "#3b7dd8", sys: "#e07b39", iow: "#c0392b", rd: "#2e7d32", wr: "#8e44ad" };

  function sampleKey() {
    const k = $("samples-key");
    k.textContent = "";
    const m = S.boot.samples;
    const items = [["user", "CPU user"], ["sys", "CPU system"], ["iow", "I/O wait"],
      ["rd", `disk read (peak ${fmtRate(m.rd_max)})`], ["wr", `disk write (peak ${fmtRate(m.wr_max)})`]];
    k.appendChild(el("b", "bootchart: "));
    for (const [key, label] of items) {
      const sw = el("span", "");
      sw.className = "sw";
      sw.style.background = SAMPLE_COLOURS[key];
      k.appendChild(sw);
      k.appendChild(document.createTextNode(label + "  "));
    }
  }

  function fmtRate(bps) {
    if (!bps) return "0 B/s";
    if (bps >= 1048576) return (bps / 1048576).toFixed(1) + " MiB/s";
    return (bps / 1024).toFixed(1) + " KiB/s";
  }

  function drawSamples(b) {
    const m = b.samples;
    if (!m) return;
    sctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    sctx.clearRect(0, 0, W, SAMPLES_H);
    sctx.font = "600 11px system-ui, sans-serif";
    sctx.textBaseline = "middle";
    sctx.fillStyle = pal("pal-text");
    sctx.fillText("CPU", 6, 10);
    sctx.fillText("disk I/O", 6, CPU_H + 10);
    sctx.save();
    sctx.beginPath(); sctx.rect(GUTTER, 0, W - GUTTER - 8, SAMPLES_H); sctx.clip();
    for (let i = 1; i < m.t.length; i++) {
      const a = xOf(m.t[i - 1]), c = xOf(m.t[i]);
      if (c < GUTTER || a > W) continue;
      let y = CPU_H - 2;
      for (const key of ["user", "sys", "iow"]) {
        const h = m[key][i] * (CPU_H - 8);
        sctx.fillStyle = SAMPLE_COLOURS[key];
        sctx.fillRect(a, y - h, Math.max(c - a, 1), h);
        y -= h;
      }
    }
    // the first CPU sample has no interval before it: drawn from the one before, so it is skipped
    const base = SAMPLES_H - 4, span = SAMPLES_H - CPU_H - 10, top = Math.max(m.rd_max, m.wr_max, 1);
    for (const key of ["rd", "wr"]) {
      sctx.strokeStyle = SAMPLE_COLOURS[key]; sctx.lineWidth = 1.5;
      sctx.beginPath();
      for (let i = 1; i < m.dt.length; i++) {
        const a = xOf(m.dt[i - 1]), c = xOf(m.dt[i]), y = base - m[key][i] / top * span;
        if (i === 1) sctx.moveTo(a, y); else sctx.lineTo(a, y);
        sctx.lineTo(c, y);
      }
      sctx.stroke();
    }
    sctx.restore();
    sctx.strokeStyle = pal("pal-grid");
    sctx.beginPath(); sctx.moveTo(0, CPU_H + 0.5); sctx.lineTo(W, CPU_H + 0.5); sctx.stroke();
  }

  function draw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; drawNow(); });
  }

  const xOf = (t) => GUTTER + (t - S.v0) / (S.v1 - S.v0) * (W - GUTTER - 8);
  const tOf = (x) => S.v0 + (x - GUTTER) / (W - GUTTER - 8) * (S.v1 - S.v0);

  // first index in [a, b) whose start is >= t
  function lowerBound(arr, a, b, t) {
    while (a < b) { const m = (a + b) >> 1; if (arr[m] < t) a = m + 1; else b = m; }
    return a;
  }

  function niceStep(span, px) {
    const raw = span / Math.max(px / 90, 1);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (p * m >= raw) return p * m;
    return p * 10;
  }

  function fmtTick(us, step) {
    return (us / 1e6).toFixed(Math.max(0, 6 - Math.floor(Math.log10(step) + 1e-9))) + " s";
  }

  function drawNow() {
    const t0 = performance.now();
    const b = S.boot;
    if (!b) return;
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    ctx.clearRect(0, 0, W, S.height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const x0 = GUTTER, x1 = W - 8;
    // axis
    const step = niceStep(S.v1 - S.v0, x1 - x0);
    ctx.strokeStyle = pal("pal-grid"); ctx.fillStyle = pal("pal-muted"); ctx.lineWidth = 1;
    for (let t = Math.ceil(S.v0 / step) * step; t <= S.v1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS_H - 4); ctx.lineTo(x, S.height); ctx.stroke();
      ctx.fillText(fmtTick(t, step), x + 3, AXIS_H / 2);
    }
    // row backgrounds and titles
    let visible = 0, drawn = 0;
    for (let r = 0; r < S.layout.length; r++) {
      const row = S.layout[r];
      if (r % 2 === 1) { ctx.fillStyle = pal("pal-row-alt"); ctx.fillRect(0, row.y - ROW_GAP / 2, W, row.h + ROW_GAP); }
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(x0, 0, x1 - x0, S.height); ctx.clip();
    for (const row of S.layout) {
      if (row.type === "stages") { drawStages(b, row); continue; }
      for (const lane of row.lanes) {
        const r = drawLane(b, row, lane);
        visible += r[0]; drawn += r[1];
      }
    }
    drawMarks(b);
    ctx.restore();
    drawSamples(b);
    ctx.font = "600 11px system-ui, sans-serif";
    for (const row of S.layout) {
      ctx.fillStyle = pal("pal-surface"); ctx.fillRect(0, row.y - 2, x0 - 4, LANE_H);
      ctx.fillStyle = pal("pal-text");
      ctx.fillText(clipText(row.title, x0 - 12), 6, row.y + LANE_H / 2);
    }
    S.stats.visible = visible; S.stats.drawn = drawn; S.stats.frames++;
    S.stats.lastFrameMs = performance.now() - t0;
    $("view-range").textContent = `${fmtT(S.v0)} – ${fmtT(S.v1)} (${fmtDur(Math.round(S.v1 - S.v0))}) · ${visible} events in view`;
  }

  function clipText(s, w) {
    if (ctx.measureText(s).width <= w) return s;
    let lo = 0, hi = s.length;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (ctx.measureText(s.slice(0, m) + "…").width <= w) lo = m; else hi = m - 1; }
    return lo ? s.slice(0, lo) + "…" : "";
  }

  function drawStages(b, row) {
    for (const s of b.stages) {
      if (s.start === null || s.dur === null) continue;
      const y = row.y + (s.parent ? LANE_H : 0);
      const a = xOf(s.start), c = xOf(s.start + s.dur);
      if (c < GUTTER || a > W) continue;
      ctx.fillStyle = colour("stage-" + s.name);
      ctx.fillRect(a, y + 1, Math.max(c - a, 1), BAR_H);
      const label = `${s.label} ${s.fig || fmtDur(s.dur)}`;
      const la = Math.max(a, GUTTER) + 3, w = Math.min(c, W) - la - 3;
      if (w > 24) { ctx.fillStyle = ink("stage-" + s.name); ctx.fillText(clipText(label, w), la, y + 1 + BAR_H / 2); }
    }
  }

  function drawLane(b, row, lane) {
    const ev = b.ev, s = ev.s, d = ev.d;
    const y = lane.y + 1;
    const usPerPx = (S.v1 - S.v0) / (W - GUTTER - 8);
    // spans in a lane do not overlap, so ends are sorted like starts: step back one for the
    // span that may begin before the view
    let i = lowerBound(s, lane.a, lane.b, S.v0);
    if (i > lane.a && s[i - 1] + Math.max(d[i - 1], 0) >= S.v0 - 3 * usPerPx) i--;
    const endI = lowerBound(s, i, lane.b, S.v1 + 3 * usPerPx);
    const visible = endI - i;
    let drawn = 0;
    // a pair's bars alternate between two shades (neighbours stay apart); a process is its fork
    // colour up to its exec, its second colour after
    const paint = row.paint, shades = [colour(paint), colour2(paint)];
    const inks = [ink(paint), pal("ink-" + paint + "-2", ink(paint))];
    const twoShades = shades[0] !== shades[1] && paint !== "process";
    const selC = colour("selected"), dimC = colour("dimmed"), textC = pal("pal-text"), mutC = pal("pal-muted");
    const critC = colour("critical");
    const search = S.match;
    let lastPx = -1e9;
    while (i < endI) {
      const a = xOf(s[i]);
      const isInstant = d[i] < 0;
      const w = isInstant ? 0 : d[i] / usPerPx;
      if (!isInstant && w < 1 && Math.floor(a) <= lastPx && i !== S.sel) {
        // sub-pixel spans in a pixel column already painted: jump to the next column (but never
        // over the selected event, which is drawn in its own colour)
        let j = lowerBound(s, i + 1, endI, S.v0 + (lastPx + 1 - GUTTER) * usPerPx);
        if (S.sel > i && S.sel < j) j = S.sel;
        i = j > i ? j : i + 1;
        continue;
      }
      const hit = search ? search[i] : 1;
      const k = twoShades ? (i - lane.a) & 1 : 0;
      const fill = i === S.sel ? selC : hit ? shades[k] : dimC;
      ctx.fillStyle = fill;
      if (isInstant) {
        ctx.beginPath(); ctx.moveTo(a, y); ctx.lineTo(a + 4, y + BAR_H / 2); ctx.lineTo(a, y + BAR_H);
        ctx.lineTo(a - 4, y + BAR_H / 2); ctx.closePath(); ctx.fill();
      } else {
        ctx.fillRect(a, y, Math.max(w, 1), BAR_H);
        if (paint === "process" && ev.x[i] >= 0 && fill === shades[0]) { // exec'd: the rest in the second colour
          const ex = xOf(s[i] + ev.x[i]);
          ctx.fillStyle = shades[1];
          ctx.fillRect(ex, y, Math.max(a + Math.max(w, 1) - ex, 1), BAR_H);
        }
        if (w > 30) {
          ctx.fillStyle = fill === selC ? textC : hit ? inks[k] : mutC;
          const la = Math.max(a, GUTTER) + 2;
          const t = clipText(NAMES[ev.n[i]], Math.min(a + w, W) - la - 2);
          if (t) ctx.fillText(t, la, y + BAR_H / 2 + 0.5);
        }
      }
      if (S.chain && S.chain.has(i)) { // on the critical chain to ready: an outline in its colour
        ctx.strokeStyle = critC; ctx.lineWidth = 2;
        ctx.strokeRect(a - 1, y - 1, Math.max(w, 1) + 2, BAR_H + 2); ctx.lineWidth = 1;
      }
      if (i === S.hover) { ctx.strokeStyle = textC; ctx.strokeRect(a - 0.5, y - 0.5, Math.max(w, 1) + 1, BAR_H + 1); }
      lastPx = Math.floor(a + Math.max(w, 1));
      drawn++;
      i++;
    }
    return [visible, drawn];
  }

  function drawMarks(b) {
    let lastEnd = -1e9;
    ctx.font = "11px system-ui, sans-serif";
    for (const m of b.marks) {
      if (m.t < S.v0 || m.t > S.v1) continue;
      const x = Math.round(xOf(m.t)) + 0.5;
      const ready = m.n === "ready" && m.k === "marker";
      const mc = colour(ready ? "ready" : m.k);
      ctx.strokeStyle = mc;
      ctx.setLineDash(m.k === "milestone" ? [3, 3] : []); // markers solid, milestones dashed (as in the SVG)
      ctx.beginPath(); ctx.moveTo(x, AXIS_H); ctx.lineTo(x, S.height); ctx.stroke();
      ctx.setLineDash([]);
      const w = ctx.measureText(m.n).width;
      // right of its line, or left of it at the right edge; labels never overlap: skip one that would
      const lx = x + 3 + w > W - 8 ? x - 3 - w : x + 3;
      if (lx > lastEnd || ready) {
        ctx.fillStyle = ready ? mc : pal("pal-text");
        if (ready) { ctx.fillStyle = pal("pal-surface"); ctx.fillRect(lx - 2, AXIS_H + 1, w + 4, MARK_H - 2); ctx.fillStyle = mc; }
        ctx.fillText(m.n, lx, AXIS_H + MARK_H / 2);
        lastEnd = lx + w + 6;
      }
    }
  }

  // ---------------------------------------------------------------- picking
  function pick(px, py) {
    const b = S.boot;
    if (!b || px < GUTTER) return null;
    const usPerPx = (S.v1 - S.v0) / (W - GUTTER - 8);
    const t = tOf(px);
    if (py >= AXIS_H && py < AXIS_H + MARK_H) {
      let best = null, bd = 5;
      for (const m of b.marks) { const dx = Math.abs(xOf(m.t) - px); if (dx < bd) { bd = dx; best = m; } }
      return best ? { mark: best } : null;
    }
    for (const row of S.layout) {
      if (py < row.y || py >= row.y + row.h) continue;
      if (row.type === "stages") {
        const sub = py >= row.y + LANE_H;
        for (const s of b.stages) {
          if (!!s.parent === sub && s.start !== null && s.dur !== null && t >= s.start && t <= s.start + s.dur) return { stage: s };
        }
        return null;
      }
      const lane = row.lanes[Math.floor((py - row.y) / LANE_H)];
      if (!lane) return null;
      const s = b.ev.s, d = b.ev.d;
      let i = lowerBound(s, lane.a, lane.b, t + 1);
      let best = -1, bd = 4 * usPerPx;
      for (let j = Math.max(lane.a, i - 2); j < Math.min(lane.b, i + 2); j++) {
        const e = s[j] + Math.max(d[j], 0);
        const dist = t < s[j] ? s[j] - t : t > e ? t - e : 0;
        if (dist <= bd) { bd = dist; best = j; }
      }
      return best >= 0 ? { ev: best, row: row } : null;
    }
    return null;
  }

  function lineText(no) {
    const log = S.boot.log, i = no - log.first;
    return i >= 0 && i < log.text.length ? log.text[i] : "";
  }

  function describe(p) {
    const b = S.boot;
    if (p.mark) return { title: `${p.mark.k} ${p.mark.n}`, body: `at ${fmtT(p.mark.t)} · line ${p.mark.l}`, line: p.mark.l };
    if (p.stage) {
      const s = p.stage;
      return { title: `stage ${s.label}`, body: `${s.fig || fmtDur(s.dur)} from ${fmtT(s.start)}${s.estimated ? " (estimated)" : ""}` +
        (s.start_line ? ` · lines ${s.start_line}–${s.end_line}` : "") + (s.evidence ? ` · ${s.evidence}` : ""), line: s.start_line };
    }
    const i = p.ev, ev = b.ev;
    const detail = NAMES[ev.i[i]];
    const dur = ev.d[i] < 0 ? "instant" : fmtDur(ev.d[i]);
    let body = `${p.row.title} · start ${fmtT(ev.s[i])} · ${dur}` + (detail ? ` · ${detail}` : "") +
      (ev.x[i] > 0 ? ` · exec after ${fmtDur(ev.x[i])}` : "") +
      ` · line ${ev.l[i]}` + (ev.e[i] && ev.e[i] !== ev.l[i] ? `–${ev.e[i]}` : "");
    return { title: NAMES[ev.n[i]], body: body, line: ev.l[i], end: ev.e[i] || ev.l[i] };
  }

  const tip = $("tip");
  function showTip(p, cx, cy) {
    if (!p) { tip.hidden = true; return; }
    const d = describe(p);
    tip.textContent = "";
    tip.appendChild(el("b", d.title));
    tip.appendChild(el("div", d.body));
    if (d.line) tip.appendChild(el("div", lineText(d.line), "src"));
    tip.hidden = false;
    const r = tip.getBoundingClientRect();
    tip.style.left = Math.min(cx + 14, window.innerWidth - r.width - 8) + "px";
    tip.style.top = (cy + 18 + r.height > window.innerHeight ? cy - r.height - 10 : cy + 18) + "px";
  }

  function select(p) {
    const box = $("selected");
    if (!p) { S.sel = -1; box.hidden = true; draw(); return; }
    S.sel = p.ev !== undefined ? p.ev : -1;
    const d = describe(p);
    box.textContent = "";
    box.appendChild(el("b", d.title + "  "));
    box.appendChild(document.createTextNode(d.body));
    box.hidden = false;
    if (d.line) scrollLog(d.line, d.end || d.line);
    draw();
  }
  S.find = (name) => { const n = NAMES.indexOf(name); return n < 0 ? -1 : S.boot.ev.n.indexOf(n); };
  S.locate = (i) => { // canvas coordinates of the middle of event i's bar, for tests
    for (const row of S.layout) for (const l of row.lanes || []) {
      if (i >= l.a && i < l.b) return { x: xOf(S.boot.ev.s[i] + Math.max(S.boot.ev.d[i], 0) / 2), y: l.y + LANE_H / 2 };
    }
    return null;
  };
  S.total = () => S.boot.ev.s.length;
  S.select = (i) => { const row = S.layout.find((r) => r.lanes && r.lanes.some((l) => i >= l.a && i < l.b)); select({ ev: i, row: row }); };

  // ---------------------------------------------------------------- interaction
  let drag = null;
  canvas.addEventListener("mousedown", (e) => {
    drag = { x: e.clientX, v0: S.v0, v1: S.v1, moved: false };
    canvas.classList.add("drag");
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    canvas.classList.remove("drag");
    const wasClick = !drag.moved;
    drag = null;
    if (wasClick && e.target === canvas) {
      const r = canvas.getBoundingClientRect();
      const p = pick(e.clientX - r.left, e.clientY - r.top);
      if (p && p.stage) zoomTo(p.stage.start, p.stage.start + p.stage.dur, 0.03);
      else select(p);
    }
  });
  window.addEventListener("mousemove", (e) => {
    if (drag) {
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        const dt = dx / (W - GUTTER - 8) * (drag.v1 - drag.v0);
        S.v0 = drag.v0 - dt; S.v1 = drag.v1 - dt;
        clampView(); draw();
      }
      tip.hidden = true;
      return;
    }
    if (e.target !== canvas) { if (!tip.hidden) tip.hidden = true; if (S.hover >= 0) { S.hover = -1; draw(); } return; }
    const r = canvas.getBoundingClientRect();
    const p = pick(e.clientX - r.left, e.clientY - r.top);
    const h = p && p.ev !== undefined ? p.ev : -1;
    if (h !== S.hover) { S.hover = h; draw(); }
    showTip(p, e.clientX, e.clientY);
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; if (S.hover >= 0) { S.hover = -1; draw(); } });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const dt = (e.deltaX || e.deltaY) / (W - GUTTER) * (S.v1 - S.v0);
      S.v0 += dt; S.v1 += dt;
    } else {
      const t = tOf(Math.max(e.clientX - r.left, GUTTER));
      const f = Math.exp(e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0015));
      S.v0 = t - (t - S.v0) * f; S.v1 = t + (S.v1 - t) * f;
    }
    clampView(); draw();
  }, { passive: false });
  function zoom(f) { const c = (S.v0 + S.v1) / 2; S.v0 = c - (c - S.v0) * f; S.v1 = c + (S.v1 - c) * f; clampView(); draw(); }
  function pan(f) { const dt = (S.v1 - S.v0) * f; S.v0 += dt; S.v1 += dt; clampView(); draw(); }
  $("zoom-in").addEventListener("click", () => zoom(0.5));
  $("zoom-out").addEventListener("click", () => zoom(2));
  $("zoom-reset").addEventListener("click", () => { resetView(); draw(); });
  document.addEventListener("keydown", (e) => {
    const tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k === "+" || k === "=") zoom(0.5);
    else if (k === "-" || k === "_") zoom(2);
    else if (k === "ArrowLeft" && e.target !== $("log")) pan(-0.2);
    else if (k === "ArrowRight" && e.target !== $("log")) pan(0.2);
    else if (k === "0" || k === "Home") { resetView(); draw(); }
    else if (k === "Escape") select(null);
    else return;
    e.preventDefault();
  });
  window.addEventListener("resize", () => resize());
  $("search").addEventListener("input", (e) => {
    const q = e.target.value.trim().toLowerCase();
    S.search = q;
    if (!q) { S.match = null; draw(); return; }
    const ev = S.boot.ev, m = new Uint8Array(ev.n.length);
    const hitName = NAMES.map((n) => n.toLowerCase().includes(q));
    let c = 0;
    for (let i = 0; i < m.length; i++) if (hitName[ev.n[i]]) { m[i] = 1; c++; }
    S.match = m;
    S.stats.matches = c;
    draw();
  });

  // ---------------------------------------------------------------- tables
  function table(id, cols, rows, onClick, empty) {
    bootlensTable($(id), cols, rows, { onClick: onClick, empty: empty });
  }

  const wrap = () => "wrap";
  function evRow(b, i) {
    const ev = b.ev;
    return { i: i, v: { name: NAMES[ev.n[i]], start: ev.s[i], dur: ev.d[i] < 0 ? null : ev.d[i], detail: NAMES[ev.i[i]], line: ev.l[i] } };
  }

  function tables(b) {
    const pickEv = (r) => { S.select(r.i); const row = S.layout.find((x) => x.lanes && x.lanes.some((l) => r.i >= l.a && r.i < l.b)); if (row) zoomTo(b.ev.s[r.i], b.ev.s[r.i] + Math.max(b.ev.d[r.i], 0), 2); };
    const evCols = [
      // names and details can be one long token: they wrap anywhere (td.wrap), never widen the page
      { title: "name", key: "name", cls: wrap }, { title: "start", key: "start", num: true, fmt: fmtT },
      { title: "duration", key: "dur", num: true, fmt: fmtDur }, { title: "detail", key: "detail", cls: wrap },
      { title: "line", key: "line", num: true },
    ];
    table("t-initcalls", evCols, b.top.initcalls.map((i) => evRow(b, i)), pickEv,
      "no initcalls in this log: boot with initcall_debug on the kernel command line");
    table("t-processes", evCols, b.top.processes.map((i) => evRow(b, i)), pickEv,
      "no process events in this log: boot with trace_event=sched:sched_process_fork," +
      "sched:sched_process_exec,sched:sched_process_exit tp_printk");
    // systemd: the chain to ready (outlined on the timeline) and the longest units
    const ch = b.chain || { links: [] };
    const hasUnits = b.top.units && b.top.units.length;
    S.chain = new Set(ch.links.filter((x) => x.ev >= 0).map((x) => x.ev));
    $("units-wrap").hidden = !hasUnits;
    if (hasUnits) {
      $("chain-how").textContent = "(" + ch.source + ")";
      table("t-chain", [
        { title: "waited for", key: "name", cls: wrap }, { title: "@", key: "at", num: true, fmt: fmtT },
        { title: "+", key: "dur", num: true, fmt: (v) => (v === null ? "" : fmtDur(v)) }, { title: "line", key: "line", num: true },
      ], ch.links.map((x, k) => ({ x: x, v: { name: (k ? "└ " : "") + x.name + (x.estimate ? " ~" : ""), at: x.at, dur: x.dur, line: x.line } })),
      (r) => { if (r.x.ev >= 0) pickEv({ i: r.x.ev }); else if (r.x.line) scrollLog(r.x.line, r.x.line); });
      table("t-units", evCols, b.top.units.map((i) => evRow(b, i)), pickEv, "");
    }
    table("t-stages", [
      { title: "stage", key: "label" }, { title: "start", key: "start", num: true, fmt: fmtT },
      { title: "duration", key: "dur", num: true, fmt: (v, r) => r.s.fig || fmtDur(v) }, { title: "status", key: "status" },
      { title: "lines", key: "lines" },
    ], b.stages.map((s) => ({ s: s, title: s.evidence || "", v: { label: (s.parent ? "  └ " : "") + s.label, start: s.start, dur: s.dur,
      status: s.status + (s.estimated ? " (estimated)" : ""), lines: s.start_line ? (s.end_line ? `${s.start_line}–${s.end_line}` : `from ${s.start_line}`) : "" } })),
    (r) => { if (r.s.dur !== null && r.s.start !== null) zoomTo(r.s.start, r.s.start + r.s.dur, 0.03); if (r.s.start_line) scrollLog(r.s.start_line, r.s.start_line); });
    table("t-silences", [
      { title: "from", key: "s", num: true, fmt: fmtT }, { title: "silent for", key: "d", num: true, fmt: fmtDur },
      { title: "after line", key: "a", num: true }, { title: "text before", key: "text", cls: wrap },
    ], b.silences.map((x) => ({ x: x, v: { s: x.s, d: x.d, a: x.a, text: lineText(x.a) } })),
    (r) => { zoomTo(r.x.s, r.x.s + r.x.d, 0.1); scrollLog(r.x.a, r.x.b); });
    // an input of many boots: the boots the page holds, with their place among all of them
    const mb = (DATA.many || []).find((x) => x.group === b.group);
    $("many-wrap").hidden = !mb;
    if (mb) {
      $("many-title").textContent = `${mb.rows.length} of ${mb.boots.toLocaleString("en")} boots of ` +
        `${DATA.inputs[b.group].name} on this page (${mb.measured.toLocaleString("en")} measured their total; ` +
        "the statistics and findings are over all)";
      table("t-many", [
        { title: "boot", key: "n", num: true }, { title: "lines", key: "first_line", num: true,
          fmt: (x, r) => `${r.v.first_line}–${r.v.last_line}` },
        { title: "total", key: "total", num: true, fmt: (x) => (x === null ? "not measured" : fmtDur(x)) },
        { title: "status", key: "status" }, { title: "shown as", key: "why" },
      ], mb.rows.map((r) => ({ v: r, cls: r.boot === S.bootIndex ? "here" : "" })),
      (r) => { if (r.v.boot !== S.bootIndex) { $("boot-select").value = String(r.v.boot); showBoot(r.v.boot); } });
    }
    const st = DATA.stats.find((x) => x.group === b.group);
    $("stats-wrap").hidden = !st;
    if (st) {
      $("stats-title").textContent = `Statistics over ${st.boots.toLocaleString("en")} boots of ${st.name}`;
      table("t-stats", [
        { title: "quantity", key: "name" }, { title: "n", key: "n", num: true },
        { title: "min", key: "min", num: true, fmt: fmtDur }, { title: "median", key: "median", num: true, fmt: fmtDur },
        // the median's interval, and how likely it holds the true median with this many boots
        { title: "median's interval", key: "ci_low", num: true, fmt: (x, r) => r.v.n < 2 ? "—"
          : `${fmtRange(r.v.ci_low, r.v.ci_high)} (${+(r.v.ci_level * 100).toFixed(1)} %)` },
        { title: "max", key: "max", num: true, fmt: fmtDur }, { title: "stdev", key: "stdev", num: true, fmt: fmtDur },
        { title: "spread", key: "spread", num: true, fmt: (x) => (x * 100).toFixed(1) + " %" },
      ], st.rows.map((r) => ({ v: r, cls: r.spread > 0.05 ? "spread" : "" })));
    }
    // an input of several boots has one set of findings, each with the boots it applied to
    const mg = (DATA.merged_findings || []).find((x) => x.group === b.group);
    findings(mg ? mg.findings : (DATA.findings[S.bootIndex] || []), mg ? b.group : null);
    const w = $("warnings");
    w.textContent = "";
    for (const x of b.warnings) w.appendChild(el("li", x));
    $("warn-wrap").hidden = !b.warnings.length;
  }

  // ---------------------------------------------------------------- advisor's findings
  const CONF = { high: 3, medium: 2, low: 1 };
  function findings(fs, group) {
    $("findings-wrap").hidden = !fs.length;
    $("finding-detail").hidden = true;
    const merged = group !== null;
    const cols = [
      { title: "saving", key: "saving", num: true, fmt: (x) => (x === null ? "no estimate" : fmtDur(x)) },
      { title: "confidence", key: "conf", fmt: (x) => ["", "low", "medium", "high"][x] || "" },
      // a change can be one long token (initcall_blacklist=a,b,...): it wraps anywhere
      { title: "finding", key: "title" }, { title: "change", key: "change", cls: wrap },
      { title: "rule", key: "rule" }, { title: "lines", key: "lines" },
    ];
    if (merged) cols.splice(1, 0, { title: "boots", key: "seen", num: true, fmt: (x) => `${x} of ${fs[0].boots}` });
    table("t-findings", cols, fs.map((f) => ({ f: f, v: {
      // merged: the median over the boots that gave a number
      saving: merged && f.saving ? Math.round(f.saving.median_s * 1e6)
        : (f.saving_s === null ? null : Math.round(f.saving_s * 1e6)),
      seen: f.seen, conf: CONF[f.confidence] || 0,
      title: f.title, change: f.change.value + (f.change.automatic ? " (automatic)" : ""), rule: f.rule,
      lines: f.evidence.map((e) => e.line).join(", "),
    } })), (r) => {
      showFinding(r.f);
      if (merged) {
        // the evidence lines are those of the boot the finding is shown from: go to that boot
        // (an input of many boots: when the page holds it; else its lines are not on the page)
        const gi = DATA.boots.findIndex((x) => x.group === group && x.pos === r.f.boot);
        if (gi < 0) return;
        if (gi !== S.bootIndex) { $("boot-select").value = String(gi); showBoot(gi); showFinding(r.f); }
      }
      if (r.f.evidence.length) scrollLog(r.f.evidence[0].line, r.f.evidence[0].line);
    });
  }
  function showFinding(f) {
    const d = $("finding-detail");
    d.textContent = "";
    d.appendChild(el("div", f.title, "fd-title"));
    const one = f.saving_s === null ? "no estimate" : fmtDur(Math.round(f.saving_s * 1e6));
    const rows = [
      ["saving", f.saving ? `${fmtDur(Math.round(f.saving.median_s * 1e6))} (median of ${f.saving.n} boots; ` +
        `${fmtDur(Math.round(f.saving.min_s * 1e6))}–${fmtDur(Math.round(f.saving.max_s * 1e6))})` : one],
      ["confidence", f.confidence],
      ["change", `${f.change.kind} ${f.change.value}${f.change.automatic ? " (automatic)" : ""}: ${f.change.description}`],
      ["trade-off", f.tradeoff], ["arithmetic", f.arithmetic],
    ];
    if (f.seen !== undefined) rows.splice(1, 0, ["boots", `applied to ${f.seen} of ${f.boots} boots; shown ` +
      `from boot ${f.boot + 1} (its line numbers)`]);
    for (const e of f.evidence) rows.push([`line ${e.line}`, e.text]);
    for (const [k, v] of rows) {
      const row = el("div");
      row.appendChild(el("span", k, "fd-k"));
      row.appendChild(document.createTextNode(v));
      d.appendChild(row);
    }
    d.hidden = false;
  }

  // ---------------------------------------------------------------- log (virtual rows)
  const ROW = 16;
  const logBox = $("log"), logInner = $("log-inner");
  function logView(b) {
    logInner.style.height = b.log.text.length * ROW + "px";
    $("log-count").textContent = `(${b.log.text.length} lines, ${b.log.first}–${b.log.first + b.log.text.length - 1})`;
    S.logHl = [0, -1];
    logBox.scrollTop = 0;
    renderLog();
  }
  function renderLog() {
    const b = S.boot, log = b.log;
    const first = Math.max(0, Math.floor(logBox.scrollTop / ROW) - 10);
    const last = Math.min(log.text.length, first + Math.ceil(logBox.clientHeight / ROW) + 20);
    logInner.textContent = "";
    for (let i = first; i < last; i++) {
      const no = log.first + i;
      const r = el("div", null, "r" + (no >= S.logHl[0] && no <= S.logHl[1] ? " hl" : ""));
      r.style.top = i * ROW + "px";
      r.dataset.line = String(no);
      r.appendChild(el("span", no, "no"));
      r.appendChild(el("span", log.t[i] === null ? "" : (log.t[i] / 1e6).toFixed(6), "t"));
      r.appendChild(document.createTextNode(log.text[i]));
      logInner.appendChild(r);
    }
  }
  logBox.addEventListener("scroll", renderLog);
  logInner.addEventListener("click", (e) => {
    const r = e.target.closest(".r");
    if (!r) return;
    const no = +r.dataset.line, t = S.boot.log.t[no - S.boot.log.first];
    S.logHl = [no, no];
    renderLog();
    if (t !== null && (t < S.v0 || t > S.v1)) { const w = S.v1 - S.v0; S.v0 = t - w / 2; S.v1 = t + w / 2; clampView(); }
    S.cursor = t;
    draw();
  });
  function scrollLog(a, b) {
    const log = S.boot.log;
    S.logHl = [a, b];
    const i = a - log.first;
    logBox.scrollTop = Math.max(0, i * ROW - logBox.clientHeight / 3);
    renderLog();
  }

  // ---------------------------------------------------------------- start
  $("foot").textContent = `${DATA.generator} · ${DATA.inputs.map((x) => x.name).join(", ")}`;
  setupBootPick();
  if (!DATA.boots.length) {
    $("headline").textContent = "no boot found in the input";
  } else {
    // an input of many boots: the page opens on the boot asked for, else the slowest (render/many.py)
    const first = DATA.open || 0;
    if (first) $("boot-select").value = String(first);
    showBoot(first);
  }
  document.body.dataset.ready = "1";
})();
