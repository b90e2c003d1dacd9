"""Start one worker through the fork server: ``python -S -c <this file> SOCKET PID``.

Run by the supervisor in place of ``python -m kagent_harness.worker``, from the
source held in the kagent binary (never from a file a candidate could rewrite).
It talks only to a server whose process id (checked through SO_PEERCRED) is PID,
so a socket put in the server's place is refused. It imports
nothing heavy: it hands its stdin, stdout and stderr, its environment, working
directory and process group to the fork server (see forkserver.py), then waits
and exits with the worker's status (or dies of the worker's signal). SIGTERM and
SIGINT are ignored here: the worker, in the same process group, gets them too,
and this process ends when the worker does.
"""

import json
import os
import signal
import socket
import sys


def main() -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(sys.argv[1])
        import struct

        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        peer = struct.unpack("3i", creds)[0]
        if peer != int(sys.argv[2]):
            sys.stderr.write(f"kagent launch: {sys.argv[1]} is served by process {peer}, not the fork server {sys.argv[2]}\n")
            return 75
        request = {"env": dict(os.environ), "cwd": os.getcwd(), "pgid": os.getpgrp()}
        fds = [0, 1, 2]
        if os.environ.get("KAGENT_RUNNER_FD") == "3":
            fds.append(3)  # the worker's connection to its sandboxed runner server
        socket.send_fds(sock, [json.dumps(request).encode("utf-8")], fds)
        if len(fds) > 3:
            os.close(3)
    except OSError as exc:
        sys.stderr.write(f"kagent launch: the fork server at {sys.argv[1]} is not answering: {exc}\n")
        return 75
    for fd in (0, 1):
        # The worker holds them now; the supervisor must see EOF when it exits.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, fd)
        os.close(devnull)
    reader = sock.makefile("rb")
    for line in reader:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "exit" in msg:
            return int(msg["exit"])
        if "signal" in msg:
            sig = int(msg["signal"])
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            return 128 + sig
    sys.stderr.write("kagent launch: the fork server closed the connection before the worker ended\n")
    return 75


if __name__ == "__main__":
    sys.exit(main())
