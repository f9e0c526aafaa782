"""The search service in its own process: limits applied, runs' sockets, the control channel,
attacks contained in the process, and what the runner sees when the process goes."""

from __future__ import annotations

import base64
import io
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.workers.search.helpers import SMALL_CHUNKS, CorpusFiles, draw_entity, entity_name
from workers.limits import SearchLimits
from workers.outcomes import SearchUnavailable
from workers.search.encoders import ColourImageEncoder
from workers.search.engine import SearchEngine
from workers.search.process import SearchProcess, SearchSocket

TASK1, TASK2 = "single-source-augmentation", "multi-source-augmentation"
LIMITS = SearchLimits(memory_bytes=3 * 1024**3, cpus=0.75, nice=7)


@pytest.fixture(scope="module")
def process(shared_corpus: CorpusFiles, minilm, tmp_path_factory) -> Iterator[SearchProcess]:
    engine = SearchEngine(
        shared_corpus.root,
        text_encoder=minilm,
        image_encoder=ColourImageEncoder(),
        cache_dir=tmp_path_factory.mktemp("process-cache"),
        chunk_policy=SMALL_CHUNKS,
    )
    with SearchProcess(engine.spec, LIMITS) as started:
        yield started


def _client(socket: SearchSocket) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(socket.socket_path))
    return httpx.Client(transport=transport, base_url="http://search", timeout=60)


def _png_b64(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_the_process_runs_under_its_limits(process: SearchProcess, socket_dir: Path) -> None:
    quota = process.cpu_quota
    if quota is not None:  # where cgroups can be written (tests/workers/test_cpu_quota.py)
        assert str(process.pid) in (quota.directory / "cgroup.procs").read_text().split()
        assert quota.cpus == LIMITS.cpus
    with process.serve(socket_dir / "search.sock", TASK1):
        limits = Path(f"/proc/{process.pid}/limits").read_text()
        data = next(line for line in limits.splitlines() if line.startswith("Max data size"))
        assert data.split()[3:5] == [str(LIMITS.memory_bytes)] * 2
        assert os.getpriority(os.PRIO_PROCESS, process.pid) == LIMITS.nice
        environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        assert b"OMP_NUM_THREADS=1" in environ
        assert process.pid != os.getpid()


def test_runs_get_sockets_of_their_own_and_their_batch_allowance(
    process: SearchProcess, socket_dir: Path
) -> None:
    first = process.serve(socket_dir / "a.sock", TASK2)
    second = process.serve(socket_dir / "b.sock", TASK1)
    with first, second, _client(first) as one, _client(second) as two:
        reply = one.post("/search/web", json={"query": f"{entity_name(8)} first made", "k": 2})
        assert reply.status_code == 200 and reply.json()["results"]
        assert two.post("/search/web", json={"query": "x"}).status_code == 403  # task 1
        image = {"image_b64": _png_b64(draw_entity(5)), "k": 1}
        assert two.post("/search/image", json=image).json()["results"][0]["index"] == 5
        first.allow(2)  # run one's batch: two searches; run two is not touched
        codes = [one.post("/search/image", json=image).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        assert {two.post("/search/image", json=image).status_code for _ in range(3)} == {200}
        first.allow(None)
        assert one.post("/search/image", json=image).status_code == 200
    assert not (socket_dir / "a.sock").exists() and not (socket_dir / "b.sock").exists()
    with pytest.raises(SearchUnavailable, match="unknown task"):
        process.serve(socket_dir / "c.sock", "task-9")


def test_rag_context_is_computed_in_the_process(
    process: SearchProcess, shared_corpus: CorpusFiles, tmp_path: Path
) -> None:
    image_path = tmp_path / "query.png"
    draw_entity(3).save(image_path)
    context = process.rag_context(f"what brand is the {entity_name(3)}?", str(image_path), TASK2)
    assert context.startswith("<search results>") and entity_name(3) in context
    with pytest.raises(SearchUnavailable, match=r"rag: .*No such file"):
        process.rag_context("q", str(tmp_path / "missing.png"), TASK2)


def test_a_search_bomb_costs_the_runner_nothing_and_the_process_little(
    process: SearchProcess, socket_dir: Path
) -> None:
    """Connections beyond the cap and pictures that decode to 23 megapixels, from 24 threads:
    the runner (this process) does not grow; the search process stays within 300 MB of what
    honest searches took, and serves honest searches again afterwards."""
    honest = {"image_b64": _png_b64(draw_entity(2)), "k": 3}
    bomb_picture = Image.new("RGB", (4800, 4800), (200, 30, 30))  # 23 MP, a few kB as PNG
    bomb = {"image_b64": _png_b64(bomb_picture), "k": 5}
    with process.serve(socket_dir / "search.sock", TASK1) as socket, _client(socket) as client:
        for _ in range(5):
            assert client.post("/search/image", json=honest).status_code == 200
        runner_before, process_before = _rss_bytes(os.getpid()), _rss_bytes(process.pid)
        peak, stop = [process_before], threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak.append(_rss_bytes(process.pid))
                time.sleep(0.02)

        def attack(_: int) -> set[int]:
            with _client(socket) as own:
                return {own.post("/search/image", json=bomb).status_code for _ in range(3)}

        watcher = threading.Thread(target=watch)
        watcher.start()
        with ThreadPoolExecutor(24) as pool:
            codes = set().union(*pool.map(attack, range(24)))
        stop.set()
        watcher.join()
        assert codes <= {200, 503} and 200 in codes
        assert _rss_bytes(os.getpid()) - runner_before < 40 * 1024**2
        assert max(peak) - process_before < 300 * 1024**2
        assert client.post("/search/image", json=honest).json()["results"][0]["index"] == 2


def test_a_stopped_process_is_reported_not_hidden(
    shared_corpus: CorpusFiles, socket_dir: Path, tmp_path: Path
) -> None:
    engine = SearchEngine(shared_corpus.root, image_encoder="colour", cache_dir=tmp_path)
    process = SearchProcess(engine.spec, LIMITS)
    socket = process.serve(socket_dir / "search.sock", TASK1)
    os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(SearchUnavailable, match=r"stopped \(killed by signal 9\)"):
        socket.allow(3)
    socket.close()  # the runner's clean-up still works
    assert not socket.socket_path.exists()
    process.close()


def test_the_child_exits_when_its_parent_goes(shared_corpus: CorpusFiles, tmp_path: Path) -> None:
    engine = SearchEngine(shared_corpus.root, image_encoder="colour", cache_dir=tmp_path)
    process = SearchProcess(engine.spec, LIMITS)
    process.call({"op": "ping"})
    process._stdin.close()  # what the parent's death does to the pipe
    process._child.wait(10)
    assert not process.alive


def test_a_bad_corpus_or_limit_is_a_clear_error(
    tmp_path: Path, socket_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "images.jsonl").write_text('{"image": "images/none.png"}\n')
    (tmp_path / "corpus" / "web.jsonl").write_text("")
    engine = SearchEngine(tmp_path / "corpus", image_encoder="colour", cache_dir=tmp_path)
    with (
        SearchProcess(engine.spec, LIMITS) as process,
        pytest.raises(SearchUnavailable, match=r"search process: serve: .*images\.jsonl"),
    ):
        process.serve(socket_dir / "search.sock", TASK1)
    monkeypatch.setenv("PODIUM_SEARCH_MEMORY_BYTES", "lots")
    with pytest.raises(ValueError, match="PODIUM_SEARCH_MEMORY_BYTES='lots' is not a whole"):
        SearchLimits.from_environment()
    monkeypatch.setenv("PODIUM_SEARCH_MEMORY_BYTES", "1000000000")  # torch fails under it
    with pytest.raises(ValueError, match="MEMORY_BYTES=1000000000 is below the least"):
        SearchLimits.from_environment()
    monkeypatch.setenv("PODIUM_SEARCH_MEMORY_BYTES", "3000000000")
    monkeypatch.setenv("PODIUM_SEARCH_CPUS", "0")
    with pytest.raises(ValueError, match=r"PODIUM_SEARCH_CPUS=0\.0 is below the least allowed"):
        SearchLimits.from_environment()
    monkeypatch.setenv("PODIUM_SEARCH_CPUS", "1.5")
    assert SearchLimits.from_environment() == SearchLimits(3_000_000_000, 1.5, 10)
