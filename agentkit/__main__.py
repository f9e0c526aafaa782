"""``python -m agentkit``: serve Podium's agent protocol for the agent class in ``PODIUM_AGENT``."""

from __future__ import annotations

import argparse
import os
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
    os.write(_watchdog_pipe(), b"T")
    raise Terminated(signum)


_WATCHDOG: list[int] = []  # the write end of the watchdog's pipe, once started


def _watchdog_pipe() -> int:
    return _WATCHDOG[0]


def _start_watchdog() -> None:
    """A thread that ends the process ``TERMINATE_GRACE_S`` after SIGTERM, whatever else runs."""
    if _WATCHDOG:
        return
    read_end, write_end = os.pipe()

    def watch() -> None:
        os.read(read_end, 1)
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
