"""Drives `sam2rt serve` through concurrent video and image requests (scripts/tsan-serve.sh).

Usage: serve_driver.py SAM2RT CLIP.mp4 IMAGE.png FIXTURES_MICRO_DIR SERVER_LOG
Three uploads race past --max-videos 2; two pollers read progress, masks and frames
and prompt (409 while tracking) while the video propagates forward, forward and
back, and is stopped; images are encoded and segmented meanwhile; the video is
deleted while it propagates; the server stops on SIGTERM. Prints the statuses seen.
"""
import json, os, random, signal, socket, subprocess, sys, threading, time, urllib.request, urllib.error

binary, clip, image, root, log = sys.argv[1:6]
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
err = open(log, "w")
env = dict(os.environ, OMP_NUM_THREADS="1")
server = subprocess.Popen([binary, "serve", "--config", root + "/sam2.1_micro.yaml", "--model", root + "/micro.pt",
                           "--port", str(port), "--threads", "1", "--max-videos", "2"], stderr=err, stdout=err, env=env)
base = f"http://127.0.0.1:{port}"

def call(method, path, body=None, ctype="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None: req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=300) as r: return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()

for _ in range(600):
    try: call("GET", "/healthz"); break
    except Exception: time.sleep(0.5)
video = open(clip, "rb").read()
statuses = {}
def note(name, status): statuses.setdefault(name, []).append(status)

ids = []
def upload():
    s, b = call("POST", "/v1/videos", video, "application/octet-stream"); note("upload", s)
    if s == 201: ids.append(json.loads(b)["id"])
ts = [threading.Thread(target=upload) for _ in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
vid = ids[-1]
s, _ = call("GET", f"/v1/videos/{vid}"); note("info", s)
s, _ = call("POST", f"/v1/videos/{vid}/prompts", {"frame": 0, "obj_id": 1, "points": [[49, 41, 1]], "format": "rle"}); note("prompt", s)
s, _ = call("POST", f"/v1/videos/{vid}/prompts", {"frame": 3, "obj_id": 2, "box": [10, 10, 80, 60], "format": "rle"}); note("prompt", s)
stop = False
def poller():
    while not stop:
        s, _ = call("GET", f"/v1/videos/{vid}/propagate"); note("progress", s)
        s, _ = call("GET", f"/v1/videos/{vid}/masks/{random.randrange(8)}?format=rle"); note("masks", s)
        s, _ = call("GET", f"/v1/videos/{vid}/frames/{random.randrange(8)}"); note("frame", s)
        s, _ = call("POST", f"/v1/videos/{vid}/prompts", {"frame": 1, "obj_id": 1, "points": [[20, 20]]}); note("prompt-during", s)
def images():
    img = open(image, "rb").read()
    for _ in range(4):
        s, b = call("POST", "/v1/images", img, "application/octet-stream"); note("image", s)
        if s in (200, 201):
            iid = json.loads(b)["id"]
            s, _ = call("POST", f"/v1/images/{iid}/segment", {"points": [[50, 40, 1]]}); note("segment", s)
pollers = [threading.Thread(target=poller) for _ in range(2)] + [threading.Thread(target=images)]
[t.start() for t in pollers]
for round_ in range(3):
    s, _ = call("POST", f"/v1/videos/{vid}/propagate", {"reverse": round_ == 1}); note("propagate", s)
    if round_ == 2:
        time.sleep(0.3); s, _ = call("DELETE", f"/v1/videos/{vid}/propagate"); note("stop", s)
    for _ in range(600):
        s, b = call("GET", f"/v1/videos/{vid}/propagate")
        if json.loads(b)["state"] != "running": break
        time.sleep(0.1)
s, _ = call("POST", f"/v1/videos/{vid}/propagate", {}); note("propagate", s)
time.sleep(0.2)
s, _ = call("DELETE", f"/v1/videos/{vid}"); note("delete-while-propagating", s)
stop = True
[t.join() for t in pollers]
others = [i for i in ids[:-1] if call("GET", f"/v1/videos/{i}")[0] == 200]
other = others[0] if others else ids[0]
s, _ = call("POST", f"/v1/videos/{other}/propagate", {}); note("propagate-other", s)
s, _ = call("POST", f"/v1/videos/{other}/prompts", {"frame": 0, "obj_id": 5, "points": [[30, 30]]}); note("prompt-other", s)
s, _ = call("POST", f"/v1/videos/{other}/propagate", {}); note("propagate-other", s)
time.sleep(0.3)
server.send_signal(signal.SIGTERM)
rc = server.wait(timeout=300)
print("server exit", rc)
print({k: sorted(set(v)) for k, v in statuses.items()})
