"""A process that has imported alignscore once and runs each command it is sent in a fork of itself.

Tests that run ``alignscore`` as a real process (the docs examples, about eighty commands; the kill -9
and resume runs) would each pay the import of torch and transformers, most of a small command's time.
The server pays it once, then serves each request in a fork that has done nothing but import: the
command runs as ``python -m alignscore ARGS`` (or ``python -c CODE ARGS``) would, with the client's
arguments, working directory, environment and standard streams, and the client ends as the command
ended (its exit status, or the signal that killed it). A watcher forked per request waits for the
command, so commands may run side by side (``alignscore ... | alignscore ...``).

``python warm_server.py SOCKET`` prints ``ready`` once it listens; ``python -S warm_client.py ARGS``
(with ``ALIGNSCORE_WARM_SOCKET`` set) is the client. :func:`helpers.warm_alignscore` starts one."""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import sys
import traceback


def _request(conn: socket.socket) -> tuple[dict, list[int]]:
    """An 8-byte length, then that much JSON; stdin, stdout and stderr ride along as descriptors."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("the client went away mid-request")
        data += more
    return json.loads(data[8:]), fds


def _command(request: dict, fds: list[int]) -> None:
    """In the command's process: become the client's process, run, exit with the command's status."""
    for fd, target in zip(fds, (0, 1, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    code = 0
    try:
        if argv[:1] == ["-c"]:
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            sys.argv = ["alignscore", *argv]
            runpy.run_module("alignscore", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # what python would print before exiting 1
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(code)


def _watch(conn: socket.socket) -> None:
    """In the watcher: fork the command, wait for it, tell the client how it ended."""
    request, fds = _request(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _command(request, fds)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    ended = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
    conn.sendall(ended.encode())
    os._exit(0)


def serve(path: str) -> None:
    import alignscore.cli  # noqa: F401  the imports every command would pay
    import transformers
    from transformers.models.bert import modeling_bert, tokenization_bert  # noqa: F401  the tests' models

    transformers.AutoModel, transformers.AutoTokenizer, transformers.AutoConfig  # noqa: B018  lazy attributes
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the watcher waits for its command
            _watch(conn)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
