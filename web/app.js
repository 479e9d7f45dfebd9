"use strict";
const $ = (id) => document.getElementById(id);
const photoCanvas = $("photo"), maskCanvas = $("mask"), marksCanvas = $("marks");
const DRAG_PIXELS = 6;
const state = {
  file: null, id: null, width: 0, height: 0, encodeMs: 0,
  points: [], box: null, history: [],
  result: null, selected: 0, decodeMs: 0, request: 0, drag: null,
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
  $("undo").disabled = state.history.length === 0;
  $("clear").disabled = !hasPrompt;
  $("download").disabled = !(state.result && state.result.masks.length);
}

function updateStatus() {
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
  Object.assign(state, { file, id: null, points: [], box: null, history: [], result: null, selected: 0 });
  state.request++;
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
    setPhase("ready");
  } catch (error) {
    showStatus(`Could not open ${file.name}: ${error.message}`, true);
    setPhase("error");
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function segment() {
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
  if (!r || r.masks.length < 2) return;
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
  if (!state.id || (event.button !== 0 && event.button !== 2)) return;
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
window.addEventListener("keydown", (event) => {
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
