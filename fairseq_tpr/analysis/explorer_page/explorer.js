// The role explorer's script (fairseq_tpr/analysis/explorer.py writes it into the page).
// It computes no number: it draws the header (#meta) and the typed arrays (#arrays) that
// explorer.py computed with the functions of `fairseq-tpr-roles stats/kmeans/purity/heatmap`.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const PER_PAGE = 20;        // sentences drawn at a time
  const MAX_LISTED = 300;     // occurrences of a role listed
  const TYPES = { uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, float32: Float32Array };
  const TAB20 = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22",
    "#dbdb8d", "#17becf", "#9edae5"];
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const ROW_NAMES = { encoder: "source", decoder: "target" };

  let M;  // the header
  let A;  // name -> typed array
  const S = { side: null, attention: null, layer: null, head: 0, what: null, page: 0, query: "",
    filtered: [], selected: 0, role: null };

  // ------------------------------------------------------------------ data
  async function inflate(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }

  function views(buffer, index) {
    const out = {};
    for (const [name, [dtype, offset, count]] of Object.entries(index)) {
      out[name] = new TYPES[dtype](buffer, offset, count);
    }
    return out;
  }

  const site = () => M.sites.find((s) => s.side === S.side && s.attention === S.attention
    && String(s.layer) === String(S.layer));
  const tokensOf = (side) => M.sides[side].offsets[M.n];
  const span = (side, ex) => [M.sides[side].offsets[ex], M.sides[side].offsets[ex + 1]];
  const sym = (side, t) => M.symbols[A["tokens/" + side][t]];
  // a probability kept in units of 1 / prob_scale, printed to the digits it has (2 for 100)
  const fixed = (units) => (units / M.prob_scale).toFixed(Math.round(Math.log10(M.prob_scale)));
  const pct = (x) => (100 * x).toFixed(1) + "%";

  function half(bits) {  // a float16 from its bits
    const exp = (bits >> 10) & 31, frac = bits & 1023, sign = bits >> 15 ? -1 : 1;
    if (exp === 0) return sign * frac * 2 ** -24;
    if (exp === 31) return frac ? NaN : sign * Infinity;
    return sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }

  // per (site, head): the colour class of each token of the site's side and, for role distributions,
  // where each token's entries start in <key>/top and <key>/prob (its first entry is the argmax)
  const cache = new Map();
  function head(s, h) {
    const name = `${s.key}/${h}`;
    if (cache.has(name)) return cache.get(name);
    const n = tokensOf(s.side);
    let out;
    if (s.colour === "role") {
      const counts = A[s.key + "/count"], top = A[s.key + "/top"];
      let at = 0;
      for (let u = 0; u < h * n; u++) at += counts[u];
      const cls = new Uint16Array(n), start = new Uint32Array(n);
      for (let t = 0; t < n; t++) {
        start[t] = at;
        cls[t] = top[at];
        at += counts[h * n + t];
      }
      out = { cls, start };
    } else {
      out = { cls: A[s.key + "/class"].subarray(h * n, (h + 1) * n) };
    }
    cache.set(name, out);
    return out;
  }

  function colour(c, n) {
    if (n <= 20) return TAB20[c];
    return `hsl(${((c * 137.508) % 360).toFixed(1)}, 65%, ${c % 2 ? 62 : 76}%)`;
  }

  function exampleOf(side, t) {  // the example holding token t of a side (binary search)
    const off = M.sides[side].offsets;
    let lo = 0, hi = M.n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (off[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("data-")) e.setAttribute(k, v); else e[k] = v;
    }
    for (const c of children) e.append(c);
    return e;
  }

  // ------------------------------------------------------------------ selectors
  function fill(select, values, labels, keep, fallback = values[0]) {
    select.replaceChildren(...values.map((v, i) => el("option", { value: String(v), textContent: labels[i] })));
    const want = String(keep);
    select.value = values.map(String).includes(want) ? want : String(fallback);
    select.disabled = values.length < 2;
    return select.value;
  }

  function fillSites() {
    const on = M.sites.filter((s) => s.side === S.side);
    const order = ["embed", "self", "cross"];
    const atts = order.filter((a) => on.some((s) => s.attention === a));
    const names = { embed: "embedding (Eq. 2)", self: "self-attention", cross: "cross-attention" };
    S.attention = fill($("site"), atts, atts.map((a) => names[a]), S.attention);
    fillLayers();
  }

  function fillLayers() {
    const layers = M.sites.filter((s) => s.side === S.side && s.attention === S.attention).map((s) => s.layer);
    S.layer = fill($("layer"), layers, layers.map(String), S.layer, layers[layers.length - 1]);  // the last, as --layer -1
    fillHeads();
  }

  function fillHeads() {
    const s = site();
    const heads = [...Array(s.heads).keys()];
    S.head = Number(fill($("head"), heads, heads.map(String), S.head));
    const whats = s.heatmaps.length ? s.heatmaps : ["none"];
    const names = { attn: "attention", role_attn: "role attention (Eq. 5)", none: "none in this dump" };
    S.what = fill($("what"), whats, whats.map((w) => names[w]), S.what);
  }

  // ------------------------------------------------------------------ sentences
  function sentenceText(ex) {
    return Object.keys(M.sides).map((side) => {
      const [a, b] = span(side, ex);
      const syms = [];
      for (let t = a; t < b; t++) syms.push(sym(side, t));
      return syms.join("").replace(/\u2423/g, " ") + "\n" + syms.join(" ");
    }).join("\n").toLowerCase();
  }

  let texts = null;
  function filter() {
    if (texts === null) texts = Array.from({ length: M.n }, (_, ex) => sentenceText(ex));
    const q = S.query.toLowerCase();
    S.filtered = [];
    for (let ex = 0; ex < M.n; ex++) if (!q || texts[ex].includes(q)) S.filtered.push(ex);
    S.page = 0;
  }

  function drawSentences() {
    const pages = Math.max(1, Math.ceil(S.filtered.length / PER_PAGE));
    S.page = Math.min(S.page, pages - 1);
    const shown = S.filtered.slice(S.page * PER_PAGE, (S.page + 1) * PER_PAGE);
    $("page-info").textContent = `sentences ${shown.length ? S.page * PER_PAGE + 1 : 0}-${S.page * PER_PAGE
      + shown.length} of ${S.filtered.length}` + (S.query ? ` matching "${S.query}"` : "") + ` (${M.n} in all)`;
    $("prev").disabled = S.page === 0;
    $("next").disabled = S.page >= pages - 1;
    const box = $("sentences");
    box.replaceChildren(...shown.map((ex) => {
      const div = el("div", { class: "sentence" + (ex === S.selected ? " selected" : ""), "data-ex": ex },
        el("div", { class: "head", textContent: `#${ex} (id ${M.ids[ex]} of ${M.split})` }));
      for (const side of Object.keys(M.sides)) {
        const row = el("div", { class: "row" },
          el("span", { class: "name", textContent: M.language_model ? "text" : ROW_NAMES[side] }));
        const [a, b] = span(side, ex);
        for (let t = a; t < b; t++) {
          row.append(el("span", { class: "tok", tabIndex: 0, textContent: sym(side, t), "data-side": side,
            "data-t": t }));
        }
        div.append(row);
      }
      return div;
    }));
    colourTokens();
  }

  function colourTokens() {
    const s = site();
    const cls = head(s, S.head).cls;
    for (const tok of $("sentences").querySelectorAll(".tok")) {
      if (tok.dataset.side === s.side) {
        const c = cls[Number(tok.dataset.t)];
        tok.style.backgroundColor = colour(c, s.classes);
        tok.style.color = s.classes <= 20 && c % 2 === 0 ? "#fff" : "";  // the dark half of tab20
        tok.dataset.c = c;
        tok.classList.remove("plain");
      } else {
        tok.style.backgroundColor = tok.style.color = "";
        delete tok.dataset.c;
        tok.classList.add("plain");
      }
    }
  }

  // ------------------------------------------------------------------ the token under the pointer
  function showDetail(tok) {
    const s = site();
    const side = tok.dataset.side, t = Number(tok.dataset.t);
    const ex = exampleOf(side, t), pos = t - M.sides[side].offsets[ex];
    const box = $("detail");
    const rows = [["sentence", `#${ex} (id ${M.ids[ex]})`], [`${ROW_NAMES[side] || side} position`,
      `${pos} of ${M.sides[side].offsets[ex + 1] - M.sides[side].offsets[ex]} (counted from 0)`]];
    if (side === "decoder") {
      rows.push(["reads", sym(side, t)], ["predicts", M.symbols[A["predicts/decoder"][t]]]);
    } else {
      rows.push(["symbol", sym(side, t)]);
    }
    if (M.labels && M.labels.side === side) rows.push(["label", M.labels.names[A["labels/" + side][t]]]);
    const table = el("table", { class: "facts" }, ...rows.map(([k, v]) => el("tr", {}, el("th", { textContent: k }),
      el("td", { textContent: v }))));
    const parts = [table];
    if (side !== s.side) {
      parts.push(el("p", { textContent: `The selected site is on the ${s.side}: select side ${side} for this token's roles.` }));
    } else if (s.colour === "role") {
      const n = tokensOf(side), at = head(s, S.head).start[t];
      const ids = A[s.key + "/top"], probs = A[s.key + "/prob"], k = A[s.key + "/count"][S.head * n + t];
      const dist = el("table", { class: "dist" }, el("tr", {}, el("th", { textContent: "role" }),
        el("th", { textContent: "p" })));
      for (let j = 0; j < k; j++) {
        dist.append(el("tr", {}, el("td", { textContent: String(ids[at + j]) }),
          el("td", { class: "num", textContent: fixed(probs[at + j]) })));
      }
      parts.push(el("p", { textContent: `${s.key} head ${S.head}: its ${k} likeliest of ${s.classes} roles `
        + `(at most ${M.top}; those that print above zero)` }), dist);
    } else {
      const n = tokensOf(side);
      parts.push(el("p", { class: "cluster", textContent: `${s.key} head ${S.head}: k-means cluster `
        + `${head(s, S.head).cls[t]} of ${M.k}, distance to its centre `
        + `${half(A[s.key + "/distance"][S.head * n + t]).toPrecision(3)}` }));
    }
    box.replaceChildren(...parts);
  }

  // ------------------------------------------------------------------ legend and head statistics
  function classCounts(s) {
    const h = s.per_head[S.head];
    if (s.colour === "role") return h.stats.usage;
    return h.clusters.map((c) => c.size);
  }

  function roleButton(s, c, label, title) {
    const b = el("button", { type: "button", title: title || label, "data-class": c, class: c === S.role ? "active" : "" },
      el("span", { class: "swatch", style: `background:${colour(c, s.classes)}` }), label);
    return b;
  }

  function drawLegend() {
    const s = site();
    const counts = classCounts(s);
    const order = [...counts.keys()].filter((c) => counts[c] > 0).sort((a, b) => counts[b] - counts[a] || a - b);
    $("legend-title").textContent = s.colour === "role"
      ? `Roles of ${s.key} head ${S.head} (argmax; ${order.length} of ${s.classes} used)`
      : `k-means clusters of the role vectors of ${s.key} head ${S.head} (k = ${M.k}, seed ${M.seed})`;
    const clusters = s.colour === "cluster" ? s.per_head[S.head].clusters : null;  // a role legend has no k-means
    $("legend").replaceChildren(...order.map((c) => {
      const tops = clusters ? clusters[c].top.slice(0, 3).map(([sy, k]) => `${sy} (${k})`).join(", ") : "";
      const name = s.colour === "role" ? `role ${c}` : `cluster ${c}`;
      return roleButton(s, c, `${name}: ${counts[c]}`, tops ? `${name}: ${counts[c]} tokens; most frequent ${tops}` : "");
    }));
  }

  function factRows(rows) {
    return el("table", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { textContent: k }),
      el("td", { class: "num", textContent: v }))));
  }

  function drawStats() {
    const s = site();
    const h = s.per_head[S.head];
    $("stats-title").textContent = `${s.key} head ${S.head}`;
    const parts = [];
    if (h.stats) {
      const st = h.stats;
      parts.push(el("div", { id: "head-stats" }, factRows([
        ...M.thresholds.map((t) => [`one-hot (max > ${t})`, pct(st.one_hot[t])]),
        ["entropy (nats)", st.entropy.toFixed(3)],
        ["roles used", `${st.roles_used} of ${s.classes}`],
        ["usage perplexity", st.usage_perplexity.toFixed(2)]])));
      parts.push(el("p", { textContent: `Site mean over ${s.heads} heads: ` + M.thresholds.map((t) =>
        `${pct(s.one_hot[t])} with max > ${t}`).join(", ") + `, entropy ${s.entropy.toFixed(3)} nats.` }));
    }
    if (h.inertia !== undefined) {
      parts.push(el("p", { textContent: `k-means of the role vectors: k = ${M.k}, seed ${M.seed}, `
        + `inertia ${h.inertia.toPrecision(4)}.` }));
    }
    const counts = classCounts(s);
    const top = Math.max(1, ...counts);
    const bars = el("div", { class: "bars", title: "tokens per role (argmax) or per cluster; click one to list them" });
    counts.forEach((n, c) => bars.append(el("button", { type: "button", "data-class": c,
      title: `${s.colour} ${c}: ${n} tokens`, style: `height:${(100 * n / top).toFixed(1)}%;background:${colour(c, s.classes)}` })));
    parts.push(el("div", {}, `${s.colour === "role" ? "role usage" : "cluster sizes"} (tokens):`), bars);
    if (h.purity !== undefined) {
      const b = M.labels.baselines;
      parts.push(el("div", { id: "purity" }, factRows([
        [`purity of the ${M.k} clusters against ${M.labels.path}`, pct(h.purity)],
        [`by the symbol read (${b.n_symbols} symbols)`, pct(b.symbols)],
        [`by its ${M.k - 1} commonest symbols and the rest`, pct(b.symbols_k)],
        [`by the position (${b.n_positions} positions)`, pct(b.positions)],
        [`by the position in ${M.k} bins`, pct(b.positions_k)],
        ["majority label", pct(b.majority)]])));
    } else if (M.labels) {
      parts.push(el("p", { textContent: `Purity: the labels (${M.labels.path}) are of the ${M.labels.side}.` }));
    }
    $("stats").replaceChildren(...parts);
  }

  // ------------------------------------------------------------------ heatmap
  function viridis(x) {
    const f = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(f), VIRIDIS.length - 2), w = f - i;
    const c = VIRIDIS[i].map((v, j) => Math.round(v + w * (VIRIDIS[i + 1][j] - v)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  let heat = null;  // what the canvas shows: {rows, cols, values, cell, left, topPad}
  function drawHeatmap() {
    const s = site(), ex = S.selected, canvas = $("heatmap"), note = $("heatmap-note");
    const data = S.what === "none" ? null : A[`heatmap/${S.what}/${s.key}/${ex}`];
    $("heatmap-title").textContent = `Heatmap: sentence #${ex}, ${s.key} head ${S.head}`;
    $("heatcell").textContent = "";
    heat = null;
    if (!data) {
      canvas.width = canvas.height = 1;
      canvas.dataset.signature = "";
      note.textContent = S.what === "none"
        ? "This dump holds no attention maps here (dump with --components ...,attn to keep them)."
        : `The page keeps the heatmaps of the first ${M.heatmap_examples} sentences (--heatmap-examples); `
          + `sentence #${ex} is not one of them.`;
      return;
    }
    const [a, b] = span(s.side, ex);
    const rows = [];
    for (let t = a; t < b; t++) rows.push(sym(s.side, t));
    let cols;
    if (S.what === "attn") {
      const keySide = s.side === "encoder" || s.attention === "cross" ? "encoder" : "decoder";
      const [c0, c1] = span(keySide, ex);
      cols = [];
      for (let t = c0; t < c1; t++) cols.push(sym(keySide, t));
    } else {
      cols = [...Array(s.classes).keys()].map(String);
    }
    const T = rows.length, C = cols.length, size = T * C;
    const values = data.subarray(S.head * size, (S.head + 1) * size);
    let vmax = 1;
    for (const v of values) vmax = Math.max(vmax, v);
    const cell = Math.max(3, Math.min(14, Math.floor(420 / Math.max(T, C))));
    const left = cell >= 8 ? 48 : 0, topPad = cell >= 8 ? 40 : 0;
    canvas.width = left + C * cell;
    canvas.height = topPad + T * cell;
    const g = canvas.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, canvas.width, canvas.height);
    let sum = 0;
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < C; j++) {
        const v = values[i * C + j];
        sum += v;
        g.fillStyle = viridis(v / vmax);
        g.fillRect(left + j * cell, topPad + i * cell, cell, cell);
      }
    }
    if (left) {
      g.fillStyle = "#333";
      g.font = `${Math.min(11, cell)}px monospace`;
      g.textAlign = "right";
      g.textBaseline = "middle";
      rows.forEach((r, i) => g.fillText(r.slice(0, 6), left - 3, topPad + (i + 0.5) * cell));
      g.save();
      g.textAlign = "left";
      cols.forEach((c, j) => {
        g.save();
        g.translate(left + (j + 0.5) * cell, topPad - 3);
        g.rotate(-Math.PI / 2);
        g.fillText(c.slice(0, 6), 0, 0);
        g.restore();
      });
      g.restore();
    }
    canvas.dataset.signature = `${S.what}:${s.key}:${S.head}:${ex}:${sum}`;
    note.textContent = S.what === "attn" ? "rows: queries; columns: the keys they attend to; hover a cell for its value"
      : "rows: tokens; columns: the roles n of Eq. 5; hover a cell for its value";
    heat = { rows, cols, values, cell, left, topPad, C, T };
  }

  function heatCell(event) {
    if (!heat) return;
    const r = $("heatmap").getBoundingClientRect();
    const scale = $("heatmap").width / r.width;
    const j = Math.floor(((event.clientX - r.left) * scale - heat.left) / heat.cell);
    const i = Math.floor(((event.clientY - r.top) * scale - heat.topPad) / heat.cell);
    if (i < 0 || j < 0 || i >= heat.T || j >= heat.C) { $("heatcell").textContent = ""; return; }
    const col = S.what === "attn" ? `key ${j} '${heat.cols[j]}'` : `role ${j}`;
    $("heatcell").textContent = `row ${i} '${heat.rows[i]}', ${col}: ${fixed(heat.values[i * heat.C + j])}`;
  }

  // ------------------------------------------------------------------ tokens with a role
  function drawOccurrences() {
    const box = $("occurrences");
    if (S.role === null) return;
    const s = site(), n = tokensOf(s.side), cls = head(s, S.head).cls;
    const hits = [];
    for (let t = 0; t < n; t++) if (cls[t] === S.role) hits.push(t);
    const name = s.colour === "role" ? `role ${S.role}` : `cluster ${S.role}`;
    const sentences = new Set(hits.map((t) => exampleOf(s.side, t)));
    $("occ-title").textContent = `Tokens with ${name} (${s.key} head ${S.head}): ${hits.length} in `
      + `${sentences.size} sentences`;
    const lines = hits.slice(0, MAX_LISTED).map((t) => {
      const ex = exampleOf(s.side, t), [a, b] = span(s.side, ex);
      const before = [], after = [];
      for (let u = Math.max(a, t - 5); u < t; u++) before.push(sym(s.side, u));
      for (let u = t + 1; u < Math.min(b, t + 6); u++) after.push(sym(s.side, u));
      return el("div", { "data-ex": ex, "data-t": t, title: "show this sentence" }, `#${ex}: ${before.join(" ")} `,
        el("b", { textContent: sym(s.side, t) }), ` ${after.join(" ")}`);
    });
    if (hits.length > MAX_LISTED) lines.push(el("p", { textContent: `… and ${hits.length - MAX_LISTED} more` }));
    box.replaceChildren(...lines);
  }

  function showSentence(ex) {
    if (!S.filtered.includes(ex)) { S.query = ""; $("search").value = ""; filter(); }
    S.page = Math.floor(S.filtered.indexOf(ex) / PER_PAGE);
    select(ex);
    const div = $("sentences").querySelector(`.sentence[data-ex="${ex}"]`);
    if (div) div.scrollIntoView({ block: "nearest" });
  }

  function select(ex) {
    S.selected = ex;
    drawSentences();
    drawHeatmap();
  }

  // ------------------------------------------------------------------ wiring
  function redraw() {
    colourTokens();
    drawLegend();
    drawStats();
    drawHeatmap();
    drawOccurrences();
  }

  function pickRole(event) {
    const b = event.target.closest("button[data-class]");
    if (!b) return;
    S.role = Number(b.dataset.class);
    drawLegend();
    drawOccurrences();
  }

  function wire() {
    $("side").addEventListener("change", (e) => { S.side = e.target.value; S.role = null; fillSites(); redraw(); });
    $("site").addEventListener("change", (e) => { S.attention = e.target.value; S.role = null; fillLayers(); redraw(); });
    $("layer").addEventListener("change", (e) => { S.layer = e.target.value; S.role = null; fillHeads(); redraw(); });
    $("head").addEventListener("change", (e) => { S.head = Number(e.target.value); S.role = null; redraw(); });
    $("what").addEventListener("change", (e) => { S.what = e.target.value; drawHeatmap(); });
    $("search").addEventListener("input", (e) => { S.query = e.target.value; filter(); drawSentences(); });
    $("prev").addEventListener("click", () => { S.page -= 1; drawSentences(); });
    $("next").addEventListener("click", () => { S.page += 1; drawSentences(); });
    const box = $("sentences");
    const hover = (e) => {
      const tok = e.target.closest(".tok");
      if (!tok) return;
      for (const other of box.querySelectorAll(".tok.hl")) other.classList.remove("hl");
      tok.classList.add("hl");
      showDetail(tok);
    };
    box.addEventListener("mouseover", hover);
    box.addEventListener("focusin", hover);
    box.addEventListener("click", (e) => {
      const div = e.target.closest(".sentence");
      if (div && Number(div.dataset.ex) !== S.selected) select(Number(div.dataset.ex));
    });
    $("legend").addEventListener("click", pickRole);
    $("stats").addEventListener("click", pickRole);
    $("occurrences").addEventListener("click", (e) => {
      const line = e.target.closest("div[data-ex]");
      if (line) showSentence(Number(line.dataset.ex));
    });
    $("heatmap").addEventListener("mousemove", heatCell);
  }

  function describe() {
    const sides = Object.keys(M.sides).filter((side) => M.sides[side].roles);
    $("title").textContent = `Roles of ${M.arch} (${M.kind} roles)`;
    $("summary").textContent = `${M.n} examples of ${M.split} (${M.mode}) from ${M.dump}, checkpoint `
      + `${M.checkpoint}; ${M.sites.length} sites on the ${sides.join(" and ")}. Tokens are coloured by `
      + (M.kind === "discrete" ? "their argmax role" : `the k-means cluster (k = ${M.k}) of their role vector`)
      + (M.labels ? `; labels: ${M.labels.path} (${M.labels.side})` : "") + ".";
  }

  async function main() {
    M = JSON.parse($("meta").textContent);
    A = views(await inflate($("arrays").textContent.trim()), M.arrays);
    describe();
    const sides = ["encoder", "decoder"].filter((side) => M.sites.some((s) => s.side === side));
    S.side = fill($("side"), sides, sides, sides[0]);
    S.attention = "self";  // the first view: the last layer's self-attention, as `kmeans` and `heatmap` by default
    fillSites();
    wire();
    filter();
    drawSentences();
    redraw();
    window.explorer = { ready: performance.now(), state: S, meta: M, arrays: A };
    document.body.dataset.ready = "true";
  }

  main().catch((e) => {
    $("error").hidden = false;
    $("error").textContent = "The explorer could not start: " + e;
    console.error(e);
  });
})();
