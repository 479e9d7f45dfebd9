// End-to-end test of the `sam2rt serve` page in headless Chromium:
//   node serve_page.test.mjs SAM2RT_BINARY FIXTURES_DIR OUTPUT_DIR
// Starts the server on a free port (micro model, synthetic weights), opens a
// fixture photo through the file input, clicks, right-clicks and drags on it,
// and checks that the mask overlay shows mask pixels after each prompt; then
// presses Everything, checks the busy indicator and the masks, selects one by
// clicking it, and goes back to tapping. Leaves OUTPUT_DIR/screenshot.png (tap)
// and OUTPUT_DIR/everything.png. Exits nonzero on any failure.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const [binary, fixtures, outputDir] = process.argv.slice(2);
if (!binary || !fixtures || !outputDir) {
  console.error("usage: node serve_page.test.mjs SAM2RT_BINARY FIXTURES_DIR OUTPUT_DIR");
  process.exit(2);
}
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const photo = path.join(fixtures, "images", "chelsea_288x112.png");
const PHOTO_WIDTH = 288, PHOTO_HEIGHT = 112;

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  console.log(`ok - ${message}`);
}

function startServer() {
  const server = spawn(binary, ["serve", "--port", "0", "--synthetic-weights", "0",
                                "--config", path.join(fixtures, "micro", "sam2.1_micro.yaml")],
                       { stdio: ["ignore", "pipe", "inherit"] });
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no URL from sam2rt serve within 60 s")), 60_000);
    server.on("exit", (code) => reject(new Error(`sam2rt serve exited with ${code} before printing its URL`)));
    createInterface({ input: server.stdout }).once("line", (line) => { clearTimeout(timer); resolve(line.trim()); });
  });
  return { server, url };
}

// Mask pixels actually painted on the overlay canvas (alpha > 0).
async function paintedMaskPixels(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById("mask");
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 3; i < data.length; i += 4) count += data[i] > 0 ? 1 : 0;
    return count;
  });
}

// Waits until the page has answered the latest prompt (or failed).
async function settled(page) {
  await page.waitForFunction(() => ["mask", "ready", "error"].includes(document.body.dataset.state) &&
                                   document.body.dataset.state !== "segmenting", null, { timeout: 30_000 });
  return page.evaluate(() => document.body.dataset.state);
}

async function main() {
  mkdirSync(outputDir, { recursive: true });
  const profile = mkdtempSync(path.join(tmpdir(), "sam2rt-chromium-"));
  const { server, url } = startServer();
  let context;
  try {
    const address = await url;
    check(/^http:\/\/127\.0\.0\.1:\d+\/$/.test(address), `server prints its URL first (${address})`);
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      viewport: { width: 1000, height: 700 },
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = context.pages()[0] || await context.newPage();
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => { if (message.type() === "error") pageErrors.push(message.text()); });

    await page.goto(address);
    check(await page.title() === "sam2rt: tap to segment", "the page loads");
    await page.waitForFunction(() => document.getElementById("model").textContent.includes("synthetic"));
    check(true, "the page shows the model from /healthz");

    await page.setInputFiles("#file", photo);
    await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 60_000 });
    const size = await page.evaluate(() => [document.getElementById("photo").width, document.getElementById("photo").height]);
    check(size[0] === PHOTO_WIDTH && size[1] === PHOTO_HEIGHT, `the photo is shown at ${size.join("x")}`);
    check(/encode \d+ ms/.test(await page.textContent("#status")), "the status line shows the encode time");

    const marks = page.locator("#marks");
    const box = await marks.boundingBox();
    const at = (x, y) => ({ x: x * box.width / PHOTO_WIDTH, y: y * box.height / PHOTO_HEIGHT });

    await marks.click({ position: at(100, 50) });
    check(await settled(page) === "mask", "a click gives a mask");
    const afterClick = await paintedMaskPixels(page);
    check(afterClick > 0, `the overlay shows ${afterClick} mask pixels`);
    check(Number(await page.getAttribute("#mask", "data-pixels")) === afterClick, "the overlay matches the mask");
    check(/decode [\d.]+ ms/.test(await page.textContent("#status")), "the status line shows the decode time");
    const candidates = page.locator("#candidates button");
    check(await candidates.count() === 3, "a single click offers 3 candidates with their IoU");
    const selected = await page.locator("#candidates button.selected").textContent();
    const other = (await candidates.nth(0).textContent()) === selected ? 1 : 0;
    await candidates.nth(other).click();
    check(await candidates.nth(other).getAttribute("class") === "selected", "another candidate can be chosen");

    await marks.click({ position: at(230, 30), button: "right" });
    check(await settled(page) === "mask", "a right click (background point) updates the mask");
    check(await page.evaluate(() => document.getElementById("candidates").children.length) === 0,
          "two points give a single mask");

    const from = at(40, 10), to = at(250, 100);
    await page.mouse.move(box.x + from.x, box.y + from.y);
    await page.mouse.down();
    await page.mouse.move(box.x + (from.x + to.x) / 2, box.y + (from.y + to.y) / 2, { steps: 4 });
    await page.mouse.move(box.x + to.x, box.y + to.y, { steps: 4 });
    await page.mouse.up();
    check(await settled(page) === "mask", "a drag (box) updates the mask");
    check(await paintedMaskPixels(page) > 0, "the overlay shows the box's mask");
    await page.screenshot({ path: path.join(outputDir, "screenshot.png") });
    const boxMaskPixels = await paintedMaskPixels(page);

    // Everything, on a small grid with every filter open (the synthetic weights'
    // masks would not pass the official thresholds). The answer is held back a
    // moment so that the busy state can be seen.
    await page.click("#everything-options summary");
    for (const [name, value] of [["points_per_side", "4"], ["pred_iou_thresh", "0"],
                                 ["stability_score_thresh", "0"], ["box_nms_thresh", "1"]]) {
      await page.fill(`#${name}`, value);
    }
    let releaseAnswer;
    const answerHeld = new Promise((resolve) => { releaseAnswer = resolve; });
    await page.route("**/everything", async (route) => { await answerHeld; await route.continue(); });
    await page.click("#everything");
    await page.waitForFunction(() => document.body.dataset.state === "finding");
    check(await page.locator("#busy").isVisible(), "a busy indicator shows while Everything runs");
    check(await page.locator("#everything").isDisabled(), "Everything cannot be pressed twice meanwhile");
    releaseAnswer();
    await page.waitForFunction(() => ["everything", "error"].includes(document.body.dataset.state), null,
                               { timeout: 120_000 });
    await page.unroute("**/everything");
    check(await page.evaluate(() => document.body.dataset.state) === "everything",
          `Everything answers (${await page.textContent("#status")})`);
    check(!(await page.locator("#busy").isVisible()), "the busy indicator goes away");
    const maskCount = Number(await page.getAttribute("#mask", "data-masks"));
    check(maskCount > 1, `Everything shows ${maskCount} masks`);
    check(new RegExp(`everything: ${maskCount} masks`).test(await page.textContent("#status")),
          "the status line counts them");
    const everythingPixels = await paintedMaskPixels(page);
    check(everythingPixels === Number(await page.getAttribute("#mask", "data-pixels")) && everythingPixels > 0,
          `the overlay paints ${everythingPixels} pixels of masks`);
    check(await page.locator("#record").isHidden(), "no record is shown before a mask is selected");

    await marks.click({ position: at(100, 50) });
    const chosen = Number(await page.getAttribute("#mask", "data-selected"));
    check(chosen >= 0 && chosen < maskCount, `a click selects mask ${chosen + 1}`);
    const record = await page.textContent("#record");
    check(await page.locator("#record").isVisible() && record.startsWith(`mask ${chosen + 1} of ${maskCount}`) &&
          /predicted_iou: [\d.]+/.test(record) && /stability_score/.test(record) && /crop_box: \[0,0,288,112\]/.test(record),
          "the selected mask's record is shown");
    check(await page.locator("#undo").isDisabled() && await page.locator("#download").isDisabled(),
          "tap-only buttons are off while the masks are shown");
    check(await page.evaluate(() => document.getElementById("candidates").children.length) === 0,
          "the tap candidates are hidden while the masks are shown");
    await page.screenshot({ path: path.join(outputDir, "everything.png") });
    const under = Number(await page.getAttribute("#mask", "data-under"));
    await marks.click({ position: at(100, 50) });
    const next = Number(await page.getAttribute("#mask", "data-selected"));
    check(under > 1 ? next !== chosen : next === chosen,
          `clicking again selects the next of the ${under} masks under the pointer`);

    await page.keyboard.press("Escape");
    check(await settled(page) === "mask", "Esc goes back to tapping, with the prompts from before");
    check(await page.locator("#record").isHidden() && await page.locator("#tap-mode").isHidden(),
          "the record and the way back are gone");
    check(await paintedMaskPixels(page) === boxMaskPixels, "the tap mask is back");
    await marks.click({ position: at(150, 60) });
    check(await settled(page) === "mask", "tapping works after Everything");

    await page.click("#undo");
    await page.click("#undo");
    await page.click("#undo");
    await page.click("#undo");
    await settled(page);
    check(await paintedMaskPixels(page) === 0, "undoing every prompt clears the overlay");
    check(await page.locator("#undo").isDisabled(), "nothing is left to undo");

    check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? ": " + pageErrors.join("; ") : ""}`);
  } finally {
    if (context) await context.close();
    server.kill("SIGTERM");
    rmSync(profile, { recursive: true, force: true });
  }
}

main().then(() => console.log("browser test passed"), (error) => {
  console.error(`browser test FAILED: ${error.stack || error}`);
  process.exitCode = 1;
});
