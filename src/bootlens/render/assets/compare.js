/* bootlens compare viewer. Data: the `bootlens compare --json` object in #bootlens-data.
   Every string reaches the page through textContent, never as markup. */
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("bootlens-data").textContent);
  const $ = (id) => document.getElementById(id);
  const el = bootlensEl;
  const SVG = "http://www.w3.org/2000/svg";
  const sv = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  };
  function fmt(s, signed) {
    if (s === null || s === undefined) return "—";
    const a = Math.abs(s), sign = signed ? (s > 0 ? "+" : s < 0 ? "−" : "±") : (s < 0 ? "−" : "");
    if (a >= 1) return sign + a.toFixed(3) + " s";
    if (a >= 1e-3) return sign + (a * 1e3).toFixed(1) + " ms";
    return sign + Math.round(a * 1e6) + " µs";
  }
  const pct = (p) => (p === null || p === undefined ? "" : (p > 0 ? "+" : "") + p.toFixed(1) + " %");
  const verdict = (d) => d.significance === "significant" ? "yes" : d.significance === "not significant" ? "no" :
    d.change === "not measured" || d.change === "not comparable" ? d.reason : `unknown (${d.reason})`;

  function table(id, cols, rows, opts) {
    // compare rows are plain objects: wrap them for the shared table (values under v)
    const wrap = cols.map((c) => Object.assign({}, c, {
      fmt: c.fmt ? (v, r) => c.fmt(v, r.v) : undefined,
      cls: c.cls ? (r) => c.cls(r.v) : undefined,
      sort: c.sort ? (r) => (typeof c.sort === "function" ? c.sort(r.v) : r.v[c.sort]) : undefined,
    }));
    bootlensTable(typeof id === "string" ? $(id) : id, wrap, rows.map((r) => ({ v: r, cls: r.cls })), opts);
  }

  // the waterfall: baseline total, each top-level stage's change, the rest, the other total
  function waterfall(pairIndex) {
    const k = pairIndex; // index into deltas / stats[k + 1]
    const figs = D.figures;
    const total = figs.find((f) => f.name.startsWith("total"));
    const stages = figs.filter((f) => !f.sub_stage && !f.name.startsWith("total") && !f.name.startsWith("marker"));
    const steps = [];
    if (!total || !total.stats[0] || !total.stats[k + 1]) return null;
    const a = total.stats[0].median_s, b = total.stats[k + 1].median_s;
    let explained = 0;
    for (const f of stages) {
      const d = f.deltas[k];
      if (d.delta_s === null) continue;
      steps.push({ name: f.name, delta: d.delta_s, d: d });
      explained += d.delta_s;
    }
    const rest = b - a - explained;
    if (Math.abs(rest) > 5e-4) steps.push({ name: "rest (medians of stages do not add up to the median total)", delta: rest, rest: true });
    return { a: a, b: b, steps: steps, total: total };
  }

  function drawWaterfall(w, labels, svgBox) {
    const rows = [{ name: `${labels[0]} total`, from: 0, to: w.a, kind: "total" }];
    let x = w.a;
    for (const s of w.steps) {
      rows.push({ name: s.name, from: x, to: x + s.delta, kind: s.rest ? "rest" : s.d.significance === "significant" ? (s.delta < 0 ? "gain" : "loss") : "noise", s: s });
      x += s.delta;
    }
    rows.push({ name: `${labels[1]} total`, from: 0, to: w.b, kind: "total" });
    const W = 900, LBL = 230, VAL = 170, RH = 24, H = rows.length * RH + 28;
    const max = Math.max(w.a, w.b, ...rows.map((r) => Math.max(r.from, r.to))) || 1;
    const X = (v) => LBL + (v / max) * (W - LBL - VAL);
    const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "waterfall of differences" });
    const colors = { total: "#4e79a7", gain: "#59a14f", loss: "#e15759", noise: "#bab0ab", rest: "#d9dde3" };
    rows.forEach((r, i) => {
      const y = 10 + i * RH;
      const x0 = X(Math.min(r.from, r.to)), x1 = X(Math.max(r.from, r.to));
      svg.appendChild(sv("text", { x: LBL - 8, y: y + 15, "text-anchor": "end", "font-size": 12, fill: "#1d2430" },
        r.name.length > 34 ? r.name.slice(0, 33) + "…" : r.name));
      const rect = sv("rect", { x: x0, y: y + 3, width: Math.max(x1 - x0, 1), height: RH - 8, fill: colors[r.kind], "data-kind": r.kind });
      const tip = r.kind === "total" ? `${r.name}: ${fmt(r.to)}` :
        `${r.name}: ${fmt(r.to - r.from, true)}` + (r.s && r.s.d ? ` (${verdict(r.s.d)}; spread ${fmt(r.s.d.spread_s)})` : "");
      rect.appendChild(sv("title", {}, tip));
      svg.appendChild(rect);
      if (i > 0 && r.kind !== "total") {
        svg.appendChild(sv("line", { x1: X(r.from), x2: X(r.from), y1: y - RH + 3, y2: y + RH - 5, stroke: "#68707d", "stroke-dasharray": "2,2" }));
      }
      const val = r.kind === "total" ? fmt(r.to) : `${fmt(r.to - r.from, true)}` + (r.s && r.s.d ? ` · ${verdict(r.s.d) === "yes" ? "significant" : verdict(r.s.d) === "no" ? "not significant" : verdict(r.s.d)}` : "");
      svg.appendChild(sv("text", { x: Math.max(x1, X(Math.max(r.from, r.to))) + 6, y: y + 15, "font-size": 12, fill: r.kind === "noise" ? "#68707d" : "#1d2430" }, val));
    });
    svgBox.appendChild(svg);
  }

  function names(section, nd, labels, kind) {
    const wrap = el("section");
    const h = el("h3", `${kind}: ${nd.names} compared, ${nd.added} added, ${nd.removed} removed, ${nd.significant} significant`);
    wrap.appendChild(h);
    const t = el("table", null, "sortable");
    wrap.appendChild(t);
    const cols = [
      { title: "name", key: "name" },
      { title: labels[0] + " median", key: "a", num: true, fmt: (v) => fmt(v) },
      { title: labels[1] + " median", key: "b", num: true, fmt: (v) => fmt(v) },
      { title: "Δ", key: "delta_s", num: true, fmt: (v) => fmt(v, true), sort: (r) => (r.delta_s === null ? null : Math.abs(r.delta_s)) },
      { title: "Δ%", key: "delta_pct", num: true, fmt: pct },
      { title: "spread", key: "spread_s", num: true, fmt: (v) => fmt(v) },
      { title: "significant", key: "v", cls: (r) => (r.v === "yes" ? (r.delta_s < 0 ? "gain" : "loss") : "ns") },
    ];
    if (kind === "processes") cols.splice(3, 0, { title: "count", key: "counts" });
    const rows = nd.rows.map((d) => ({
      name: d.name + (d.change === "added" ? " (added)" : d.change === "removed" ? " (removed)" : ""),
      a: d.baseline ? d.baseline.median_s : null, b: d.other ? d.other.median_s : null,
      delta_s: d.delta_s, delta_pct: d.delta_pct, spread_s: d.spread_s, v: verdict(d),
      counts: kind === "processes" ? `${d.baseline_count ?? 0} → ${d.other_count ?? 0}` : "",
    }));
    table(t, cols, rows, { empty: nd.note || "no differences" });
    section.appendChild(wrap);
  }

  // ---------------------------------------------------------------- page
  const labels = D.inputs.map((x) => x.label);
  const base = D.inputs[0];
  $("headline").textContent = D.inputs.length === 2 ? `${D.inputs[1].label} against ${base.label}` : `${D.inputs.length - 1} inputs against ${base.label}`;
  const tot = D.figures.find((f) => f.name.startsWith("total"));
  if (tot) {
    const parts = [];
    tot.deltas.forEach((d, i) => parts.push(`${D.inputs[i + 1].label}: ${fmt(d.delta_s, true)} (${pct(d.delta_pct) || "—"}, ${verdict(d) === "yes" ? "significant" : verdict(d) === "no" ? "not significant" : verdict(d)})`));
    $("sub").textContent = `${tot.name}: ` + parts.join(" · ");
  }
  $("rule").textContent = "· " + D.significance_rule.text;
  table("t-inputs", [{ title: "", key: "label" }, { title: "input", key: "name" }, { title: "boots", key: "boots", num: true },
    { title: "", key: "role" }], D.inputs.map((x) => ({ label: x.label, name: x.name, boots: x.boots,
    role: (x.baseline ? "baseline" : "") + (x.folder ? " · run folder" : "") + (x.partial_boots ? ` · ${x.partial_boots} partial` : "") })));
  if (D.tried && D.tried.length) {  // optimize's before/after page: what each change was expected and shown to save
    $("s-tried").hidden = false;
    const guest = D.tried.every((t) => t.clock === "guest");
    $("tried-hint").textContent = "· saved: the baseline's median total − the change's" +
      (guest ? " (on the guest's clock: optimize --deterministic)" : "") +
      "; error: (saved − estimate) / estimate; decided on: the figure and boots a side behind the verdict";
    table("t-tried", [
      { title: "round", key: "round", num: true }, { title: "change", key: "rule" }, { title: "applied", key: "change" },
      { title: "estimate", key: "estimate_s", num: true, fmt: (v) => fmt(v) },
      { title: "saved", key: "saving_s", num: true, fmt: (v) => fmt(v) },
      { title: "in its stage", key: "stage_saving_s", num: true, fmt: (v, r) => v === null ? "—" : `${fmt(v)} (${r.stage})` },
      { title: "error", key: "error_pct", num: true, fmt: pct },
      { title: "kept", key: "kept", fmt: (v) => (v ? "yes" : "no"), cls: (r) => (r.kept ? "gain" : "ns") },
      { title: "decided on", key: "decided_on", fmt: (v, r) => `${v} (${r.boots} boots a side)` },
      { title: "why", key: "decision" },
    ], D.tried);
  }
  const pairs = $("pairs");
  D.comparisons.forEach((c, k) => {
    const sec = el("section", null, "pair");
    sec.appendChild(el("h2", `${c.label} against ${base.label}: where the difference comes from`));
    const w = waterfall(k);
    const box = el("div", null, "waterfall");
    sec.appendChild(box);
    if (w) drawWaterfall(w, [base.label, c.label], box);
    else box.appendChild(el("p", "no total on both sides (a ready marker is needed): no waterfall", "ns"));
    const grid = el("div", null, "names");
    sec.appendChild(grid);
    names(grid, c.initcalls, [base.label, c.label], "initcalls");
    names(grid, c.processes, [base.label, c.label], "processes");
    names(grid, c.probes, [base.label, c.label], "probes");
    // no systemd on either side: nothing to say; one side without finished units: its note
    if (c.units && !(c.units.note || "").endsWith("either input")) names(grid, c.units, [base.label, c.label], "systemd units");
    pairs.appendChild(sec);
  });
  const cols = [{ title: "quantity", key: "name" }];
  D.inputs.forEach((x, i) => cols.push({ title: `${x.label} median`, key: "m" + i, num: true, fmt: (v) => fmt(v) }));
  D.inputs.slice(1).forEach((x, i) => {
    cols.push({ title: `Δ ${x.label}`, key: "d" + i, num: true, fmt: (v) => fmt(v, true) });
    cols.push({ title: `Δ% ${x.label}`, key: "p" + i, num: true, fmt: pct });
    cols.push({ title: "spread", key: "s" + i, num: true, fmt: (v) => fmt(v) });
    cols.push({ title: "significant", key: "v" + i, cls: (r) => r["v" + i] === "yes" ? (r["d" + i] < 0 ? "gain" : "loss") : "ns" });
  });
  table("t-figures", cols, D.figures.map((f) => {
    const r = { name: (f.sub_stage ? "  └ " : "") + f.name };
    f.stats.forEach((s, i) => { r["m" + i] = s ? s.median_s : null; });
    f.deltas.forEach((d, i) => { r["d" + i] = d.delta_s; r["p" + i] = d.delta_pct; r["s" + i] = d.spread_s; r["v" + i] = verdict(d); });
    return r;
  }));
  $("foot").textContent = `${D.generator} · ${D.inputs.map((x) => x.name).join(" · ")}`;
  document.body.dataset.ready = "1";
})();
