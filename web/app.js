"use strict";
const $ = (id) => document.getElementById(id);
const photoCanvas = $("photo"), maskCanvas = $("mask"), marksCanvas = $("marks");
const DRAG_PIXELS = 6;
const state = {
  file: null, id: null, width: 0, height: 0, encodeMs: 0,
  points: [], box: null, history: [],
  result: null, selected: 0, decodeMs: 0, request: 0, drag: null,
  // "Everything": null, or { masks: [{ record, ends, color }], owner, selected, generateMs }.
  everything: null, finding: false,
};

function setPhase(phase) { document.body.dataset.state = phase; }

function showStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

async function callApi(method, path, body, contentType) {
  const headers = contentType ? { "Content-Type": contentType } : {};
  const response = await fetch(path, { method, body, headers });
  let data = null;
  try { data = await response.json(); } catch (ignored) { data = null; }
  if (!response.ok) {
    const error = new Error((data && data.error) || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function updateButtons() {
  const hasPrompt = state.points.length > 0 || state.box !== null;
  const tapping = state.everything === null && !state.finding;
  $("undo").disabled = !tapping || state.history.length === 0;
  $("clear").disabled = !tapping || !hasPrompt;
  $("download").disabled = !tapping || !(state.result && state.result.masks.length);
  $("everything").disabled = !state.id || state.finding;
  $("busy").hidden = !state.finding;
  $("tap-mode").hidden = state.everything === null;
}

function updateStatus() {
  if (state.everything) {
    updateEverythingStatus();
    return;
  }
  const parts = [`${state.file.name}: ${state.width}\u00d7${state.height}`, `encode ${state.encodeMs.toFixed(0)} ms`];
  const r = state.result;
  if (r) {
    const m = r.masks[state.selected];
    parts.push(`decode ${r.decode_ms.toFixed(1)} ms`);
    parts.push(`mask ${state.selected + 1}/${r.masks.length}: IoU ${m.iou.toFixed(3)}, ${m.area} px`);
    if (r.object_score <= 0) parts.push("the model sees no object here");
  } else {
    parts.push("click the object");
  }
  showStatus(parts.join(" \u00b7 "));
}

async function uploadCurrentFile() {
  const info = await callApi("POST", "/v1/images", state.file, "application/octet-stream");
  state.id = info.id;
  state.width = info.width;
  state.height = info.height;
  state.encodeMs = info.encode_ms;
  return info;
}

async function openFile(file) {
  if (!file) return;
  if (state.id) callApi("DELETE", `/v1/images/${state.id}`).catch(() => {});
  Object.assign(state, { file, id: null, points: [], box: null, history: [], result: null, selected: 0,
                         everything: null, finding: false });
  state.request++;
  forgetEverything();
  renderCandidates();
  updateButtons();
  setPhase("encoding");
  showStatus(`Encoding ${file.name}\u2026`);
  const url = URL.createObjectURL(file);
  try {
    await uploadCurrentFile();
    const picture = new Image();
    picture.src = url;
    await picture.decode();
    for (const canvas of [photoCanvas, maskCanvas, marksCanvas]) {
      canvas.width = state.width;
      canvas.height = state.height;
    }
    // The server applies EXIF orientation as the browser does; drawing at the
    // server's size keeps clicks in the coordinates the model sees.
    photoCanvas.getContext("2d").drawImage(picture, 0, 0, state.width, state.height);
    photoCanvas.style.width = state.width < 640 ? "640px" : "";
    $("dropzone").hidden = true;
    $("stage").hidden = false;
    drawMarks();
    await drawMask();
    updateStatus();
    updateButtons();
    setPhase("ready");
  } catch (error) {
    showStatus(`Could not open ${file.name}: ${error.message}`, true);
    setPhase("error");
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function segment() {
  if (state.everything) return;
  updateButtons();
  drawMarks();
  if (!state.id) return;
  const request = ++state.request;
  setPhase("segmenting");
  if (state.points.length === 0 && state.box === null) {
    state.result = null;
    renderCandidates();
    await drawMask();
    updateStatus();
    updateButtons();
    setPhase("ready");
    return;
  }
  const mode = $("multimask").value;
  const multimask = mode === "on" || (mode === "auto" && state.points.length === 1 && state.box === null);
  const body = JSON.stringify({ points: state.points, box: state.box, multimask, format: "png" });
  const send = () => callApi("POST", `/v1/images/${state.id}/segment`, body, "application/json");
  try {
    let result;
    try {
      result = await send();
    } catch (error) {
      if (error.status !== 404) throw error;
      showStatus("The server dropped this image from its cache; encoding it again\u2026");
      await uploadCurrentFile();
      result = await send();
    }
    if (request !== state.request) return;
    state.result = result;
    state.selected = result.best;
    renderCandidates();
    await drawMask();
    if (request !== state.request) return;
    updateStatus();
    updateButtons();
    setPhase("mask");
  } catch (error) {
    if (request !== state.request) return;
    showStatus(`Segmentation failed: ${error.message}`, true);
    setPhase("error");
  }
}

function renderCandidates() {
  const box = $("candidates");
  box.replaceChildren();
  const r = state.result;
  if (!r || r.masks.length < 2 || state.everything) return;
  r.masks.forEach((mask, index) => {
    const button = document.createElement("button");
    button.textContent = `#${index + 1} IoU ${mask.iou.toFixed(2)}`;
    button.title = `${mask.area} px`;
    button.classList.toggle("selected", index === state.selected);
    button.addEventListener("click", async () => {
      state.selected = index;
      renderCandidates();
      await drawMask();
      updateStatus();
    });
    box.appendChild(button);
  });
}

async function drawMask() {
  const context = maskCanvas.getContext("2d");
  const r = state.result;
  const mask = r && r.masks[state.selected];
  if (!mask) {
    context.clearRect(0, 0, maskCanvas.width, maskCanvas.height);
    maskCanvas.dataset.pixels = "0";
    return;
  }
  const picture = new Image();
  picture.src = "data:image/png;base64," + mask.png_base64;
  await picture.decode();
  if (state.result !== r || r.masks[state.selected] !== mask) return;
  const w = maskCanvas.width, h = maskCanvas.height;
  const scratch = document.createElement("canvas");
  scratch.width = w;
  scratch.height = h;
  const scratchContext = scratch.getContext("2d");
  scratchContext.drawImage(picture, 0, 0);
  const pixels = scratchContext.getImageData(0, 0, w, h);
  const on = new Uint8Array(w * h);
  for (let i = 0; i < w * h; i++) on[i] = pixels.data[4 * i] > 127 ? 1 : 0;
  let count = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x, p = 4 * i;
      if (!on[i]) { pixels.data[p + 3] = 0; continue; }
      count++;
      const edge = x === 0 || y === 0 || x === w - 1 || y === h - 1 ||
                   !on[i - 1] || !on[i + 1] || !on[i - w] || !on[i + w];
      pixels.data[p] = edge ? 255 : 30;
      pixels.data[p + 1] = edge ? 255 : 144;
      pixels.data[p + 2] = 255;
      pixels.data[p + 3] = edge ? 230 : 120;
    }
  }
  context.putImageData(pixels, 0, 0);
  maskCanvas.dataset.pixels = String(count);
}

function drawMarks() {
  const context = marksCanvas.getContext("2d");
  context.clearRect(0, 0, marksCanvas.width, marksCanvas.height);
  const scale = marksCanvas.width / Math.max(1, marksCanvas.getBoundingClientRect().width);
  context.lineWidth = 2 * scale;
  const rect = (b, dashed) => {
    context.setLineDash(dashed ? [6 * scale, 4 * scale] : []);
    context.strokeStyle = "#ffd400";
    context.strokeRect(b[0], b[1], b[2] - b[0], b[3] - b[1]);
    context.setLineDash([]);
  };
  if (state.everything) {
    // The selected mask's box and the grid point that prompted it.
    const mask = state.everything.masks[state.everything.selected];
    if (!mask) return;
    const [x, y, w, h] = mask.record.bbox;
    rect([x, y, x + w + 1, y + h + 1], true);
    const [px, py] = mask.record.point_coords[0];
    context.beginPath();
    context.arc(px, py, 5 * scale, 0, 2 * Math.PI);
    context.fillStyle = "#ffd400";
    context.fill();
    context.strokeStyle = "#000";
    context.stroke();
    return;
  }
  if (state.box) rect(state.box, false);
  if (state.drag && state.drag.moved) rect(orderedBox(state.drag.start, state.drag.end), true);
  for (const [x, y, label] of state.points) {
    context.beginPath();
    context.arc(x, y, 6 * scale, 0, 2 * Math.PI);
    context.fillStyle = label === 1 ? "#22c55e" : "#ef4444";
    context.fill();
    context.strokeStyle = "#fff";
    context.stroke();
  }
}

// ---------------------------------------------------------------------------
// "Everything": every mask of the photo from POST /v1/images/{id}/everything.

// pycocotools' rleFrString: each count in 5-bit groups (character - 48), 0x20
// marks that more groups follow, 0x10 in the last group is the sign; counts after
// the second are stored as differences to the count two before. Plain number
// arithmetic (no 32-bit shifts), so long runs of large photos decode exactly.
function decodeCocoCounts(text) {
  const counts = [];
  let position = 0;
  while (position < text.length) {
    let value = 0, scale = 1, group = 0, more = true;
    while (more) {
      if (position >= text.length) throw new Error("truncated COCO RLE counts");
      group = text.charCodeAt(position++) - 48;
      value += (group & 0x1f) * scale;
      scale *= 32;
      more = (group & 0x20) !== 0;
    }
    if (group & 0x10) value -= scale;
    if (counts.length > 2) value += counts[counts.length - 2];
    counts.push(value);
  }
  return counts;
}

// Distinct, stable colours: hues a golden angle apart.
function maskColour(index) {
  const hue = (index * 137.508) % 360, s = 0.75, l = 0.55;
  const f = (n) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

// Calls visit(i) for every set pixel, i row-major; the runs are column-major
// (index x * height + y), starting with a background run.
function forEachMaskPixel(mask, visit) {
  const w = state.width, h = state.height;
  let start = 0;
  mask.ends.forEach((end, run) => {
    if (run % 2 === 1) {
      for (let k = start; k < end; k++) {
        const x = Math.floor(k / h);
        visit((k - x * h) * w + x);
      }
    }
    start = end;
  });
}

function maskContains(mask, x, y) {
  const k = x * state.height + y;
  let lo = 0, hi = mask.ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (mask.ends[mid] <= k) lo = mid + 1; else hi = mid;
  }
  return lo % 2 === 1;
}

function buildEverything(answer) {
  const total = state.width * state.height;
  const masks = answer.masks.map((record, index) => {
    const [h, w] = record.segmentation.size;
    if (h !== state.height || w !== state.width) throw new Error(`mask ${index + 1} is ${w}x${h}, not the photo's size`);
    const ends = [];
    let sum = 0;
    for (const count of decodeCocoCounts(record.segmentation.counts)) ends.push(sum += count);
    if (sum !== total) throw new Error(`mask ${index + 1}: its runs cover ${sum} pixels, not ${total}`);
    return { record, ends, colour: maskColour(index) };
  });
  // Each pixel shows the smallest mask on it: paint from the largest down.
  const owner = new Int32Array(total).fill(-1);
  const largestFirst = masks.map((mask, index) => index).sort((a, b) => masks[b].record.area - masks[a].record.area);
  for (const index of largestFirst) forEachMaskPixel(masks[index], (i) => { owner[i] = index; });
  return { masks, owner, selected: -1, generateMs: answer.generate_ms };
}

function putPixel(data, i, r, g, b, a) {
  data[4 * i] = r;
  data[4 * i + 1] = g;
  data[4 * i + 2] = b;
  data[4 * i + 3] = a;
}

function drawEverything() {
  const { masks, owner, selected } = state.everything;
  const w = maskCanvas.width, h = maskCanvas.height;
  const context = maskCanvas.getContext("2d");
  const pixels = context.createImageData(w, h);
  const data = pixels.data;
  let covered = 0;
  for (let i = 0; i < w * h; i++) {
    const index = owner[i];
    if (index < 0) continue;
    covered++;
    const [r, g, b] = masks[index].colour;
    putPixel(data, i, r, g, b, selected < 0 ? 130 : 70);
  }
  if (selected >= 0) {
    // The selected mask whole (also where smaller ones lie on it), its edge in white.
    const on = new Uint8Array(w * h);
    forEachMaskPixel(masks[selected], (i) => { on[i] = 1; });
    const [r, g, b] = masks[selected].colour;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = y * w + x;
        if (!on[i]) continue;
        const edge = x === 0 || y === 0 || x === w - 1 || y === h - 1 ||
                     !on[i - 1] || !on[i + 1] || !on[i - w] || !on[i + w];
        if (edge) putPixel(data, i, 255, 255, 255, 240); else putPixel(data, i, r, g, b, 190);
      }
    }
  }
  context.putImageData(pixels, 0, 0);
  maskCanvas.dataset.pixels = String(covered);
}

function showRecord() {
  const record = $("record");
  const e = state.everything;
  const mask = e && e.masks[e.selected];
  record.hidden = !mask;
  if (!mask) {
    record.textContent = "";
    return;
  }
  const r = mask.record;
  const shown = { ...r, segmentation: { size: r.segmentation.size,
                                        counts: `(${r.segmentation.counts.length} characters of COCO RLE)` } };
  // The official record's order (the server's JSON objects come sorted by name).
  const keys = ["segmentation", "area", "bbox", "predicted_iou", "point_coords", "stability_score", "crop_box"];
  record.textContent = `mask ${e.selected + 1} of ${e.masks.length}\n` +
    keys.filter((key) => key in shown).map((key) => `${key}: ${JSON.stringify(shown[key])}`).join("\n");
}

function updateEverythingStatus() {
  const e = state.everything;
  const parts = [`${state.file.name}: ${state.width}\u00d7${state.height}`,
                 `everything: ${e.masks.length} mask${e.masks.length === 1 ? "" : "s"} in ` +
                 `${(e.generateMs / 1000).toFixed(1)} s`];
  if (e.masks.length === 0) {
    parts.push("none passed the thresholds: lower them under Everything options");
  } else if (e.selected < 0) {
    parts.push("click a mask to select it");
  } else {
    const r = e.masks[e.selected].record;
    parts.push(`mask ${e.selected + 1}: IoU ${r.predicted_iou.toFixed(3)}, ${r.area} px (click again: the one beneath)`);
  }
  parts.push("Esc: back to tap");
  showStatus(parts.join(" \u00b7 "));
}

// A click cycles through the masks under it, smallest first.
function selectEverythingMaskAt([px, py]) {
  const e = state.everything;
  const x = Math.min(Math.floor(px), state.width - 1), y = Math.min(Math.floor(py), state.height - 1);
  const under = e.masks.map((mask, index) => index).filter((index) => maskContains(e.masks[index], x, y))
    .sort((a, b) => e.masks[a].record.area - e.masks[b].record.area);
  const at = under.indexOf(e.selected);
  e.selected = under.length === 0 ? -1 : under[(at + 1) % under.length];
  maskCanvas.dataset.selected = String(e.selected);
  maskCanvas.dataset.under = String(under.length);
  drawEverything();
  drawMarks();
  showRecord();
  updateEverythingStatus();
}

function everythingParameters() {
  const parameters = {};
  for (const input of document.querySelectorAll("#everything-options input")) {
    if (input.value.trim() !== "") parameters[input.id] = Number(input.value);
  }
  return parameters;
}

async function segmentEverything() {
  if (!state.id || state.finding) return;
  const request = ++state.request;
  state.drag = null;
  state.finding = true;
  updateButtons();
  setPhase("finding");
  showStatus(`Finding every mask of ${state.file.name}\u2026 (a grid of clicks over the photo)`);
  const body = JSON.stringify(everythingParameters());
  const send = () => callApi("POST", `/v1/images/${state.id}/everything`, body, "application/json");
  try {
    let answer;
    try {
      answer = await send();
    } catch (error) {
      if (error.status !== 404) throw error;
      showStatus("The server dropped this image from its cache; encoding it again\u2026");
      await uploadCurrentFile();
      answer = await send();
    }
    if (request !== state.request) return;
    state.everything = buildEverything(answer);
    state.finding = false;
    maskCanvas.dataset.masks = String(state.everything.masks.length);
    maskCanvas.dataset.selected = "-1";
    renderCandidates();
    drawEverything();
    drawMarks();
    showRecord();
    updateEverythingStatus();
    updateButtons();
    setPhase("everything");
  } catch (error) {
    if (request !== state.request) return;
    state.finding = false;
    updateButtons();
    showStatus(`Everything failed: ${error.message}`, true);
    setPhase("error");
  }
}

// Drops what the page exposes of the masks (the record, the overlay's data-* counts).
function forgetEverything() {
  for (const key of ["masks", "selected", "under"]) delete maskCanvas.dataset[key];
  showRecord();
}

// Back to tap-to-segment with the prompts from before (their mask asked again,
// in case Everything overtook a pending answer).
function leaveEverything() {
  if (!state.everything) return;
  state.everything = null;
  forgetEverything();
  segment();
}

function toImagePoint(event) {
  const bounds = marksCanvas.getBoundingClientRect();
  const clamp = (v, hi) => Math.min(Math.max(v, 0), hi);
  return [clamp((event.clientX - bounds.left) * state.width / bounds.width, state.width),
          clamp((event.clientY - bounds.top) * state.height / bounds.height, state.height)];
}

function orderedBox(a, b) {
  return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
}

function remember() {
  state.history.push({ points: state.points.map((p) => p.slice()), box: state.box && state.box.slice() });
}

function round(v) { return Math.round(v * 10) / 10; }

marksCanvas.addEventListener("contextmenu", (event) => event.preventDefault());
marksCanvas.addEventListener("pointerdown", (event) => {
  if (!state.id || state.finding || (event.button !== 0 && event.button !== 2)) return;
  if (state.everything) {
    if (event.button === 0) selectEverythingMaskAt(toImagePoint(event));
    return;
  }
  marksCanvas.setPointerCapture(event.pointerId);
  const start = toImagePoint(event);
  state.drag = { start, end: start, x: event.clientX, y: event.clientY, moved: false,
                 background: event.button === 2 || event.shiftKey };
});
marksCanvas.addEventListener("pointermove", (event) => {
  const drag = state.drag;
  if (!drag) return;
  drag.end = toImagePoint(event);
  drag.moved = drag.moved || Math.hypot(event.clientX - drag.x, event.clientY - drag.y) > DRAG_PIXELS;
  if (drag.moved) drawMarks();
});
marksCanvas.addEventListener("pointerup", (event) => {
  const drag = state.drag;
  if (!drag) return;
  state.drag = null;
  drag.end = toImagePoint(event);
  remember();
  if (drag.moved) {
    state.box = orderedBox(drag.start, drag.end).map(round);
  } else {
    state.points.push([round(drag.start[0]), round(drag.start[1]), drag.background ? 0 : 1]);
  }
  segment();
});
marksCanvas.addEventListener("pointercancel", () => { state.drag = null; drawMarks(); });

function undo() {
  const previous = state.history.pop();
  if (!previous) return;
  state.points = previous.points;
  state.box = previous.box;
  segment();
}

function clearPrompts() {
  if (state.points.length === 0 && state.box === null) return;
  remember();
  state.points = [];
  state.box = null;
  segment();
}

function downloadMask() {
  const mask = state.result && state.result.masks[state.selected];
  if (!mask) return;
  const bytes = Uint8Array.from(atob(mask.png_base64), (c) => c.charCodeAt(0));
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([bytes], { type: "image/png" }));
  link.download = state.file.name.replace(/\.[^.]*$/, "") + "_mask.png";
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

$("file").addEventListener("change", (event) => { openFile(event.target.files[0]); event.target.value = ""; });
$("undo").addEventListener("click", undo);
$("clear").addEventListener("click", clearPrompts);
$("download").addEventListener("click", downloadMask);
$("multimask").addEventListener("change", () => segment());
$("everything").addEventListener("click", segmentEverything);
$("tap-mode").addEventListener("click", leaveEverything);
window.addEventListener("keydown", (event) => {
  if (state.everything) {
    if (event.key === "Escape") leaveEverything();
    return;
  }
  if ((event.ctrlKey || event.metaKey) && event.key === "z") { event.preventDefault(); undo(); }
  if (event.key === "Escape") clearPrompts();
});
window.addEventListener("dragover", (event) => { event.preventDefault(); document.body.classList.add("dragging"); });
window.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
window.addEventListener("drop", (event) => {
  event.preventDefault();
  document.body.classList.remove("dragging");
  openFile(event.dataTransfer.files[0]);
});
window.addEventListener("resize", drawMarks);

callApi("GET", "/healthz").then((health) => {
  $("model").textContent = health.model + (health.synthetic_weights ? ": masks are meaningless" : "");
  $("model").classList.toggle("synthetic", health.synthetic_weights);
}).catch(() => showStatus("The sam2rt server is not answering.", true));
