"""Importing a Visual-RAG split: both layouts, through the task's benchmark, and the refusals."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from evaluator.benchmarks.visual_rag.sample import write_released
from leaderboard.models import Split, Task

TASK = "crag-mm-2026/visual-rag"


@pytest.fixture
def visual_task(challenge) -> Task:
    return Task.objects.create(
        challenge=challenge,
        task_id="visual-rag",
        name="Visual-RAG",
        benchmark="visual-rag",
        primary_metric="accuracy",
    )


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, visual_rag_sample: Path) -> Path:
    """The shared sample's validation split in both layouts."""
    root = tmp_path_factory.mktemp("vr")
    (root / "validation").symlink_to(visual_rag_sample / "validation")
    write_released(visual_rag_sample / "validation", root / "released")
    return root


def import_split(directory: Path, *extra: str) -> str:
    out = io.StringIO()
    call_command("import_split", str(directory), "--task", TASK, *extra, stdout=out)
    return out.getvalue()


def bundle_names(split: Split) -> list[str]:
    with split.bundle.open("rb") as handle, tarfile.open(fileobj=io.BytesIO(handle.read())) as tar:
        return sorted(tar.getnames())


@pytest.mark.django_db
def test_both_layouts_import_with_every_candidate_image(visual_task, sample: Path) -> None:
    output = import_split(sample / "validation", "--kind", "validation", "--protocol", "visual-rag")
    split = Split.objects.get(task=visual_task, kind="validation")
    assert "7 species, 28 queries" in output
    assert (split.groups, split.items) == (7, 28)
    names = bundle_names(split)
    assert "queries.jsonl" in names and len(names) > 28
    assert all(name.startswith("images/") for name in names if name != "queries.jsonl")
    import_split(sample / "released", "--kind", "public-test")
    released = Split.objects.get(task=visual_task, kind="public-test")
    assert (released.groups, released.items) == (7, 28)
    assert "v1_anno.jsonl" in bundle_names(released)
    assert len(bundle_names(released)) == len(names)


@pytest.mark.django_db
def test_a_broken_split_is_refused_naming_file_line_and_field(
    visual_task, sample: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "images").symlink_to(sample / "released" / "images")
    lines = (sample / "released" / "v1_anno.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["images"] = {guid: 0 for guid in record["images"]}  # no clue image
    lines[1] = json.dumps(record)
    (broken / "v1_anno.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match=r"v1_anno\.jsonl:2.*clue"):
        import_split(broken, "--kind", "validation")
    assert not Split.objects.filter(task=visual_task).exists()


@pytest.mark.django_db
def test_the_benchmark_named_must_be_the_tasks(visual_task, sample: Path) -> None:
    with pytest.raises(CommandError, match="is a visual-rag task, not crag-mm"):
        import_split(sample / "validation", "--kind", "validation", "--protocol", "crag-mm")
    with pytest.raises(CommandError, match="no Hugging Face splits"):
        import_split(sample / "validation", "--kind", "validation", "--hf-split", "x")


@pytest.mark.django_db
def test_a_visual_rag_task_cannot_turn_on_a_search_it_does_not_have(challenge) -> None:
    task = Task(challenge=challenge, task_id="v", name="v", benchmark="visual-rag")
    task.primary_metric = "accuracy"
    with pytest.raises(ValidationError) as refused:
        task.clean()
    assert set(refused.value.message_dict) == {"web_search_enabled"}
    assert "search only their items' candidate images" in str(refused.value)
    task.web_search_enabled = False
    task.clean()  # image search: among each query's candidates
    task.image_search_enabled = False
    task.clean()
    assert task.run_settings() == ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_5")
