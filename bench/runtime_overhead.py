"""What Podium's agent runtime costs: per-turn overhead, its share for a 100 ms agent, start-up.

Runs real containers under the default sandbox policy through ``workers.runner.run_agent``:

1. the zero-work example agent (``examples/agents/zero-work``: batch size 16, answers "" at
   once) on a split of ``--turns`` single-turn conversations, each with its own
   ``--image-size`` JPEG: everything measured is harness (runner, images written to the
   container's image directory, HTTP over the Unix socket, agentkit opening the image files,
   sink). Per-turn overhead = batch-loop time / turns, the loop timed from the container's
   /ready saying ready (the run's set-up before, once per run, is start-up: step 4) to the
   last batch's results at the sink.
2. the same agent taking 100 ms per batch, two ways: sleeping (its CPU idles, as while a GPU
   computes) and busy (spinning on its CPU). Overhead share = (loop time - agent time) / loop
   time, where the agent time is what the agent measured inside ``batch_generate_response``
   (``perf_counter``; printed to its log), so a sleep's overshoot counts as the agent's.
   Steps 1 and 2 run ``--repeat`` times, the three agents in turn; each figure is the median
   (and the range) over the repeats.
3. where one 16-turn batch's time goes: the runner staging the batch's images (read, hash,
   write to a hidden directory of the image volume: in a real run, while the agent answers the
   batch before), the runner showing them and building the body, agentkit's own time
   (``elapsed_s`` in its reply), and the rest (transport, HTTP, parsing the reply).
4. container start to ready (create the socket and image volumes and the container, start it,
   /ready says ready), ``--starts`` times.

Steps 1, 2 and 4 run under each of ``--runtimes`` in turn (``workers.runtimes``: runc, runsc),
so their figures compare side by side in one run; step 3 under the engine's default.

    python bench/runtime_overhead.py [--turns 1024] [--repeat 5] [--starts 5]
                                     [--image-size 960x1280] [--drawn] [--runtimes runc,runsc]
                                     [--base-image podium/agent-base:py3.11]
                                     [--tag-prefix podium-bench]

On an engine shared with others, build the agent base image under a tag of your own
(``AGENT_BASE_IMAGE=<tag> bash deploy/agent-base/build.sh``), name it with ``--base-image``, and
give a ``--tag-prefix`` of your own: the bench's agents are built from it, tagged
``<prefix>/zero-work:latest`` etc., and removed at the end.
"""

from __future__ import annotations

import argparse
import functools
import io
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
from PIL import Image, ImageDraw, ImageFilter

REPO = Path(__file__).resolve().parent.parent
TASK = "single-source-augmentation"
sys.path.insert(0, str(REPO))

from evaluator.benchmarks.crag_mm.agent import TurnPlan  # noqa: E402
from evaluator.benchmarks.crag_mm.records import Conversation, Split, Turn  # noqa: E402
from evaluator.seam.agent_plan import RequestContext  # noqa: E402
from workers.agent_client import encode_batch  # noqa: E402
from workers.agent_container import AgentContainer  # noqa: E402
from workers.builds import build_context  # noqa: E402
from workers.image_volume import read_image  # noqa: E402
from workers.images import AgentImage  # noqa: E402
from workers.limits import Limits  # noqa: E402
from workers.runner import run_agent  # noqa: E402
from workers.runtimes import check  # noqa: E402
from workers.sandbox import SandboxPolicy  # noqa: E402

WORK_S = 0.1
TIMED = f"""
import time
from agent import ZeroWorkAgent


class SleepingAgent(ZeroWorkAgent):
    def batch_generate_response(self, queries, images, message_histories):
        started = time.perf_counter()
        self.work(started)
        print(f"work {{time.perf_counter() - started:.6f}}", flush=True)
        return super().batch_generate_response(queries, images, message_histories)

    def work(self, started):
        time.sleep({WORK_S})


class BusyAgent(SleepingAgent):
    def work(self, started):
        while time.perf_counter() - started < {WORK_S}:
            pass
"""


class Truncator:
    name = "identity"

    def truncate(self, text: str) -> str:
        return text


BASE_IMAGE = "podium/agent-base:py3.11"


def dockerfile(agent: str, base_image: str) -> str:
    """The bench's Dockerfile for the zero-work example's ``agent`` (``module:Class``)."""
    return f"FROM {base_image}\nCOPY . /agent\nENV PODIUM_AGENT={agent}\n"


def build(
    directory: Path,
    tag: str,
    extra: dict[str, str],
    workdir: Path,
    base_image: str = BASE_IMAGE,
) -> AgentImage:
    tarball = workdir / f"{tag.replace('/', '-').replace(':', '-')}.tar"
    with tarfile.open(tarball, "w") as tar:
        for path in sorted(directory.iterdir()):
            if path.name not in extra:  # one Dockerfile: the one given in extra, if any
                tar.add(path, arcname=path.name)
        for name, text in extra.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return build_context(tarball, base_images=(base_image,), tag=tag, timeout_s=600)


def make_split(
    root: Path, turns: int, size: tuple[int, int], photos: bool = True
) -> tuple[Split, int]:
    """``turns`` single-turn conversations, each with its own JPEG: photo-like (camera noise,
    about 270 KB at 960x1280, so reading it costs what a real photo does) or, with
    ``photos=False``, flat drawn shapes (about 60 KB)."""
    (root / "images").mkdir(parents=True)
    grain = Image.effect_noise(size, 50).convert("RGB")
    conversations = []
    image_bytes = 0
    for i in range(turns):
        picture = Image.new("RGB", size, ((37 * i) % 256, 90, 160))
        draw = ImageDraw.Draw(picture)
        for k in range(40):
            box = ((k * 53 + i) % size[0], (k * 97) % size[1])
            draw.ellipse((*box, box[0] + 120, box[1] + 90), fill=((k * 31) % 256, i % 256, 200))
        if photos:
            picture = Image.blend(grain, picture, 0.5).filter(ImageFilter.GaussianBlur(0.8))
        path = root / "images" / f"{i}.jpg"
        picture.save(path, format="JPEG", quality=85)
        image_bytes += path.stat().st_size
        turn = Turn(f"t{i}", f"What is the brand of this vehicle number {i}?", "unused")
        conversations.append(Conversation(f"c{i}", f"images/{i}.jpg", None, (turn,)))
    return Split(root=root, conversations=conversations), image_bytes // turns


def batch_loop_s(
    image: AgentImage, split: Split, policy: SandboxPolicy | None = None, timed_agent: bool = True
) -> tuple[float, float, int, int]:
    """(seconds from ready to the last answer, seconds the agent says it worked, turns,
    batches) for one run; a ``timed_agent`` logs its work per batch."""
    arrivals: list[float] = []
    report = run_agent(
        image,
        TurnPlan(split, TASK, Truncator().truncate),
        TASK,
        Limits(),
        lambda results: arrivals.append(time.monotonic()),
        policy=policy,
        client=engine(),
    )
    if report.status != "completed" or report.restarts:
        raise SystemExit(
            f"run failed or restarted ({report.restarts} restarts, {report.runtime}): "
            f"{report.failure_reason}; the agent's output ends: {report.agent_log[-1500:]}"
        )
    batches = -(-len(report.items) // report.batch_size)
    loop = arrivals[-1] - READY_AT[-1]  # not the run's set-up before the container starts
    worked = [
        float(line.split()[1]) for line in report.agent_log.splitlines() if line[:5] == "work "
    ]
    if timed_agent and len(worked) != batches:
        raise SystemExit(f"the agent logged {len(worked)} batches of work, not {batches}")
    return loop, sum(worked), len(report.items), batches


READY_AT: list[float] = []  # when each agent container said it was ready
_wait_ready = AgentContainer.wait_ready


def _timed_wait_ready(self: AgentContainer, deadline: float) -> Any:
    readiness = _wait_ready(self, deadline)
    READY_AT.append(time.monotonic())
    return readiness


AgentContainer.wait_ready = _timed_wait_ready  # type: ignore[method-assign]


@functools.cache
def engine() -> docker.DockerClient:
    """The bench's one client of the Docker engine."""
    return docker.from_env()


def breakdown_ms(image: AgentImage, split: Split) -> tuple[float, float, float, float]:
    """Per batch of the zero-work agent: (runner staging the images: read, hashed, written to a
    hidden directory; runner showing them and building the body; agentkit's own time from its
    reply's elapsed_s; the rest of the call: transport, HTTP, parsing the reply)."""
    stage = show = call = server = 0.0
    count = 0
    plan = TurnPlan(split, TASK, Truncator().truncate)
    with AgentContainer(
        engine(),
        image.image_id,
        TASK,
        SandboxPolicy(),
        image_dir_bytes=plan.volume_bytes(16),
    ) as box:
        box.wait_ready(time.monotonic() + 60)
        assert box.agent is not None and box.images is not None
        for batch in plan.batches(16, ()):
            started = time.perf_counter()
            staged = box.images.stage(
                [[read_image(path) for path in plan.image_files(ref)] for ref in batch]
            )
            staging_done = time.perf_counter()
            image_paths = box.images.show(staged)
            fields = plan.requests(batch, image_paths, RequestContext("A"))
            body = encode_batch(str(count), 160.0, fields)
            sent = time.perf_counter()
            reply = box.agent.batch(body, 160.0)
            call += time.perf_counter() - sent
            box.images.answered()
            stage += staging_done - started
            show += sent - staging_done
            server += reply.body["elapsed_s"]
            count += 1
    return tuple(1000 * t / count for t in (stage, show, server, call - server))


def spread(values: list[float], digits: int) -> str:
    """``median (min-max)`` of ``values``."""
    return (
        f"{statistics.median(values):.{digits}f} "
        f"({min(values):.{digits}f}-{max(values):.{digits}f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1024)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--image-size", default="960x1280")
    parser.add_argument(
        "--drawn", action="store_true", help="flat drawn JPEGs (~60 KB) instead of photo-like"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs of each agent (median shown)")
    parser.add_argument("--base-image", default=BASE_IMAGE, help="the agents' base image")
    parser.add_argument("--tag-prefix", default="podium-bench", help="the agents' image tags")
    parser.add_argument(
        "--runtimes",
        default="runc",
        help="OCI runtimes measured side by side, comma-separated (runc,runsc)",
    )
    args = parser.parse_args()
    base, prefix = args.base_image, args.tag_prefix
    size = tuple(int(v) for v in args.image_size.split("x"))
    client = engine()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        zero = build(
            REPO / "examples/agents/zero-work",
            f"{prefix}/zero-work:latest",
            {"Dockerfile": dockerfile("agent:ZeroWorkAgent", base)},
            workdir,
            base,
        )
        timed = {
            kind: build(
                REPO / "examples/agents/zero-work",
                f"{prefix}/{kind.lower()}:latest",
                {"timed.py": TIMED, "Dockerfile": dockerfile(f"timed:{kind}Agent", base)},
                workdir,
                base,
            )
            for kind in ("Sleeping", "Busy")
        }
        split, mean_image = make_split(workdir / "split", args.turns, size, not args.drawn)
        print(f"split: {args.turns} turns, JPEG {size[0]}x{size[1]}, mean {mean_image} bytes")

        policies = {rt: SandboxPolicy(runtime=check(rt)) for rt in args.runtimes.split(",")}
        per_turn: dict[str, list[float]] = {rt: [] for rt in policies}
        shares = {(rt, kind): list[float]() for rt in policies for kind in timed}
        per_batch = {(rt, kind): list[float]() for rt in policies for kind in timed}
        for _ in range(args.repeat):  # agents and runtimes in turn, so noise hits them alike
            for rt, policy in policies.items():
                loop, _, turns, batches = batch_loop_s(zero, split, policy, timed_agent=False)
                per_turn[rt].append(1000 * loop / turns)
                for kind, image in timed.items():
                    loop, work, _, _ = batch_loop_s(image, split, policy)
                    shares[rt, kind].append(100 * (loop - work) / loop)
                    per_batch[rt, kind].append(1000 * (loop - work) / batches)
        for rt in policies:
            print(
                f"[{rt}] zero-work: {turns} turns in {batches} batches, "
                f"{spread(per_turn[rt], 3)} ms per turn (goal <= 2 ms)"
            )
            for kind in timed:
                print(
                    f"[{rt}] 100 ms per batch, {kind.lower()}: overhead "
                    f"{spread(per_batch[rt, kind], 2)} ms per batch = "
                    f"{spread(shares[rt, kind], 2)} % of the batch loop (goal <= 5 %)"
                )

        stage, show, server, rest = breakdown_ms(zero, split)
        print(
            f"one 16-turn batch: runner stages {stage:.2f} ms (ahead, while the agent works), "
            f"shows + builds the body {show:.2f} ms, agentkit {server:.2f} ms, "
            f"transport + HTTP + reply {rest:.2f} ms"
        )

        tiny = Split(root=split.root, conversations=split.conversations[:1])
        starts: dict[str, list[float]] = {rt: [] for rt in policies}
        for _ in range(args.starts):
            for rt, policy in policies.items():
                plan = TurnPlan(tiny, TASK, Truncator().truncate)
                report = run_agent(zero, plan, TASK, Limits(), lambda _: None, policy=policy)
                assert report.start_to_ready_s is not None, report.failure_reason
                starts[rt].append(report.start_to_ready_s)
        for rt in policies:
            print(
                f"[{rt}] start to ready over {args.starts} starts: median "
                f"{statistics.median(starts[rt]):.3f} s, min {min(starts[rt]):.3f} s, "
                f"max {max(starts[rt]):.3f} s"
            )
    for name in ("zero-work", "sleeping", "busy"):
        client.images.remove(f"{prefix}/{name}:latest", noprune=False)


if __name__ == "__main__":
    main()
