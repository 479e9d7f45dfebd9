// `sam2rt serve` on a free port with the micro config, on synthetic weights or
// (for masks that follow the picture) the fixture checkpoint micro.pt, for the
// tests in this folder: the process and a promise of the URL it prints first.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";

export function startServer(binary, fixtures, extraArgs = [], { checkpoint = false } = {}) {
  const weights = checkpoint ? ["--model", path.join(fixtures, "micro", "micro.pt")] : ["--synthetic-weights", "0"];
  const server = spawn(binary, ["serve", "--port", "0", ...weights,
                                "--config", path.join(fixtures, "micro", "sam2.1_micro.yaml"), ...extraArgs],
                       { stdio: ["ignore", "pipe", "inherit"] });
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no URL from sam2rt serve within 60 s")), 60_000);
    server.on("exit", (code) => reject(new Error(`sam2rt serve exited with ${code} before printing its URL`)));
    createInterface({ input: server.stdout }).once("line", (line) => { clearTimeout(timer); resolve(line.trim()); });
  });
  return { server, url };
}
