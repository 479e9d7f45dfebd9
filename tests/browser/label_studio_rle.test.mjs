// Label Studio's own decoder on sam2rt's brush RLE:
//   node label_studio_rle.test.mjs SAM2RT_BINARY FIXTURES_DIR
// Label Studio's editor decodes a brushlabels result's `rle` with
// @thi.ng/rle-pack (decodeBinary) into the RGBA pixels of the brush layer. This
// starts `sam2rt serve` (micro model, synthetic weights, --data-root on the
// fixture images), replays tests/labelling/label_studio_predict_keypoints.json on
// POST /predict, decodes the answer with rle-pack and compares its alpha channel
// with the best mask the server's own API gives for the same clicks (COCO
// uncompressed RLE). Exits nonzero on any failure.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { decodeBinary } from "@thi.ng/rle-pack";
import { startServer } from "./serve_process.mjs";

const [binary, fixtures] = process.argv.slice(2);
if (!binary || !fixtures) {
  console.error("usage: node label_studio_rle.test.mjs SAM2RT_BINARY FIXTURES_DIR");
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const WIDTH = 288, HEIGHT = 112;

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  console.log(`ok - ${message}`);
}

async function postJson(url, body, headers = {}) {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

// COCO uncompressed RLE (column-major runs, background first) to a row-major 0/1 mask.
function cocoRleToMask({ size: [height, width], counts }) {
  const mask = new Uint8Array(width * height);
  let index = 0;
  counts.forEach((run, k) => {
    for (let i = 0; i < run; i++, index++) {
      if (k % 2 === 1) mask[(index % height) * width + Math.floor(index / height)] = 1;
    }
  });
  return mask;
}

const { server, url } = startServer(binary, fixtures, ["--data-root", path.join(fixtures, "images")]);
try {
  const base = (await url).replace(/\/$/, "");
  const request = readFileSync(path.join(here, "..", "labelling", "label_studio_predict_keypoints.json"), "utf8");
  const answer = await postJson(`${base}/predict`, request);
  const item = answer.results[0].result[0];
  check(item.type === "brushlabels" && item.value.format === "rle", "Label Studio answer is a brushlabels rle");

  const rgba = decodeBinary(Uint8Array.from(item.value.rle));
  check(rgba.length === WIDTH * HEIGHT * 4, `rle-pack decodes ${WIDTH}x${HEIGHT} RGBA pixels`);
  const alpha = Uint8Array.from({ length: WIDTH * HEIGHT }, (_, p) => rgba[4 * p + 3]);
  let uniform = true;
  for (let p = 0; p < WIDTH * HEIGHT && uniform; p++) {
    uniform = rgba[4 * p] === alpha[p] && rgba[4 * p + 1] === alpha[p] && rgba[4 * p + 2] === alpha[p];
  }
  check(uniform, "every channel of a pixel holds the mask value (brush.py's mask2rle)");

  // The same clicks through serve's own API: object (108, 42), background (252, 84).
  const png = readFileSync(path.join(fixtures, "images", "chelsea_288x112.png"));
  const upload = await fetch(`${base}/v1/images`, { method: "POST", headers: { "Content-Type": "image/png" }, body: png });
  const { id } = await upload.json();
  const segment = await postJson(`${base}/v1/images/${id}/segment`, JSON.stringify({
    points: [[108, 42, 1], [252, 84, 0]], multimask: true, format: "rle" }));
  const expected = cocoRleToMask(segment.masks[segment.best_index].rle);
  let mismatches = 0, area = 0;
  for (let p = 0; p < WIDTH * HEIGHT; p++) {
    mismatches += (alpha[p] === 255 ? 1 : 0) !== expected[p] ? 1 : 0;
    mismatches += alpha[p] !== 0 && alpha[p] !== 255 ? 1 : 0;
    area += expected[p];
  }
  check(area > 0 && area < WIDTH * HEIGHT, `the mask is neither empty nor the whole image (${area} px)`);
  check(mismatches === 0, "rle-pack's pixels are the API's best mask for the same clicks, pixel for pixel");
} finally {
  server.kill("SIGTERM");
}
