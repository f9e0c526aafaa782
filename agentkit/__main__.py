"""``python -m agentkit``: serve Podium's agent protocol for the agent class in ``PODIUM_AGENT``."""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import time

from agentkit.protocol import ENV_AGENT, ENV_SOCKET_DIR, ENV_TASK, SOCKET_DIR
from agentkit.server import serve

TERMINATE_GRACE_S = 2  # after SIGTERM, the most the process takes to end


class Terminated(BaseException):
    """SIGTERM: stop now, whatever the agent is doing (not an error the agent may catch)."""


def _terminate(signum: int, frame: object) -> None:
    # Unwind (the server closes, the socket goes). Should the exception never get there (an
    # agent catching BaseException, a finaliser the collector ran when it landed, which Python
    # swallows, or the interpreter's exit waiting on a thread), the watchdog ends the process a
    # moment later all the same: it needs nothing of the main thread. It is told through a
    # pipe: a handler that started a thread could block on threading's own lock, held by the
    # code the signal interrupted.
    os.write(_watchdog_pipe(), bytes([HANDLED]))
    raise Terminated(signum)


_WATCHDOG: list[int] = []  # the write end of the watchdog's pipe, once started
HANDLED = b"T"[0]  # the handler's byte (the wakeup fd's are signal numbers)
HANDLER_WAIT_S = 0.1  # after the wakeup fd's SIGTERM, how long the handler may take to say so


def _handled_within(read_end: int, timeout_s: float) -> bool:
    """Whether the handler's byte comes through the pipe within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if select.select([read_end], [], [], left)[0] and HANDLED in os.read(read_end, 64):
            return True
    return False


def _watchdog_pipe() -> int:
    return _WATCHDOG[0]


def _start_watchdog() -> None:
    """A thread that ends the process ``TERMINATE_GRACE_S`` after SIGTERM, whatever else runs.

    It hears of the signal twice: from the handler, and from Python's signal wakeup fd, which
    the interpreter writes the signal's number to in whichever thread the kernel handed the
    signal (any thread of the process may get it; the handler itself runs only once the main
    thread runs Python code again, and a main thread waiting in ``select`` for the next batch
    is not woken by a signal another thread caught). Call on the main thread."""
    if _WATCHDOG:
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # set_wakeup_fd's condition; the handler's byte fits
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)

    def watch() -> None:
        heard: set[int] = set()
        while not heard & {HANDLED, signal.SIGTERM}:  # SIGINT's byte: KeyboardInterrupt's way
            heard |= set(os.read(read_end, 64))
        if HANDLED not in heard and not _handled_within(read_end, HANDLER_WAIT_S):
            # Another thread caught it: the main thread is told, to unwind as on any SIGTERM.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
        time.sleep(TERMINATE_GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="agentkit-terminate", daemon=True).start()
    _WATCHDOG.append(write_end)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentkit",
        description="Serve Podium's agent protocol (docs/agent-protocol.md) for an agent class.",
    )
    parser.add_argument(
        "--agent",
        default=os.environ.get(ENV_AGENT),
        help=f"the agent class as module:Class (default: ${ENV_AGENT})",
    )
    parser.add_argument(
        "--socket-dir",
        default=os.environ.get(ENV_SOCKET_DIR, SOCKET_DIR),
        help=f"directory of agent.sock and search.sock (default: ${ENV_SOCKET_DIR}, {SOCKET_DIR})",
    )
    parser.add_argument(
        "--task", default=os.environ.get(ENV_TASK), help=f"task id (default: ${ENV_TASK})"
    )
    args = parser.parse_args(argv)
    # As PID 1 in a container, SIGTERM is ignored unless handled: exit cleanly on it, even
    # while the agent loads (a load failure is otherwise kept and reported, not raised).
    _start_watchdog()
    signal.signal(signal.SIGTERM, _terminate)
    if not os.path.isdir(args.socket_dir):
        parser.error(f"socket directory {args.socket_dir} does not exist")
    try:
        serve(args.agent, args.socket_dir, args.task)
    except Terminated:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    return 0


if __name__ == "__main__":
    sys.exit(main())
