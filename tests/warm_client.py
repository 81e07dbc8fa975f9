"""``alignscore ARGS`` (or ``-c CODE ARGS``) run by the server of ``warm_server.py`` named by
``ALIGNSCORE_WARM_SOCKET``: sends the arguments, working directory, environment and standard streams,
then ends as the command ended. Run with ``python -S``: it needs the standard library only."""

import json
import os
import signal
import socket
import sys

conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(os.environ["ALIGNSCORE_WARM_SOCKET"])
body = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
message = len(body).to_bytes(8, "big") + body
sent = socket.send_fds(conn, [message], [0, 1, 2])
conn.sendall(message[sent:])
reply = b""
while chunk := conn.recv(64):
    reply += chunk
how, _, number = reply.decode().partition(" ")
if how == "signal":
    if int(number) not in (signal.SIGKILL, signal.SIGSTOP):  # the two whose action cannot be set
        signal.signal(int(number), signal.SIG_DFL)
    os.kill(os.getpid(), int(number))
if how != "exit":
    print("alignscore (warm server): the command ended without a status", file=sys.stderr)
sys.exit(int(number) if how == "exit" else 1)
