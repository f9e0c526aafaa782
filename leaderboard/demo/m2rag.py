"""The M2RAG demo challenge: one task on the generated M2RAG sample (ten topics, pages with
images drawn by Pillow and their relevance scores), its two example agents (one placing the
relevant images, one writing text only), judged by the rules judge (offline: the demo calls no
model; an organiser chooses an LLM judge and a vision judge endpoint in the admin)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from evaluator.protocols.m2rag.sample import write_sample
from leaderboard.demo.setup import DemoAgent, _import_splits
from leaderboard.models import Challenge, Split, Task
from leaderboard.publishing import publish

SLUG = "m2rag-demo"
AGENTS = (
    DemoAgent(
        "Image placers",
        "m2rag-images",
        "examples/agents/m2rag-images",
        "places the images whose caption shares the query's words",
    ),
    DemoAgent("Text writers", "m2rag-text", "examples/agents/m2rag-text", "text only"),
)


def sample_dir() -> Path:
    """The M2RAG sample, written once under ``<PODIUM_VAR_DIR>/demo/m2rag``."""
    out = Path(settings.VAR_DIR) / "demo" / "m2rag"
    if not (out / "validation" / "queries.jsonl").exists():
        write_sample(out)
    return out


def challenge(data: Path) -> Challenge:
    """The challenge, its task and its imported split (the sample has a validation split)."""
    found, _ = Challenge.objects.get_or_create(
        slug=SLUG,
        defaults={
            "name": "M2RAG demo",
            "description": "Podium's demo: generated M2RAG-format data (web pages with images "
            "drawn with Pillow) and example agents writing answers that place images.",
        },
    )
    task, _ = Task.objects.get_or_create(
        challenge=found,
        task_id="m2rag",
        defaults={
            "name": "M2RAG: answers interleaving text and images",
            "protocol": Task.Protocol.M2RAG,
            "primary_metric": "overall",
            "image_search_enabled": False,
            "web_search_enabled": False,
            "readiness_s": 120,
            "quota_per_day": None,
            "quota_concurrent": None,
        },
    )
    _import_splits(task, data, kinds=(Split.Kind.VALIDATION,))
    publish(found)
    return found
