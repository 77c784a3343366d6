"use strict";
const data = JSON.parse(document.getElementById("explorer-data").textContent);
const grid = document.getElementById("grid");
const T = data.rows.length, S = data.cols.length;
const state = {mode: 0, row: null, col: null, locked: false};
const revealed = new Set();     // with data.predict_first, the maps the learner has revealed
const reveal = document.getElementById("reveal");
const MOVES = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]};

function show(lines, into) {
  for (const line of lines) {
    const div = document.createElement("div");
    div.className = "line";
    for (const piece of line) {
      if (typeof piece === "string") { div.append(piece); continue; }
      const span = document.createElement("span");
      span.className = "num";
      span.dataset.name = piece[0];
      span.textContent = piece[1];
      div.append(span);
    }
    into.append(div);
  }
}

function where() {
  return "row " + (state.row + 1) + " (" + data.rows[state.row] + ")" + (state.col === null ? ""
    : ", column " + (state.col + 1) + " (" + data.cols[state.col] + ")");
}

function hidden(m) {
  return Boolean(data.predict_first) && !revealed.has(m.key);
}

function render() {
  const m = data.modes[state.mode], secret = hidden(m);
  for (const b of document.querySelectorAll("button.mode")) {
    b.setAttribute("aria-pressed", String(b.dataset.mode === m.key));
  }
  if (reveal) reveal.hidden = !secret;
  document.getElementById("subtitle").textContent = secret
    ? "Predict this map on paper first, then press Reveal." : m.subtitle;
  for (const td of grid.querySelectorAll("td.cell")) {
    const i = Number(td.dataset.row), j = Number(td.dataset.col), c = m.cells[i][j];
    td.textContent = secret ? "?" : c.text;
    td.className = "cell " + (secret ? "hidden" : c.kind);
    td.style.backgroundColor = secret ? "" : c.fill || "";
    td.style.color = secret ? "" : c.ink;
    td.classList.toggle("dim", state.row !== null && i !== state.row);
    td.classList.toggle("focus", i === state.row && j === state.col);
  }
  for (const tr of grid.querySelectorAll("tbody tr")) {
    const i = Number(tr.dataset.row), changed = !secret && m.changed.includes(i);
    tr.classList.toggle("changed", changed);
    tr.querySelector("td.mark").textContent = changed ? "\u25c0 changed" : "";
  }
  for (const td of grid.querySelectorAll("td.side")) {
    const i = Number(td.dataset.row);
    td.textContent = secret ? "?" : m.side_text[i][Number(td.dataset.col)];
    td.classList.toggle("changed", !secret && m.side_changed.includes(i));
    td.classList.toggle("dim", state.row !== null && i !== state.row);
  }
  for (const th of grid.querySelectorAll("th.row")) {
    th.classList.toggle("focus", Number(th.dataset.row) === state.row);
  }
  for (const th of grid.querySelectorAll("th.col")) {
    th.classList.toggle("focus", Number(th.dataset.col) === state.col);
  }
  const panel = document.getElementById("arithmetic");
  panel.replaceChildren();
  if (state.row !== null && !secret) {
    const rowLines = m.row_arithmetic[state.row];
    show(state.col === null ? rowLines : m.arithmetic[state.row][state.col].concat(rowLines),
         panel);
  }
  document.getElementById("status").textContent = secret
    ? "Hidden until you predict it: press Reveal, or open the page with #answers=shown."
    : state.row === null ? "Hover a cell to see how its weight comes about."
    : state.locked ? "Locked on " + where() + ": click it again or press Escape to unlock."
    : "Showing " + where() + ": click to lock.";
  let fragment = "mode=" + m.key;
  if (state.locked && state.row !== null) {
    fragment += "&row=" + (state.row + 1) + (state.col === null ? "" : "&col=" + (state.col + 1));
  }
  if (data.predict_first && data.modes.every(mode => revealed.has(mode.key))) {
    fragment += "&answers=shown";
  }
  if (location.hash !== "#" + fragment) history.replaceState(null, "", "#" + fragment);
}

function position(text, n) {
  const k = Number(text);
  return text !== null && Number.isInteger(k) && k >= 1 && k <= n ? k - 1 : null;
}

function readFragment() {
  const asked = new URLSearchParams(location.hash.slice(1));
  const mode = data.modes.findIndex(m => m.key === asked.get("mode"));
  state.mode = mode >= 0 ? mode : 0;
  state.row = position(asked.get("row"), T);
  state.col = state.row === null ? null : position(asked.get("col"), S);
  state.locked = state.row !== null;
  if (asked.get("answers") === "shown") data.modes.forEach(m => revealed.add(m.key));
}

function pointedAt(event) {
  const target = event.target.closest("td.cell, th.row");
  return target && [Number(target.dataset.row),
                    target.dataset.col === undefined ? null : Number(target.dataset.col)];
}

grid.addEventListener("mouseover", event => {
  const at = pointedAt(event);
  if (!at || state.locked) return;
  [state.row, state.col] = at;
  render();
});
grid.addEventListener("mouseleave", () => {
  if (state.locked) return;
  state.row = state.col = null;
  render();
});
grid.addEventListener("click", event => {
  const at = pointedAt(event);
  if (!at) return;
  if (state.locked && at[0] === state.row && at[1] === state.col) {
    state.locked = false;
  } else {
    [state.row, state.col] = at;
    state.locked = true;
  }
  render();
});
grid.addEventListener("keydown", event => {
  if (event.key in MOVES) {
    const [down, right] = MOVES[event.key];
    if (state.row === null) {
      state.row = state.col = 0;
    } else {
      state.row = Math.min(Math.max(state.row + down, 0), T - 1);
      state.col = Math.min(Math.max((state.col === null ? 0 : state.col) + right, 0), S - 1);
    }
    state.locked = true;
  } else if (event.key === "Enter" || event.key === " ") {
    if (state.row === null) {
      state.row = state.col = 0;
      state.locked = true;
    } else {
      state.locked = !state.locked;
    }
  } else {
    return;
  }
  event.preventDefault();
  render();
});
document.addEventListener("keydown", event => {
  if (event.key !== "Escape" || !state.locked) return;
  state.locked = false;
  render();
});
for (const button of document.querySelectorAll("button.mode")) {
  button.addEventListener("click", () => {
    state.mode = data.modes.findIndex(m => m.key === button.dataset.mode);
    render();
  });
}
if (reveal) {
  reveal.addEventListener("click", () => {
    revealed.add(data.modes[state.mode].key);
    render();
  });
}
window.addEventListener("hashchange", () => { readFragment(); render(); });
readFragment();
render();
