"""Where a 100 ms agent's per-batch overhead goes, batch by batch (medians):

- the runner's gap between two batch calls (recording the answers, the next request);
- the call beyond agentkit's own ``elapsed_s`` (transport, HTTP, waking the threads that
  wait on both ends of the socket);
- agentkit's ``elapsed_s`` beyond the agent's work (reading and opening the batch's images,
  handing the batch to the main thread, the reply).

Real containers under the default sandbox, the sleeping agent of ``runtime_overhead.py``.

    python bench/batch_breakdown.py [--turns 512] [--repeat 3]
                                    [--base-image podium/agent-base:py3.11]
                                    [--tag-prefix podium-bench]

(``--base-image`` and ``--tag-prefix`` as for ``runtime_overhead.py``.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import runtime_overhead as ro  # noqa: E402

from workers import agent_client  # noqa: E402

CALLS: list[tuple[float, float, float]] = []  # per batch call: sent, answered, elapsed_s
_batch = agent_client.AgentClient.batch


def _timed_batch(self: Any, body: bytes, timeout_s: float, *args: Any, **kwargs: Any) -> Any:
    sent = time.monotonic()
    reply = _batch(self, body, timeout_s, *args, **kwargs)
    CALLS.append((sent, time.monotonic(), float(reply.body["elapsed_s"])))
    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base-image", default=ro.BASE_IMAGE, help="the agent's base image")
    parser.add_argument("--tag-prefix", default="podium-bench", help="the agent's image tag")
    args = parser.parse_args()
    agent_client.AgentClient.batch = _timed_batch  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        image = ro.build(
            ro.REPO / "examples/agents/zero-work",
            f"{args.tag_prefix}/sleeping:latest",
            {
                "timed.py": ro.TIMED,
                "Dockerfile": ro.dockerfile("timed:SleepingAgent", args.base_image),
            },
            workdir,
            args.base_image,
        )
        split, _ = ro.make_split(workdir / "split", args.turns, (960, 1280))
        for _ in range(args.repeat):
            CALLS.clear()
            loop, work, _, batches = ro.batch_loop_s(image, split)
            gaps = [CALLS[i + 1][0] - CALLS[i][1] for i in range(len(CALLS) - 1)]
            beyond = [answered - sent - elapsed for sent, answered, elapsed in CALLS]
            agentkit = statistics.median(elapsed for _, _, elapsed in CALLS) - work / batches
            print(
                f"overhead {1000 * (loop - work) / batches:.2f} ms per batch: runner gap "
                f"{1000 * statistics.median(gaps):.2f} ms, call beyond agentkit "
                f"{1000 * statistics.median(beyond):.2f} ms, agentkit beyond the work "
                f"{1000 * agentkit:.2f} ms"
            )


if __name__ == "__main__":
    main()
