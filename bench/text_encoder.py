"""The search service's text encoder on CPU and, where torch sees a GPU, on CUDA, side by side:
texts per second encoding web-page chunks, and how close the two devices' embeddings are.

    python bench/text_encoder.py [--encoder minilm|hf-mean:<dir>] [--chunks 2000] [--cpu-chunks 500]
    python bench/text_encoder.py --under-search-limits [--encoder ...]

The chunks are generated (deterministic, 60 to 400 words, as the chunk policy cuts web pages);
the encoder is the one the search service loads (``workers.search.encoders.text_encoder``), placed
by ``PODIUM_SEARCH_DEVICE``. Parity: the cosine between the CPU and the GPU embedding of each
chunk the CPU encoded (1.0 is identical), and whether the top 10 neighbours of 50 queries among
those chunks are the same on both devices. Prints a Markdown report.

``--under-search-limits``: instead, the limits the search process sets on itself
(``PODIUM_SEARCH_MEMORY_BYTES`` as ``RLIMIT_DATA``, ``PODIUM_SEARCH_NICE``, one maths thread),
then the encoder loaded where ``PODIUM_SEARCH_DEVICE`` says and 100 texts encoded: whether the
memory limit leaves room for the model (and CUDA) to start.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.limits import SearchLimits
from workers.search.encoders import text_encoder
from workers.search.process import apply_own_limits

TOPICS = (
    "the museum opened in 1932 and holds paintings sculptures and a garden with roses",
    "engine horsepower torque top speed kilometres per hour model year price dealer",
    "recipe flour butter sugar oven minutes serve warm nutrition calories protein",
    "species habitat leaves flowers bloom spring native to the mountains of europe",
    "stadium capacity seats team founded league championship season record coach",
)
WORDS = [word for topic in TOPICS for word in topic.split()]


def chunks(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(60, 400))) for _ in range(n)]


def timed_encode(spec: str, device: str, texts: list[str]) -> tuple[np.ndarray, float, float]:
    """Embeddings, load seconds, texts per second (after one warm-up batch)."""
    os.environ["PODIUM_SEARCH_DEVICE"] = device
    started = time.perf_counter()
    encoder = text_encoder(spec)
    loaded = time.perf_counter() - started
    encoder.encode(texts[:32])
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    started = time.perf_counter()
    rows = encoder.encode(texts)
    return rows, loaded, len(texts) / (time.perf_counter() - started)


def top10(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    return np.argsort(-(queries @ rows.T), axis=1)[:, :10]


def under_search_limits(spec: str) -> None:
    limits = SearchLimits.from_environment()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    apply_own_limits(limits)
    started = time.perf_counter()
    try:
        import torch

        encoder = text_encoder(spec)
        rows = encoder.encode(chunks(100))
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        print(f"RLIMIT_DATA {limits.memory_bytes / 2**30:.2f} GiB: failed: {exc!s:.300}")
        return
    device = getattr(encoder, "device", "cpu")
    peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0
    seconds = time.perf_counter() - started
    print(f"RLIMIT_DATA {limits.memory_bytes / 2**30:.2f} GiB: {rows.shape[0]} texts on {device} "
          f"in {seconds:.1f} s from start; GPU memory peak {peak:.0f} MiB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--chunks", type=int, default=2000, help="chunks encoded on the GPU")
    parser.add_argument("--cpu-chunks", type=int, default=500, help="chunks encoded on the CPU")
    parser.add_argument("--under-search-limits", action="store_true")
    args = parser.parse_args()
    if args.under_search_limits:
        under_search_limits(args.encoder)
        return

    import torch

    texts = chunks(max(args.chunks, args.cpu_chunks))
    queries = chunks(50, seed=1)
    cpu_texts = texts[: args.cpu_chunks]
    print(f"encoder `{args.encoder}`, torch {torch.__version__}, {torch.get_num_threads()} CPU "
          f"threads\n")  # fmt: skip
    print("| device | chunks | load s | chunks/s |\n| --- | --- | --- | --- |")
    cpu_rows, load, rate = timed_encode(args.encoder, "cpu", cpu_texts)
    print(f"| cpu | {len(cpu_texts)} | {load:.1f} | {rate:.0f} |")
    if not torch.cuda.is_available():
        print("\nno GPU seen by torch: the CPU figures only")
        return
    gpu_rows, load, gpu_rate = timed_encode(args.encoder, "cuda", texts[: args.chunks])
    print(f"| cuda ({torch.cuda.get_device_name(0)}) | {args.chunks} | {load:.1f} | "
          f"{gpu_rate:.0f} |")  # fmt: skip
    both = min(len(cpu_rows), len(gpu_rows))
    cosines = np.sum(cpu_rows[:both] * gpu_rows[:both], axis=1)
    q_gpu = text_encoder(args.encoder).encode(queries)  # PODIUM_SEARCH_DEVICE is cuda here
    os.environ["PODIUM_SEARCH_DEVICE"] = "cpu"
    q_ref = text_encoder(args.encoder).encode(queries)
    same = np.mean(top10(cpu_rows[:both], q_ref) == top10(gpu_rows[:both], q_gpu))
    print(f"\nGPU/CPU: {gpu_rate / rate:.1f}x the chunks per second; cosine CPU vs GPU over "
          f"{both} chunks: min {cosines.min():.6f}, mean {cosines.mean():.6f}; top-10 "
          f"neighbours of 50 queries identical in {same:.1%} of places; "
          f"GPU memory peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
