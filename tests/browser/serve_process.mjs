// `sam2rt serve` on a free port with the micro config and synthetic weights, for
// the tests in this folder: the process and a promise of the URL it prints first.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";

export function startServer(binary, fixtures, extraArgs = []) {
  const server = spawn(binary, ["serve", "--port", "0", "--synthetic-weights", "0",
                                "--config", path.join(fixtures, "micro", "sam2.1_micro.yaml"), ...extraArgs],
                       { stdio: ["ignore", "pipe", "inherit"] });
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no URL from sam2rt serve within 60 s")), 60_000);
    server.on("exit", (code) => reject(new Error(`sam2rt serve exited with ${code} before printing its URL`)));
    createInterface({ input: server.stdout }).once("line", (line) => { clearTimeout(timer); resolve(line.trim()); });
  });
  return { server, url };
}
