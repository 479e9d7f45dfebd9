"use strict";
const $ = (id) => document.getElementById(id);
const photo = $("photo"), maskCanvas = $("mask"), previewCanvas = $("preview"), marks = $("marks");
const photoViewport = $("viewport");
const SVG = "http://www.w3.org/2000/svg";
const DRAG_PIXELS = 6;
const HOVER_DELAY_MS = 120;
const ZOOM_MIN = 1, ZOOM_MAX = 16;
// Masks are asked at the size they are shown (never above the photo's), at most this
// many pixels on their longer side; downloads ask for the full size.
const MAX_MASK_SIDE = 4096;
// What the server decodes itself; anything else the browser decodes and uploads as PNG.
const SERVER_TYPES = ["image/png", "image/jpeg"];
const state = {
  file: null, upload: null, photoUrl: null, id: null, width: 0, height: 0, encodeMs: 0,
  opening: 0, generation: 0,
  objects: [], current: null, objectsMade: 0,
  label: 1, zoom: 1, maskSize: [0, 0], drag: null, pan: null, spaceHeld: false, panMode: false,
  // Fingers on the photo (pointerId -> [x, y]); two make a pinch: { distance, zoom, middle }.
  touches: new Map(), pinch: null,
  // The last preview's answer, { key, answer }: a click where it was shown needs no request.
  hover: { timer: 0, asked: 0, last: null }, clickStarted: 0,
  // "Everything": null, or { masks: [{ record, ends, colour }], owner, selected, generateMs }.
  everything: null, finding: false,
};

function setPhase(phase) { document.body.dataset.state = phase; }

function showStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

// The Error of a failed API call: the server's one-line message, and its status.
function apiError(status, data) {
  const error = new Error((data && data.error) || `HTTP ${status}`);
  error.status = status;
  return error;
}

async function callApi(method, path, body, contentType) {
  const headers = contentType ? { "Content-Type": contentType } : {};
  const response = await fetch(path, { method, body, headers });
  let data = null;
  try { data = await response.json(); } catch (ignored) { data = null; }
  if (!response.ok) throw apiError(response.status, data);
  return data;
}

// ---------------------------------------------------------------------------
// Objects: each has its own prompts, history and mask; one is current.

function newObject() {
  const number = ++state.objectsMade;
  return { number, name: `object ${number}`, colour: objectColour(number - 1), points: [], box: null, history: [],
           result: null, selected: 0, multimask: false, layer: null, pixels: 0, asked: 0 };
}

function current() { return state.current; }
function hasPrompt(object) { return object.points.length > 0 || object.box !== null; }
function hasMask(object) { return object.result !== null && object.result.masks.length > 0; }
function chosenMask(object) { return hasMask(object) ? object.result.masks[object.selected] : null; }

function resetObjects() {
  state.objectsMade = 0;
  state.objects = [newObject()];
  state.current = state.objects[0];
}

function startNewObject() {
  if (!state.id || state.everything || !hasPrompt(current())) return;
  const object = newObject();
  state.objects.push(object);
  selectObject(object);
}

function selectObject(object) {
  if (state.current === object) return;
  cancelHover();
  state.current = object;
  renderAll();
}

function deleteObject(object) {
  const index = state.objects.indexOf(object);
  if (index < 0) return;
  state.objects.splice(index, 1);
  object.asked++;
  if (state.objects.length === 0) state.objects.push(newObject());
  if (state.current === object) state.current = state.objects[Math.min(index, state.objects.length - 1)];
  renderAll();
}

function renderObjects() {
  const list = $("objects");
  list.replaceChildren();
  state.objects.forEach((object) => {
    const item = document.createElement("li");
    item.classList.toggle("current", object === state.current);
    item.dataset.number = String(object.number);
    const swatch = document.createElement("button");
    swatch.className = "swatch";
    swatch.title = "Select this object";
    swatch.style.background = `rgb(${object.colour.join(",")})`;
    swatch.addEventListener("click", () => selectObject(object));
    const name = document.createElement("input");
    name.className = "name";
    name.value = object.name;
    name.setAttribute("aria-label", "object name");
    name.addEventListener("focus", () => selectObject(object));
    name.addEventListener("change", () => { object.name = name.value.trim() || `object ${object.number}`; });
    const area = document.createElement("span");
    area.className = "area";
    // A share of the photo: the masks shown are at the size shown, not the photo's.
    const mask = chosenMask(object);
    const [w, h] = mask ? object.result.mask_size : [1, 1];
    area.textContent = mask ? `${(100 * mask.area / (w * h)).toFixed(1)}%` : "no mask";
    area.title = "of the photo";
    const remove = document.createElement("button");
    remove.className = "delete";
    remove.textContent = "\u00d7";
    remove.title = "Delete this object";
    remove.setAttribute("aria-label", `delete ${object.name}`);
    remove.addEventListener("click", () => deleteObject(object));
    item.append(swatch, name, area, remove);
    list.appendChild(item);
  });
  list.dataset.count = String(state.objects.length);
}

function renderAll() {
  renderObjects();
  renderCandidates();
  composeMasks();
  drawMarks();
  updateButtons();
  if (state.id) updateStatus();
}

// ---------------------------------------------------------------------------
// Buttons and status.

function updateButtons() {
  const tapping = state.id !== null && state.everything === null && !state.finding;
  const object = current();
  const anyMask = state.objects.some(hasMask);
  $("undo").disabled = !tapping || object.history.length === 0;
  $("clear").disabled = !tapping || !hasPrompt(object);
  $("new-object").disabled = !tapping || !hasPrompt(object);
  for (const id of ["download-coco", "download-masks", "download-cutouts"]) $(id).disabled = !tapping || !anyMask;
  $("everything").disabled = !state.id || state.finding;
  for (const id of ["zoom-in", "zoom-out", "zoom-fit", "pan-mode"]) $(id).disabled = !state.id;
  $("busy").hidden = !state.finding;
  $("tap-mode").hidden = state.everything === null;
}

function updateStatus() {
  if (state.everything) {
    updateEverythingStatus();
    return;
  }
  const parts = [`${state.file.name}: ${state.width}\u00d7${state.height}`, `encode ${state.encodeMs.toFixed(0)} ms`];
  const object = current();
  const r = object.result;
  if (r) {
    const m = r.masks[object.selected];
    parts.push(`decode ${r.timing_ms.decode.toFixed(1)} ms`);
    parts.push(`${object.name}: mask ${object.selected + 1}/${r.masks.length}, IoU ${m.iou.toFixed(3)}`);
    if (r.object_score_logit <= 0) parts.push("the model sees no object here");
  } else {
    parts.push(state.objects.length > 1 ? `click the next object (${object.name})` : "click the object");
  }
  showStatus(parts.join(" \u00b7 "));
}

function setLabel(label) {
  state.label = label;
  const button = $("label-mode");
  button.dataset.label = String(label);
  button.setAttribute("aria-pressed", String(label === 0));
  button.textContent = label === 1 ? "Object point" : "Background point";
}

// ---------------------------------------------------------------------------
// Opening a photo. The old one stays usable until the new one is encoded and shown.

async function uploadableImage(file) {
  if (SERVER_TYPES.includes(file.type)) return file;
  try {
    const bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
    const canvas = document.createElement("canvas");
    canvas.width = bitmap.width;
    canvas.height = bitmap.height;
    canvas.getContext("2d").drawImage(bitmap, 0, 0);
    bitmap.close();
    return await new Promise((resolve, reject) => canvas.toBlob(
      (blob) => (blob ? resolve(blob) : reject(new Error("the browser could not re-encode it as PNG"))), "image/png"));
  } catch (ignored) {
    // Not an image this browser reads: the server says what it makes of the bytes.
    return file;
  }
}

async function openFile(file) {
  if (!file) return;
  const attempt = ++state.opening;
  cancelHover();
  setPhase("encoding");
  showStatus(`Encoding ${file.name}\u2026`);
  let info = null, url = null;
  try {
    const upload = await uploadableImage(file);
    info = await callApi("POST", "/v1/images", upload, upload.type || "application/octet-stream");
    url = URL.createObjectURL(upload);
    const picture = new Image();
    picture.src = url;
    await picture.decode();
    if (attempt !== state.opening) throw new Error("another photo was opened meanwhile");
    if (state.id) callApi("DELETE", `/v1/images/${state.id}`).catch(() => {});
    if (state.photoUrl) URL.revokeObjectURL(state.photoUrl);
    Object.assign(state, { file, upload, photoUrl: url, id: info.id, width: info.width, height: info.height,
                           encodeMs: info.encode_ms, everything: null, finding: false, zoom: 1, drag: null });
    state.generation++;
    info = null;
    url = null;
    photo.src = state.photoUrl;
    marks.setAttribute("viewBox", `0 0 ${state.width} ${state.height}`);
    resetObjects();
    forgetEverything();
    $("dropzone").hidden = true;
    $("viewport").hidden = false;
    $("objects-panel").hidden = false;
    layoutStage();
    renderAll();
    setPhase("ready");
  } catch (error) {
    if (info) callApi("DELETE", `/v1/images/${info.id}`).catch(() => {});
    if (url) URL.revokeObjectURL(url);
    if (attempt !== state.opening) return;
    const still = state.id ? ` \u00b7 still working on ${state.file.name}` : "";
    showStatus(`Could not open ${file.name}: ${error.message}${still}`, true);
    setPhase("error");
  }
}

async function uploadCurrentFile() {
  const info = await callApi("POST", "/v1/images", state.upload, state.upload.type || "application/octet-stream");
  state.id = info.id;
  return info;
}

// POST to one of the image's endpoints; an image the server dropped from its cache
// is uploaded again once.
async function askImage(endpoint, body) {
  const send = () => callApi("POST", `/v1/images/${state.id}/${endpoint}`, body, "application/json");
  try {
    return await send();
  } catch (error) {
    if (error.status !== 404) throw error;
    showStatus("The server dropped this image from its cache; encoding it again\u2026");
    await uploadCurrentFile();
    return send();
  }
}

// ---------------------------------------------------------------------------
// Zoom and pan: the stage is sized in CSS pixels inside a scrolling viewport.

function fitScale() {
  const width = Math.max(100, photoViewport.clientWidth);
  const height = Math.max(150, window.innerHeight * 0.72);
  return Math.min(width / state.width, height / state.height, Math.max(1, 640 / state.width));
}

function layoutStage() {
  if (!state.id) return;
  const scale = fitScale() * state.zoom;
  const cssWidth = state.width * scale, cssHeight = state.height * scale;
  const stage = $("stage");
  stage.style.width = `${cssWidth}px`;
  stage.style.height = `${cssHeight}px`;
  $("zoom-level").textContent = `${Math.round(state.zoom * 100)}%`;
  const ratio = window.devicePixelRatio || 1;
  let w = Math.min(state.width, Math.ceil(cssWidth * ratio)), h = Math.min(state.height, Math.ceil(cssHeight * ratio));
  const shrink = Math.min(1, MAX_MASK_SIDE / Math.max(w, h));
  w = Math.max(1, Math.round(w * shrink));
  h = Math.max(1, Math.round(h * shrink));
  const changed = w !== state.maskSize[0] || h !== state.maskSize[1];
  state.maskSize = [w, h];
  maskCanvas.dataset.size = `${w}x${h}`;
  drawMarks();
  return changed;
}

let refreshTimer = 0;
function relayout() {
  if (!layoutStage()) return;
  composeMasks();
  // Sharper masks for the new size, once the zooming stops.
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => {
    for (const object of state.objects) if (hasPrompt(object)) segment(object);
  }, 250);
}

function zoomTo(zoom, clientX, clientY) {
  if (!state.id) return;
  const next = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, zoom));
  const bounds = photoViewport.getBoundingClientRect();
  const x = (clientX === undefined ? bounds.left + bounds.width / 2 : clientX) - bounds.left;
  const y = (clientY === undefined ? bounds.top + bounds.height / 2 : clientY) - bounds.top;
  // Keeps the photo's point under (x, y) where it is.
  const factor = next / state.zoom;
  const left = (photoViewport.scrollLeft + x) * factor - x, top = (photoViewport.scrollTop + y) * factor - y;
  state.zoom = next;
  relayout();
  photoViewport.scrollLeft = left;
  photoViewport.scrollTop = top;
}

// ---------------------------------------------------------------------------
// Tap to segment.

function multimaskFor(points, box) {
  const mode = $("multimask").value;
  return mode === "on" || (mode === "auto" && points.length === 1 && box === null);
}

function segmentBody(object, extra) {
  return JSON.stringify({ points: object.points, box: object.box, multimask: object.multimask, ...extra });
}

async function segment(object = current()) {
  if (state.everything) return;
  cancelHover();
  drawMarks();
  if (!state.id) return;
  const ask = ++object.asked, generation = state.generation;
  const fresh = () => object.asked === ask && state.generation === generation && state.everything === null;
  setPhase("segmenting");
  updateButtons();
  if (!hasPrompt(object)) {
    Object.assign(object, { result: null, layer: null, pixels: 0 });
    renderAll();
    setPhase("ready");
    return;
  }
  object.multimask = multimaskFor(object.points, object.box);
  try {
    const body = segmentBody(object, { format: "rle", mask_size: state.maskSize });
    const last = state.hover.last;
    const result = last && last.key === `${state.id} ${body}` ? last.answer : await askImage("segment", body);
    if (!fresh()) return;
    const selected = result.best_index;
    const layer = maskLayer(result.masks[selected], object.colour);
    Object.assign(object, { result, selected, layer: layer.canvas, pixels: layer.pixels });
    renderAll();
    if (object === current() && state.clickStarted) {
      const started = state.clickStarted;
      state.clickStarted = 0;
      // The time until the browser has painted the mask.
      requestAnimationFrame(() => setTimeout(() => {
        document.body.dataset.clickMs = (performance.now() - started).toFixed(0);
      }, 0));
    }
    setPhase("mask");
  } catch (error) {
    if (!fresh()) return;
    showStatus(`Segmentation failed: ${error.message}`, true);
    setPhase("error");
  }
}

function renderCandidates() {
  const box = $("candidates");
  box.replaceChildren();
  const object = current();
  const r = object && object.result;
  if (!r || r.masks.length < 2 || state.everything) return;
  r.masks.forEach((mask, index) => {
    const button = document.createElement("button");
    button.textContent = `#${index + 1} IoU ${mask.iou.toFixed(2)}`;
    button.title = `${mask.area} px of ${r.mask_size.join("\u00d7")}`;
    button.classList.toggle("selected", index === object.selected);
    button.addEventListener("click", () => {
      const layer = maskLayer(mask, object.colour);
      Object.assign(object, { selected: index, layer: layer.canvas, pixels: layer.pixels });
      renderAll();
    });
    box.appendChild(button);
  });
}

// The API's uncompressed RLE (column-major runs, background first) as 0/1 per
// pixel, row-major. Masks come as RLE rather than PNG: no image to decode, and
// the server does not spend time compressing.
function rleBits({ size: [h, w], counts }) {
  const on = new Uint8Array(w * h);
  let start = 0;
  counts.forEach((count, run) => {
    if (run % 2 === 1) {
      let x = Math.floor(start / h), y = start - x * h;
      for (let k = 0; k < count; k++) {
        on[y * w + x] = 1;
        if (++y === h) { y = 0; x++; }
      }
    }
    start += count;
  });
  if (start !== w * h) throw new Error(`a mask's runs cover ${start} pixels, not ${w * h}`);
  return on;
}

// A mask of the API as a coloured, outlined layer of its own size.
function maskLayer(mask, colour) {
  const [h, w] = mask.rle.size;
  const on = rleBits(mask.rle);
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const context = canvas.getContext("2d");
  const pixels = context.createImageData(w, h);
  const count = paintOutlinedMask(pixels, on, [...colour, 130]);
  context.putImageData(pixels, 0, 0);
  return { canvas, pixels: count };
}

// Paints the mask bits `on` (one per pixel of `pixels`, an ImageData) in the
// colour `fill` [r, g, b, a], its outline white; returns the pixels painted.
function paintOutlinedMask(pixels, on, fill) {
  const { width: w, height: h } = pixels;
  // One 32-bit write per pixel: RGBA bytes in memory order, whatever the CPU's.
  const words = new Uint32Array(pixels.data.buffer);
  const rgba = (red, green, blue, alpha) => new Uint32Array(Uint8ClampedArray.of(red, green, blue, alpha).buffer)[0];
  const inside = rgba(...fill), edge = rgba(255, 255, 255, 230);
  let count = 0;
  for (let y = 0; y < h; y++) {
    const row = y * w, border = y === 0 || y === h - 1;
    for (let x = 0; x < w; x++) {
      const i = row + x;
      if (!on[i]) continue;
      count++;
      const outline = border || x === 0 || x === w - 1 || !on[i - 1] || !on[i + 1] || !on[i - w] || !on[i + w];
      words[i] = outline ? edge : inside;
    }
  }
  return count;
}

// Every object's mask on the overlay, the current one on top and stronger.
function composeMasks() {
  if (state.everything) return;
  const [w, h] = state.maskSize;
  if (maskCanvas.width !== w || maskCanvas.height !== h) {
    maskCanvas.width = w;
    maskCanvas.height = h;
  }
  const context = maskCanvas.getContext("2d");
  context.clearRect(0, 0, w, h);
  const others = state.objects.filter((object) => object !== state.current && object.layer);
  context.globalAlpha = 0.55;
  for (const object of others) context.drawImage(object.layer, 0, 0, w, h);
  context.globalAlpha = 1;
  const object = current();
  if (object && object.layer) context.drawImage(object.layer, 0, 0, w, h);
  maskCanvas.dataset.pixels = String(object && object.layer ? object.pixels : 0);
  maskCanvas.dataset.objects = String(state.objects.filter((o) => o.layer).length);
}

function svgElement(name, attributes) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

// Points and boxes as SVG in the photo's pixels: sharp at every zoom, sized in screen pixels.
function drawMarks() {
  marks.replaceChildren();
  if (!state.id) return;
  const scale = state.width / Math.max(1, marks.getBoundingClientRect().width);
  const rect = (b, dashed) => marks.appendChild(svgElement("rect", {
    x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1], fill: "none", stroke: "#ffd400",
    "stroke-width": 2 * scale, "stroke-dasharray": dashed ? `${6 * scale} ${4 * scale}` : "none" }));
  const dot = (x, y, radius, fill, stroke, label) => {
    const circle = marks.appendChild(svgElement("circle", { cx: x, cy: y, r: radius * scale, fill, stroke,
                                                            "stroke-width": 2 * scale }));
    if (label !== undefined) circle.dataset.label = String(label);
  };
  if (state.everything) {
    // The selected mask's box and the grid point that prompted it.
    const mask = state.everything.masks[state.everything.selected];
    if (!mask) return;
    const [x, y, w, h] = mask.record.bbox;
    rect([x, y, x + w + 1, y + h + 1], true);
    const [px, py] = mask.record.point_coords[0];
    dot(px, py, 5, "#ffd400", "#000");
    return;
  }
  const object = current();
  if (object.box) rect(object.box, false);
  if (state.drag && state.drag.moved) rect(orderedBox(state.drag.start, state.drag.end), true);
  for (const [x, y, label] of object.points) dot(x, y, 6, label === 1 ? "#22c55e" : "#ef4444", "#fff", label);
  marks.dataset.labels = object.points.map((p) => p[2]).join(",");
}

// ---------------------------------------------------------------------------
// Hover preview: the mask a click would give, while the mouse rests.

function cancelHover() {
  clearTimeout(state.hover.timer);
  state.hover.asked++;
  if (document.body.dataset.hover) {
    previewCanvas.getContext("2d").clearRect(0, 0, previewCanvas.width, previewCanvas.height);
    delete document.body.dataset.hover;
  }
}

// While the mouse moves the last preview stays; a new one is asked when it rests.
function scheduleHover(event) {
  clearTimeout(state.hover.timer);
  state.hover.asked++;
  if (!$("hover").checked || event.pointerType !== "mouse" || event.buttons !== 0 || !state.id ||
      state.everything || state.finding || state.pan || state.spaceHeld || state.panMode) return;
  const [x, y] = toImagePoint(event);
  const label = labelFor(event);
  state.hover.timer = setTimeout(() => preview([round(x), round(y), label]), HOVER_DELAY_MS);
}

async function preview(point) {
  const ask = ++state.hover.asked, object = current();
  const points = [...object.points, point];
  // As segmentBody would write it for a click here, so that the click can reuse the answer.
  const body = JSON.stringify({ points, box: object.box, multimask: multimaskFor(points, object.box), format: "rle",
                                mask_size: state.maskSize });
  try {
    const answer = await callApi("POST", `/v1/images/${state.id}/segment`, body, "application/json");
    state.hover.last = { key: `${state.id} ${body}`, answer };
    if (ask !== state.hover.asked) return;
    const layer = maskLayer(answer.masks[answer.best_index], [255, 212, 0]);
    const [w, h] = state.maskSize;
    previewCanvas.width = w;
    previewCanvas.height = h;
    const context = previewCanvas.getContext("2d");
    context.globalAlpha = 0.6;
    context.drawImage(layer.canvas, 0, 0, w, h);
    previewCanvas.dataset.pixels = String(layer.pixels);
    document.body.dataset.hover = "shown";
  } catch (ignored) {
    // Best effort: a click on the same spot reports what went wrong.
  }
}

// ---------------------------------------------------------------------------
// Downloads: the full-size masks, asked again for each object.

function baseName() { return state.file.name.replace(/\.[^.]*$/, "") || "photo"; }

function fileSafe(text) { return text.replace(/[^\w.-]+/g, "_").slice(0, 60) || "object"; }

async function fullSizeMask(object, format) {
  const answer = await askImage("segment", segmentBody(object, { format }));
  return answer.masks[object.selected];
}

function save(blob, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

async function exporting(what, work) {
  const objects = state.objects.filter(hasMask);
  if (objects.length === 0) return;
  showStatus(`Preparing ${what} of ${objects.length} object${objects.length === 1 ? "" : "s"}\u2026`);
  try {
    await work(objects);
    updateStatus();
  } catch (error) {
    showStatus(`Download failed: ${error.message}`, true);
  }
}

function downloadCoco() {
  return exporting("COCO JSON", async (objects) => {
    const names = [...new Set(objects.map((object) => object.name))];
    const categories = names.map((name, index) => ({ id: index + 1, name }));
    const annotations = [];
    for (const object of objects) {
      const mask = await fullSizeMask(object, "coco_rle");
      const [x0, y0, x1, y1] = mask.bbox || [0, 0, 0, 0];
      annotations.push({ id: annotations.length + 1, image_id: 1, category_id: names.indexOf(object.name) + 1,
                         segmentation: mask.rle, area: mask.area, bbox: [x0, y0, x1 - x0, y1 - y0], iscrowd: 0,
                         score: mask.iou, name: object.name });
    }
    const coco = { info: { description: "sam2rt serve", date_created: new Date().toISOString() },
                   images: [{ id: 1, file_name: state.file.name, width: state.width, height: state.height }],
                   annotations, categories };
    save(new Blob([JSON.stringify(coco)], { type: "application/json" }), `${baseName()}.coco.json`);
  });
}

function base64Bytes(text) { return Uint8Array.from(atob(text), (c) => c.charCodeAt(0)); }

function downloadMasks() {
  return exporting("PNG masks", async (objects) => {
    const files = [];
    for (const [index, object] of objects.entries()) {
      const mask = await fullSizeMask(object, "png");
      files.push({ name: `${baseName()}_${index + 1}_${fileSafe(object.name)}.png`, bytes: base64Bytes(mask.png_base64) });
    }
    save(zipStored(files), `${baseName()}_masks.zip`);
  });
}

// The object's pixels of the photo, transparent elsewhere, cropped to its box.
async function cutout(mask) {
  const [x0, y0, x1, y1] = mask.bbox || [0, 0, 1, 1];
  const w = x1 - x0, h = y1 - y0;
  const picture = new Image();
  picture.src = "data:image/png;base64," + mask.png_base64;
  await picture.decode();
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const context = canvas.getContext("2d");
  context.drawImage(picture, -x0, -y0);
  const alpha = context.getImageData(0, 0, w, h).data;
  const sx = photo.naturalWidth / state.width, sy = photo.naturalHeight / state.height;
  context.clearRect(0, 0, w, h);
  context.drawImage(photo, x0 * sx, y0 * sy, w * sx, h * sy, 0, 0, w, h);
  const pixels = context.getImageData(0, 0, w, h);
  for (let i = 3; i < pixels.data.length; i += 4) pixels.data[i] = alpha[i - 3] > 127 ? pixels.data[i] : 0;
  context.putImageData(pixels, 0, 0);
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
  return new Uint8Array(await blob.arrayBuffer());
}

function downloadCutouts() {
  return exporting("cut-outs", async (objects) => {
    const files = [];
    for (const [index, object] of objects.entries()) {
      const mask = await fullSizeMask(object, "png");
      if (!mask.bbox) continue;
      files.push({ name: `${baseName()}_${index + 1}_${fileSafe(object.name)}.png`, bytes: await cutout(mask) });
    }
    save(zipStored(files), `${baseName()}_cutouts.zip`);
  });
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// A ZIP archive of stored (uncompressed: PNGs are compressed already) files.
function zipStored(files) {
  const encoder = new TextEncoder();
  const parts = [], directory = [];
  let offset = 0;
  const DOS_DATE_1980_01_01 = 0x21, UTF8_NAMES = 0x0800;
  for (const file of files) {
    const name = encoder.encode(file.name), crc = crc32(file.bytes), size = file.bytes.length;
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);
    local.setUint16(6, UTF8_NAMES, true);
    local.setUint16(12, DOS_DATE_1980_01_01, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, size, true);
    local.setUint32(22, size, true);
    local.setUint16(26, name.length, true);
    parts.push(local, name, file.bytes);
    const entry = new DataView(new ArrayBuffer(46));
    entry.setUint32(0, 0x02014b50, true);
    entry.setUint16(4, 20, true);
    entry.setUint16(6, 20, true);
    entry.setUint16(8, UTF8_NAMES, true);
    entry.setUint16(14, DOS_DATE_1980_01_01, true);
    entry.setUint32(16, crc, true);
    entry.setUint32(20, size, true);
    entry.setUint32(24, size, true);
    entry.setUint16(28, name.length, true);
    entry.setUint32(42, offset, true);
    directory.push(entry, name);
    offset += 30 + name.length + size;
  }
  const directorySize = directory.reduce((sum, part) => sum + part.byteLength, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, files.length, true);
  end.setUint16(10, files.length, true);
  end.setUint32(12, directorySize, true);
  end.setUint32(16, offset, true);
  return new Blob([...parts, ...directory, end], { type: "application/zip" });
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

// Distinct, stable colours: hues a golden angle apart from `start`.
function hueColour(index, start) {
  const hue = (start + index * 137.508) % 360, s = 0.75, l = 0.55;
  const f = (n) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}
function maskColour(index) { return hueColour(index, 0); }
// The first object is blue.
function objectColour(index) { return hueColour(index, 212); }

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

// At the photo's size: the generator's masks are full-size.
function drawEverything() {
  const { masks, owner, selected } = state.everything;
  const w = state.width, h = state.height;
  maskCanvas.width = w;
  maskCanvas.height = h;
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
  const generation = ++state.generation;
  cancelHover();
  state.drag = null;
  state.finding = true;
  updateButtons();
  setPhase("finding");
  showStatus(`Finding every mask of ${state.file.name}\u2026 (a grid of clicks over the photo)`);
  try {
    const answer = await askImage("everything", JSON.stringify(everythingParameters()));
    if (generation !== state.generation) return;
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
    if (generation !== state.generation) return;
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

// Back to tap-to-segment with every object as before (the current one's mask asked
// again, in case Everything overtook a pending answer).
function leaveEverything() {
  if (!state.everything) return;
  state.everything = null;
  state.generation++;
  forgetEverything();
  renderAll();
  segment();
}

// ---------------------------------------------------------------------------
// Pointer, keyboard and file input.

function toImagePoint(event) {
  const bounds = marks.getBoundingClientRect();
  const clamp = (v, hi) => Math.min(Math.max(v, 0), hi);
  return [clamp((event.clientX - bounds.left) * state.width / bounds.width, state.width),
          clamp((event.clientY - bounds.top) * state.height / bounds.height, state.height)];
}

function labelFor(event) {
  const inverted = event.button === 2 || event.shiftKey;
  return inverted ? 1 - state.label : state.label;
}

function orderedBox(a, b) {
  return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
}

function remember(object) {
  object.history.push({ points: object.points.map((p) => p.slice()), box: object.box && object.box.slice() });
}

function round(v) { return Math.round(v * 10) / 10; }

marks.addEventListener("contextmenu", (event) => event.preventDefault());
function pinchGeometry() {
  const [[ax, ay], [bx, by]] = [...state.touches.values()];
  return { distance: Math.max(1, Math.hypot(bx - ax, by - ay)), middle: [(ax + bx) / 2, (ay + by) / 2] };
}

// Two fingers zoom around their middle and move the photo with it; they add no prompt.
function startPinch() {
  state.drag = null;
  state.pan = null;
  state.pinch = { ...pinchGeometry(), zoom: state.zoom };
  drawMarks();
}

function movePinch() {
  const { distance, middle } = pinchGeometry();
  const [x, y] = state.pinch.middle;
  photoViewport.scrollLeft -= middle[0] - x;
  photoViewport.scrollTop -= middle[1] - y;
  state.pinch.middle = middle;
  zoomTo(state.pinch.zoom * distance / state.pinch.distance, middle[0], middle[1]);
}

marks.addEventListener("pointerdown", (event) => {
  if (!state.id || state.finding) return;
  cancelHover();
  if (event.pointerType === "touch") {
    state.touches.set(event.pointerId, [event.clientX, event.clientY]);
    marks.setPointerCapture(event.pointerId);
    if (state.touches.size === 2 && !state.everything) {
      startPinch();
      return;
    }
    if (state.pinch) return;
  }
  if (event.button === 1 || state.panMode || state.spaceHeld) {
    event.preventDefault();
    marks.setPointerCapture(event.pointerId);
    state.pan = { x: event.clientX, y: event.clientY, left: photoViewport.scrollLeft, top: photoViewport.scrollTop };
    return;
  }
  if (event.button !== 0 && event.button !== 2) return;
  if (state.everything) {
    if (event.button === 0) selectEverythingMaskAt(toImagePoint(event));
    return;
  }
  marks.setPointerCapture(event.pointerId);
  const start = toImagePoint(event);
  state.drag = { start, end: start, x: event.clientX, y: event.clientY, moved: false, label: labelFor(event) };
});
marks.addEventListener("pointermove", (event) => {
  if (state.touches.has(event.pointerId)) state.touches.set(event.pointerId, [event.clientX, event.clientY]);
  if (state.pinch) {
    if (state.touches.size === 2) movePinch();
    return;
  }
  if (state.pan) {
    photoViewport.scrollLeft = state.pan.left - (event.clientX - state.pan.x);
    photoViewport.scrollTop = state.pan.top - (event.clientY - state.pan.y);
    return;
  }
  const drag = state.drag;
  if (!drag) {
    scheduleHover(event);
    return;
  }
  drag.end = toImagePoint(event);
  drag.moved = drag.moved || Math.hypot(event.clientX - drag.x, event.clientY - drag.y) > DRAG_PIXELS;
  if (drag.moved) drawMarks();
});
marks.addEventListener("pointerup", (event) => {
  state.touches.delete(event.pointerId);
  if (state.pinch) {
    if (state.touches.size === 0) state.pinch = null;
    return;
  }
  if (state.pan) {
    state.pan = null;
    return;
  }
  const drag = state.drag;
  if (!drag) return;
  state.drag = null;
  drag.end = toImagePoint(event);
  const object = current();
  remember(object);
  if (drag.moved) {
    object.box = orderedBox(drag.start, drag.end).map(round);
  } else {
    object.points.push([round(drag.start[0]), round(drag.start[1]), drag.label]);
  }
  state.clickStarted = performance.now();
  segment(object);
});
marks.addEventListener("pointercancel", (event) => {
  state.touches.delete(event.pointerId);
  if (state.touches.size === 0) state.pinch = null;
  state.drag = null;
  state.pan = null;
  drawMarks();
});
marks.addEventListener("pointerleave", cancelHover);
photoViewport.addEventListener("wheel", (event) => {
  if (!state.id || event.ctrlKey) return;
  event.preventDefault();
  zoomTo(state.zoom * (event.deltaY < 0 ? 1.25 : 0.8), event.clientX, event.clientY);
}, { passive: false });

function undo() {
  const object = current();
  const previous = object.history.pop();
  if (!previous) return;
  object.points = previous.points;
  object.box = previous.box;
  segment(object);
}

function clearPrompts() {
  const object = current();
  if (!hasPrompt(object)) return;
  remember(object);
  object.points = [];
  object.box = null;
  segment(object);
}

$("file").addEventListener("change", (event) => { openFile(event.target.files[0]); event.target.value = ""; });
$("label-mode").addEventListener("click", () => setLabel(1 - state.label));
$("new-object").addEventListener("click", startNewObject);
$("undo").addEventListener("click", undo);
$("clear").addEventListener("click", clearPrompts);
$("download-coco").addEventListener("click", downloadCoco);
$("download-masks").addEventListener("click", downloadMasks);
$("download-cutouts").addEventListener("click", downloadCutouts);
$("multimask").addEventListener("change", () => segment());
$("zoom-in").addEventListener("click", () => zoomTo(state.zoom * 1.5));
$("zoom-out").addEventListener("click", () => zoomTo(state.zoom / 1.5));
$("zoom-fit").addEventListener("click", () => zoomTo(1));
$("pan-mode").addEventListener("click", () => {
  state.panMode = !state.panMode;
  $("pan-mode").setAttribute("aria-pressed", String(state.panMode));
  marks.classList.toggle("pan", state.panMode);
});
$("everything").addEventListener("click", segmentEverything);
$("tap-mode").addEventListener("click", leaveEverything);
window.addEventListener("keydown", (event) => {
  if (document.body.dataset.mode !== "photo") return;
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
  // Space on a focused button presses it; elsewhere it holds the pan.
  if (event.key === " " && state.id && !(event.target instanceof HTMLButtonElement)) {
    event.preventDefault();
    state.spaceHeld = true;
    document.body.classList.add("panning");
    return;
  }
  if (event.key === "+" || event.key === "=") zoomTo(state.zoom * 1.5);
  if (event.key === "-") zoomTo(state.zoom / 1.5);
  if (event.key === "0") zoomTo(1);
  if (state.everything) {
    if (event.key === "Escape") leaveEverything();
    return;
  }
  if ((event.ctrlKey || event.metaKey) && event.key === "z") { event.preventDefault(); undo(); }
  if (event.key === "Escape") clearPrompts();
  if (event.key === "n" && !event.ctrlKey && !event.metaKey) startNewObject();
});
window.addEventListener("keyup", (event) => {
  if (event.key !== " ") return;
  state.spaceHeld = false;
  document.body.classList.remove("panning");
});
window.addEventListener("dragover", (event) => { event.preventDefault(); document.body.classList.add("dragging"); });
window.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
window.addEventListener("drop", (event) => {
  event.preventDefault();
  document.body.classList.remove("dragging");
  if (document.body.dataset.mode !== "photo") return;
  openFile(event.dataTransfer.files[0]);
});
window.addEventListener("resize", relayout);

resetObjects();
setLabel(1);
callApi("GET", "/healthz").then((health) => {
  $("model").textContent = health.model + (health.synthetic_weights ? ": masks are meaningless" : "");
  $("model").classList.toggle("synthetic", health.synthetic_weights);
}).catch(() => showStatus("The sam2rt server is not answering.", true));
