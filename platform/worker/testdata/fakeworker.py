"""A stand-in worker for supervisor tests: speaks the protocol, misbehaves on request.

FAKE_START: "ok" (default), "silent" (never says hello), "garbage" (junk instead of hello),
"die" (exits before hello), "first" (ok when FAKE_MARK does not exist yet, creating it;
silent after that: a pool's spare that never gets ready).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

mode = os.environ.get("FAKE_START", "ok")
if mode == "first":
    try:
        os.close(os.open(os.environ["FAKE_MARK"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        mode = "ok"
    except FileExistsError:
        mode = "silent"
if mode == "silent":
    time.sleep(3600)
if mode == "garbage":
    out.write("this is not json\n")
    time.sleep(3600)
if mode == "die":
    sys.stderr.write("fake: dying before hello\n")
    sys.exit(7)


def send(obj):
    out.write(json.dumps(obj) + "\n")


send({"id": 0, "ok": True, "result": {"pid": os.getpid(), "python": sys.version.split()[0],
                                      "torch": "fake", "device": {"type": "cpu", "name": "fake"}}})
for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    if op == "echo":
        send({"id": rid, "ok": True, "result": req})
    elif op == "sleep":
        if req.get("child"):
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        time.sleep(req["seconds"])
        send({"id": rid, "ok": True, "result": {}})
    elif op == "exit":
        sys.stderr.write("fake: exiting with %d\n" % req["code"])
        sys.stderr.flush()
        os._exit(req["code"])
    elif op == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif op == "garbage":
        out.write("{not json\n")
    elif op == "stale":
        send({"id": rid - 1, "ok": True, "result": {"stale": True}})
        send({"id": rid, "ok": True, "result": {"fresh": True}})
    elif op == "fatal":
        send({"id": rid, "ok": False, "error": {"kind": "cuda_error", "message": "illegal memory access", "fatal": True}})
        sys.exit(1)
    elif op == "fail":
        send({"id": rid, "ok": False, "error": {"kind": "exception", "message": "boom", "fatal": False}})
    elif op == "env":
        send({"id": rid, "ok": True, "result": {"env": dict(os.environ), "cwd": os.getcwd()}})
    elif op == "net":
        try:
            s = socket.create_connection(("127.0.0.1", req["port"]), timeout=2)
            s.close()
            send({"id": rid, "ok": True, "result": {"connected": True}})
        except OSError as e:
            send({"id": rid, "ok": True, "result": {"connected": False, "error": str(e)}})
    elif op == "spam":
        sys.stdout.write("x" * req["bytes"])
        sys.stdout.flush()
        send({"id": rid, "ok": True, "result": {}})
    elif op == "litter":
        # Temporary files as a candidate might leave them: a folder under
        # tempfile's dir holding a file and a folder with no permissions.
        d = tempfile.mkdtemp(prefix="litter-")
        with open(os.path.join(d, "f"), "w") as f:
            f.write("x")
        locked = os.path.join(d, "locked")
        os.mkdir(locked)
        with open(os.path.join(locked, "g"), "w") as f:
            f.write("y")
        os.chmod(locked, 0)
        send({"id": rid, "ok": True, "result": {"dir": d}})
    elif op == "shutdown":
        break
    else:
        send({"id": rid, "ok": False, "error": {"kind": "protocol", "message": "unknown op " + op}})
