"use strict";
// The video view of the page: open a video, click (or box) objects on any frame, track
// them through the video (POST /v1/videos/{id}/propagate) and scrub through
// each frame's masks. Shares app.js's helpers (a classic script loaded before this one).
/* global $, apiError, callApi, rleBits, objectColour, paintOutlinedMask */
const videoFrame = $("video-frame"), videoMask = $("video-mask"), videoMarks = $("video-marks");
const PROGRESS_POLL_MS = 250;
const VIDEO_DRAG_PIXELS = 6;
const NO_PROMPT = Object.freeze({ points: [], box: null });
const videoState = {
  id: null, name: "", frames: 0, width: 0, height: 0, fps: null, frame: 0, opening: 0,
  // Objects by id, in the order made: { id, colour }; one is current.
  objects: [], current: 0, label: 1,
  // The prompt per "frame:object", { points, box }: what the page shows (a click adds its
  // point at once) and what the server has taken (to go back to when a request fails).
  prompts: new Map(), accepted: new Map(),
  // Prompt requests, one after another: each sends the prompt its frame and object have then.
  requests: Promise.resolve(), pending: 0,
  // A box being drawn: { start, end, x, y, moved, label }.
  drag: null,
  // The masks of each frame the page has asked for: frame -> [{ obj_id, rle, area }].
  masks: new Map(), shown: 0,
  // While tracking: { timer, total }.
  propagation: null,
};

function showVideoStatus(text, isError = false) {
  $("video-status").textContent = text;
  $("video-status").classList.toggle("error", isError);
}

function setMode(mode) {
  document.body.dataset.mode = mode;
  $("photo-view").hidden = mode !== "photo";
  $("video-view").hidden = mode !== "video";
  $("mode-photo").setAttribute("aria-pressed", String(mode === "photo"));
  $("mode-video").setAttribute("aria-pressed", String(mode === "video"));
  if (mode === "video") layoutVideo();
}

function videoPath(suffix = "") { return `/v1/videos/${videoState.id}${suffix}`; }
function pointsKey(frame, objId) { return `${frame}:${objId}`; }
function framePrompt(frame = videoState.frame, objId = videoState.current) {
  return videoState.prompts.get(pointsKey(frame, objId)) || NO_PROMPT;
}
function hasVideoPrompt(prompt) { return prompt.points.length > 0 || prompt.box !== null; }
function objectColourOf(objId) {
  const object = videoState.objects.find((o) => o.id === objId);
  return object ? object.colour : objectColour(objId - 1);
}
function promptedObjects() {
  return new Set([...videoState.prompts.entries()].filter(([, prompt]) => hasVideoPrompt(prompt))
    .map(([key]) => Number(key.split(":")[1])));
}

function updateVideoButtons() {
  const open = videoState.id !== null, tracking = videoState.propagation !== null;
  const idle = open && !tracking && videoState.pending === 0;
  const prompted = promptedObjects();
  $("video-object").disabled = !idle;
  $("video-new-object").disabled = !idle || !prompted.has(videoState.current);
  $("video-clear").disabled = !idle || !hasVideoPrompt(framePrompt());
  $("video-propagate").disabled = !idle || prompted.size === 0;
  $("video-reset").disabled = !idle || videoState.masks.size === 0 && prompted.size === 0;
  $("video-cancel").hidden = !tracking;
  $("video-progress").hidden = !tracking && $("video-progress").value === 0;
}

function renderObjectChoice() {
  const select = $("video-object");
  select.replaceChildren();
  for (const object of videoState.objects) {
    const option = document.createElement("option");
    option.value = String(object.id);
    option.textContent = `object ${object.id}`;
    option.style.color = `rgb(${object.colour.join(",")})`;
    option.selected = object.id === videoState.current;
    select.appendChild(option);
  }
}

function addVideoObject() {
  const id = videoState.objects.reduce((most, object) => Math.max(most, object.id), 0) + 1;
  videoState.objects.push({ id, colour: objectColour(id - 1) });
  videoState.current = id;
  renderObjectChoice();
  drawVideoMarks();
  updateVideoButtons();
}

function resetVideoObjects() {
  videoState.objects = [];
  videoState.prompts = new Map();
  videoState.accepted = new Map();
  videoState.masks = new Map();
  addVideoObject();
}

// ---------------------------------------------------------------------------
// The frame on screen: its picture, every object's mask, the current object's points.

function frameStatus() {
  const parts = [`${videoState.name}: ${videoState.width}\u00d7${videoState.height}, ${videoState.frames} frames` +
                 (videoState.fps ? ` at ${Number(videoState.fps.toFixed(2))} fps` : "")];
  const masks = videoState.masks.get(videoState.frame);
  if (masks && masks.length > 0) {
    parts.push(masks.map((m) => `object ${m.obj_id}: ${m.area} px`).join(", "));
  } else {
    parts.push(promptedObjects().size === 0 ? "click an object to prompt it" : "no masks on this frame yet");
  }
  return parts.join(" \u00b7 ");
}

function drawVideoMasks() {
  const { width: w, height: h } = videoState;
  if (videoMask.width !== w || videoMask.height !== h) {
    videoMask.width = w;
    videoMask.height = h;
  }
  const context = videoMask.getContext("2d");
  const pixels = context.createImageData(w, h);
  const masks = videoState.masks.get(videoState.frame) || [];
  let painted = 0;
  // The current object last, on top.
  const ordered = [...masks].sort((a, b) => (a.obj_id === videoState.current) - (b.obj_id === videoState.current));
  for (const mask of ordered) {
    const alpha = mask.obj_id === videoState.current ? 140 : 100;
    painted += paintOutlinedMask(pixels, rleBits(mask.rle), [...objectColourOf(mask.obj_id), alpha]);
  }
  context.putImageData(pixels, 0, 0);
  videoMask.dataset.frame = String(videoState.frame);
  videoMask.dataset.pixels = String(painted);
}

// The frame as large as the window allows (small videos at least 640 px wide), whole.
function layoutVideo() {
  if (!videoState.id) return;
  const available = Math.max(160, $("video-view").clientWidth);
  const scale = Math.min(available / videoState.width, window.innerHeight * 0.68 / videoState.height,
                         Math.max(1, 640 / videoState.width));
  $("video-stage").style.width = `${Math.floor(videoState.width * scale)}px`;
  drawVideoMarks();
}

function drawVideoMarks() {
  videoMarks.replaceChildren();
  if (!videoState.id) return;
  const scale = videoState.width / Math.max(1, videoMarks.getBoundingClientRect().width);
  const mark = (name, attributes) => {
    const element = document.createElementNS("http://www.w3.org/2000/svg", name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
    return videoMarks.appendChild(element);
  };
  const rect = (b, dashed) => mark("rect", {
    x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1], fill: "none", stroke: "#ffd400",
    "stroke-width": 2 * scale, "stroke-dasharray": dashed ? `${6 * scale} ${4 * scale}` : "none" });
  const { points, box } = framePrompt();
  if (box) rect(box, false);
  const drag = videoState.drag;
  if (drag && drag.moved) rect(videoBox(drag.start, drag.end), true);
  for (const [x, y, label] of points) {
    mark("circle", { cx: x, cy: y, r: 6 * scale, fill: label === 1 ? "#22c55e" : "#ef4444", stroke: "#fff",
                     "stroke-width": 2 * scale }).dataset.label = String(label);
  }
  videoMarks.dataset.labels = points.map((p) => p[2]).join(",");
  videoMarks.dataset.box = box ? box.join(",") : "";
}

// Asks the server for the frame's masks unless the page has them (during
// tracking, a frame not tracked yet is asked again later).
async function loadFrameMasks(frame) {
  if (videoState.masks.has(frame)) return;
  const id = videoState.id;
  const answer = await callApi("GET", videoPath(`/masks/${frame}?format=rle`));
  if (id !== videoState.id) return;
  if (answer.objects.length > 0 || videoState.propagation === null) videoState.masks.set(frame, answer.objects);
}

async function showVideoFrame(frame) {
  if (!videoState.id) return;
  const next = Math.max(0, Math.min(videoState.frames - 1, frame));
  const ask = ++videoState.shown;
  videoState.frame = next;
  $("video-scrubber").value = String(next);
  $("video-frame-number").textContent = `frame ${next} / ${videoState.frames - 1}`;
  videoFrame.src = videoPath(`/frames/${next}`);
  drawVideoMarks();
  drawVideoMasks();
  updateVideoButtons();
  try {
    await loadFrameMasks(next);
    if (ask !== videoState.shown) return;
    drawVideoMasks();
    showVideoStatus(frameStatus());
    document.body.dataset.videoFrame = String(next);
  } catch (error) {
    if (ask === videoState.shown) showVideoStatus(`Could not read frame ${next}'s masks: ${error.message}`, true);
  }
}

// ---------------------------------------------------------------------------
// Opening a video. The old one stays until the new one is open.

// POST /v1/videos with the bytes sent reported (fetch cannot report them): onSent(fraction)
// while the file goes up; the server then reads every frame before it answers.
function uploadVideo(file, onSent) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/v1/videos");
    request.setRequestHeader("Content-Type", "application/octet-stream");
    request.responseType = "json";
    request.upload.onprogress = (event) => { if (event.lengthComputable) onSent(event.loaded / event.total); };
    request.upload.onload = () => onSent(1);
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) {
        resolve(request.response);
      } else {
        reject(apiError(request.status, request.response));
      }
    };
    request.onerror = () => reject(new Error("the upload failed (connection lost)"));
    request.send(file);
  });
}

async function openVideo(file) {
  if (!file) return;
  const attempt = ++videoState.opening;
  setMode("video");
  showVideoStatus(`Uploading ${file.name}\u2026`);
  document.body.dataset.videoState = "opening";
  // The progress bar shows the upload unless the open video is being tracked.
  const showSent = (fraction) => {
    if (attempt !== videoState.opening) return;
    if (fraction < 1) {
      showVideoStatus(`Uploading ${file.name}\u2026 ${Math.floor(fraction * 100)}%`);
    } else {
      showVideoStatus(`Reading every frame of ${file.name}\u2026`);
    }
    if (videoState.propagation !== null) return;
    $("video-progress").max = 1;
    $("video-progress").value = fraction;
    $("video-progress").hidden = false;
  };
  try {
    const info = await uploadVideo(file, showSent);
    if (attempt !== videoState.opening) {
      callApi("DELETE", `/v1/videos/${info.id}`).catch(() => {});
      return;
    }
    if (videoState.id) callApi("DELETE", videoPath()).catch(() => {});
    stopPolling();
    Object.assign(videoState, { id: info.id, name: file.name, frames: info.frames, width: info.width,
                                height: info.height, fps: info.fps, frame: 0 });
    $("video-progress").value = 0;
    resetVideoObjects();
    videoMarks.setAttribute("viewBox", `0 0 ${info.width} ${info.height}`);
    $("video-scrubber").max = String(info.frames - 1);
    $("video-dropzone").hidden = true;
    $("video-player").hidden = false;
    layoutVideo();
    document.body.dataset.videoState = "ready";
    await showVideoFrame(0);
  } catch (error) {
    if (attempt !== videoState.opening) return;
    if (videoState.propagation === null) {
      $("video-progress").value = 0;
      updateVideoButtons();
    }
    const still = videoState.id ? ` \u00b7 still working on ${videoState.name}` : "";
    showVideoStatus(`Could not open ${file.name}: ${error.message}${still}`, true);
    document.body.dataset.videoState = "error";
  }
}

// ---------------------------------------------------------------------------
// Prompts: the current object's points and box on the frame on screen, sent whole.

async function sendFramePrompt(frame, objId) {
  const id = videoState.id, key = pointsKey(frame, objId);
  const prompt = framePrompt(frame, objId);
  try {
    const answer = hasVideoPrompt(prompt)
      ? await callApi("POST", videoPath("/prompts"),
                      JSON.stringify({ frame, obj_id: objId, points: prompt.points, box: prompt.box, format: "rle" }),
                      "application/json")
      : await callApi("POST", videoPath("/clear?format=rle"), JSON.stringify({ frame, obj_id: objId }),
                      "application/json");
    if (id !== videoState.id) return;
    videoState.accepted.set(key, prompt);
    videoState.masks.set(frame, answer.objects);
    if (frame === videoState.frame) {
      drawVideoMasks();
      showVideoStatus(frameStatus());
    }
    if (videoState.pending === 1) document.body.dataset.videoState = "mask";
  } catch (error) {
    if (id !== videoState.id) return;
    videoState.prompts.set(key, videoState.accepted.get(key) || NO_PROMPT);
    drawVideoMarks();
    showVideoStatus(`Prompt failed: ${error.message}`, true);
    document.body.dataset.videoState = "error";
  }
}

// Shows the current object's new prompt on this frame at once and sends it after the requests before.
function changeFramePrompt(prompt) {
  const frame = videoState.frame, objId = videoState.current;
  videoState.prompts.set(pointsKey(frame, objId), prompt);
  drawVideoMarks();
  videoState.pending++;
  document.body.dataset.videoState = "prompting";
  updateVideoButtons();
  videoState.requests = videoState.requests.then(() => sendFramePrompt(frame, objId)).finally(() => {
    videoState.pending--;
    updateVideoButtons();
  });
}

function videoPoint(event) {
  const bounds = videoMarks.getBoundingClientRect();
  const clamp = (v, hi) => Math.min(Math.max(v, 0), hi);
  const round = (v) => Math.round(v * 10) / 10;
  return [round(clamp((event.clientX - bounds.left) * videoState.width / bounds.width, videoState.width)),
          round(clamp((event.clientY - bounds.top) * videoState.height / bounds.height, videoState.height))];
}

function videoBox(a, b) {
  return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
}

// A click adds a point; a drag draws the object's box on this frame (replacing the old one).
videoMarks.addEventListener("contextmenu", (event) => event.preventDefault());
videoMarks.addEventListener("pointerdown", (event) => {
  if (!videoState.id || videoState.propagation) return;
  if (event.button !== 0 && event.button !== 2) return;
  videoMarks.setPointerCapture(event.pointerId);
  const inverted = event.button === 2 || event.shiftKey;
  const start = videoPoint(event);
  videoState.drag = { start, end: start, x: event.clientX, y: event.clientY, moved: false,
                      label: inverted ? 1 - videoState.label : videoState.label };
});
videoMarks.addEventListener("pointermove", (event) => {
  const drag = videoState.drag;
  if (!drag) return;
  drag.end = videoPoint(event);
  drag.moved = drag.moved || Math.hypot(event.clientX - drag.x, event.clientY - drag.y) > VIDEO_DRAG_PIXELS;
  if (drag.moved) drawVideoMarks();
});
videoMarks.addEventListener("pointerup", (event) => {
  const drag = videoState.drag;
  if (!drag) return;
  videoState.drag = null;
  const prompt = framePrompt();
  if (drag.moved) {
    changeFramePrompt({ points: prompt.points, box: videoBox(drag.start, videoPoint(event)) });
  } else {
    changeFramePrompt({ points: [...prompt.points, [...drag.start, drag.label]], box: prompt.box });
  }
});
videoMarks.addEventListener("pointercancel", () => {
  videoState.drag = null;
  drawVideoMarks();
});

function clearFramePrompt() {
  if (!videoState.id || videoState.propagation || !hasVideoPrompt(framePrompt())) return;
  changeFramePrompt(NO_PROMPT);
}

// ---------------------------------------------------------------------------
// Propagation, polled until it ends.

function stopPolling() {
  if (videoState.propagation) clearTimeout(videoState.propagation.timer);
  videoState.propagation = null;
}

async function pollPropagation() {
  const id = videoState.id;
  let progress;
  try {
    progress = await callApi("GET", videoPath("/propagate"));
  } catch (error) {
    if (id !== videoState.id) return;
    stopPolling();
    showVideoStatus(`Tracking status unavailable: ${error.message}`, true);
    updateVideoButtons();
    return;
  }
  if (id !== videoState.id || !videoState.propagation) return;
  $("video-progress").max = Math.max(1, progress.frames_total);
  $("video-progress").value = progress.frames_done;
  // The frame on screen shows its masks as soon as it is tracked.
  if (!videoState.masks.has(videoState.frame) ||
      (videoState.masks.get(videoState.frame) || []).length === 0) showVideoFrame(videoState.frame);
  if (progress.state === "running") {
    showVideoStatus(`Tracking\u2026 ${progress.frames_done} of ${progress.frames_total} frames`);
    videoState.propagation.timer = setTimeout(pollPropagation, PROGRESS_POLL_MS);
    return;
  }
  stopPolling();
  // Every frame's masks may have changed: asked again as they are shown.
  videoState.masks = new Map();
  await showVideoFrame(videoState.frame);
  if (progress.state === "failed") {
    showVideoStatus(`Tracking failed: ${progress.error}`, true);
  } else {
    const seconds = (progress.elapsed_ms / 1000).toFixed(1);
    showVideoStatus(`${progress.state === "done" ? "Tracked" : "Stopped after"} ${progress.frames_done} frames in ` +
                    `${seconds} s \u00b7 scrub to see every frame's masks`);
  }
  document.body.dataset.videoState = progress.state === "done" ? "tracked" : progress.state;
  updateVideoButtons();
}

async function propagate() {
  if (!videoState.id || videoState.propagation) return;
  try {
    const started = await callApi("POST", videoPath("/propagate"),
                                  JSON.stringify({ reverse: $("video-reverse").checked }), "application/json");
    videoState.propagation = { timer: 0 };
    videoState.masks = new Map();
    $("video-progress").max = Math.max(1, started.frames_total);
    $("video-progress").value = 0;
    document.body.dataset.videoState = "tracking";
    updateVideoButtons();
    pollPropagation();
  } catch (error) {
    showVideoStatus(`Could not track: ${error.message}`, true);
  }
}

async function resetVideo() {
  if (!videoState.id || videoState.propagation) return;
  try {
    await callApi("POST", videoPath("/reset"), "");
    $("video-progress").value = 0;
    resetVideoObjects();
    await showVideoFrame(videoState.frame);
  } catch (error) {
    showVideoStatus(`Reset failed: ${error.message}`, true);
  }
}

function setVideoLabel(label) {
  videoState.label = label;
  const button = $("video-label-mode");
  button.dataset.label = String(label);
  button.setAttribute("aria-pressed", String(label === 0));
  button.textContent = label === 1 ? "Object point" : "Background point";
}

// ---------------------------------------------------------------------------
// Controls.

$("mode-photo").addEventListener("click", () => setMode("photo"));
$("mode-video").addEventListener("click", () => setMode("video"));
$("video-file").addEventListener("change", (event) => { openVideo(event.target.files[0]); event.target.value = ""; });
$("video-label-mode").addEventListener("click", () => setVideoLabel(1 - videoState.label));
$("video-object").addEventListener("change", (event) => {
  videoState.current = Number(event.target.value);
  drawVideoMarks();
  drawVideoMasks();
  updateVideoButtons();
});
$("video-new-object").addEventListener("click", addVideoObject);
$("video-clear").addEventListener("click", clearFramePrompt);
$("video-propagate").addEventListener("click", propagate);
$("video-cancel").addEventListener("click", () => {
  if (videoState.id) callApi("DELETE", videoPath("/propagate")).catch(() => {});
});
$("video-reset").addEventListener("click", resetVideo);
$("video-scrubber").addEventListener("input", (event) => showVideoFrame(Number(event.target.value)));
$("video-previous").addEventListener("click", () => showVideoFrame(videoState.frame - 1));
$("video-next").addEventListener("click", () => showVideoFrame(videoState.frame + 1));
window.addEventListener("keydown", (event) => {
  if (document.body.dataset.mode !== "video" || !videoState.id) return;
  // The slider moves itself with the arrow keys.
  if (event.target === $("video-scrubber")) return;
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
  if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
    event.preventDefault();
    showVideoFrame(videoState.frame + (event.key === "ArrowLeft" ? -1 : 1));
  }
  if (event.key === "Escape") clearFramePrompt();
  if (event.key === "n" && !event.ctrlKey && !event.metaKey && !$("video-new-object").disabled) addVideoObject();
});
window.addEventListener("drop", (event) => {
  if (document.body.dataset.mode === "video") openVideo(event.dataTransfer.files[0]);
});
window.addEventListener("resize", layoutVideo);

setVideoLabel(1);
