/* bootlens: the sortable table shared by the report and compare pages (inlined before each
   page's script). Cells are set with textContent only. */
"use strict";
// an element with text (never markup) and a class
function bootlensEl(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// rows: [{v: {key: value}, cls?, title?}]; cols: [{title, key, num?, fmt?(value, row), cls?(row), sort?(row)}];
// opts: {onClick?(row), empty?: text shown when there are no rows}
function bootlensTable(t, cols, rows, opts) {
  const o = opts || {};
  const mk = bootlensEl;
  t.textContent = "";
  const thead = mk("thead"), htr = mk("tr");
  let order = rows.map((_, i) => i), sortCol = -1, dir = 1;
  cols.forEach((c, ci) => {
    const th = mk("th", c.title, c.num ? "n" : "");
    if (t.classList.contains("sortable")) th.addEventListener("click", () => sortBy(ci));
    htr.appendChild(th);
  });
  thead.appendChild(htr);
  t.appendChild(thead);
  const tbody = mk("tbody");
  t.appendChild(tbody);
  function fill() {
    tbody.textContent = "";
    if (!rows.length && o.empty) {
      const tr = mk("tr"), td = mk("td", o.empty, "ns");
      td.colSpan = cols.length;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    for (const i of order) {
      const r = rows[i], tr = mk("tr", null, [o.onClick ? "click" : "", r.cls || ""].join(" ").trim());
      for (const c of cols) {
        const v = r.v[c.key];
        tr.appendChild(mk("td", c.fmt ? c.fmt(v, r) : v, [c.num ? "n" : "", c.cls ? c.cls(r) : ""].join(" ").trim()));
      }
      if (r.title) tr.title = r.title;  // hover text (a stage's evidence); a property, never markup
      if (o.onClick) tr.addEventListener("click", () => o.onClick(r));
      tbody.appendChild(tr);
    }
  }
  function sortBy(ci) {
    const c = cols[ci];
    const val = c.sort || ((r) => r.v[c.key]);
    dir = sortCol === ci ? -dir : (c.num ? -1 : 1);
    sortCol = ci;
    order.sort((a, b) => {
      const x = val(rows[a]), y = val(rows[b]);
      if (x === y) return a - b;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    t.querySelectorAll("th").forEach((th, j) => { th.classList.toggle("asc", j === ci && dir > 0); th.classList.toggle("desc", j === ci && dir < 0); });
    fill();
  }
  fill();
}
