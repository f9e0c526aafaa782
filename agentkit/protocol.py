"""Podium's agent protocol: the contract between the runner (host) and an agent container.

Standard library only: this module is imported inside agent images and by ``workers/``.
The full description for participants is ``docs/agent-protocol.md``.

Transport: HTTP/1.1 with JSON bodies over Unix sockets in a directory Podium mounts at
``SOCKET_DIR``; the container has no network at all. Images travel as files: Podium writes the
images of the batch being asked into ``IMAGE_DIR`` (read-only for the agent, named
``<sha256 of the file>.<ext>``) before sending it; they stay there for that batch's call only.

- The agent serves ``AGENT_SOCKET``:
  ``GET /ready`` -> 503 while the agent loads, then 200 ``{"ready": true, "batch_size": n,
  "kit": "A"|"B"|"native", "agentkit_version": str}``.
  ``POST /batch`` with ``{"batch_id", "deadline_s", "turns": [TurnRequest...]}`` ->
  200 ``{"batch_id", "responses": [str, ...]}`` (one per turn, same order), or
  4xx/5xx ``{"error": str}``.
- Podium serves ``SEARCH_SOCKET`` (when the task enables search):
  ``POST /search/image`` with ``{"image_b64": str, "k": int}`` and
  ``POST /search/web`` with ``{"query": str, "k": int}`` -> 200 ``{"results": [...]}`` in the
  official result shapes, or 4xx ``{"error": str}`` (e.g. web search refused in Task 1).

A TurnRequest is ``{"session_id", "interaction_id", "turn_idx", "query",
"image_path": str | null, "message_history": [{"role", "content"}...],
"rag_context": str | null, "domain": str | null}``. ``image_path`` is the absolute path of the
turn's image file (Podium always sends it this way); agentkit also accepts ``"image_b64"``, the
file's bytes in base64, instead (at most one of the two per turn).
"""

from __future__ import annotations

PROTOCOL_VERSION = "3"  # 2: images as files in IMAGE_DIR; 3: "items" for other benchmarks

SOCKET_DIR = "/podium/sock"
AGENT_SOCKET = f"{SOCKET_DIR}/agent.sock"
SEARCH_SOCKET = f"{SOCKET_DIR}/search.sock"
IMAGE_DIR = "/podium/images"

ENV_AGENT = "PODIUM_AGENT"  # "module:Class" of the participant's agent
ENV_TASK = "PODIUM_TASK"  # task id, e.g. "multi-turn-qa"
ENV_SOCKET_DIR = "PODIUM_SOCKET_DIR"  # overrides SOCKET_DIR (tests run agentkit on the host)

READY_PATH = "/ready"
BATCH_PATH = "/batch"
IMAGE_SEARCH_PATH = "/search/image"
WEB_SEARCH_PATH = "/search/web"
CANDIDATE_SEARCH_PATH = "/search/candidates"  # Visual-RAG: among one item's candidates

MIN_BATCH_SIZE = 1
MAX_BATCH_SIZE = 16

TASKS = ("single-source-augmentation", "multi-source-augmentation", "multi-turn-qa")


def clip_batch_size(n: int) -> int:
    """Batch sizes are clipped to 1..16, as in the official evaluator."""
    return max(MIN_BATCH_SIZE, min(MAX_BATCH_SIZE, int(n)))
