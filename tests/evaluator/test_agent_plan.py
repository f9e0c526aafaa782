"""The benchmarks' agent plans: what the runner asks, in which order, and how replies are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from evaluator.benchmarks.crag_mm.records import Conversation, Split, Turn
from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.agent import MAX_IMAGE_ID_CHARS, MAX_RANKING, SettingPlan
from evaluator.benchmarks.visual_rag.items import VisualSplit
from evaluator.records import EvaluatorError
from evaluator.seam.agent_plan import MARGIN_BYTES, BatchRefused, RequestContext, cap_text


@pytest.fixture(scope="module")
def visual(visual_rag_sample: Path) -> VisualSplit:
    return VisualRAG().load_split(visual_rag_sample / "validation")


def crag_split(root: Path, sizes: dict[str, int]) -> Split:
    """Conversations c0, c1, ... with images of ``sizes`` bytes (name -> size)."""
    conversations = []
    for i, (name, size) in enumerate(sizes.items()):
        (root / name).write_bytes(b"x" * size)
        turns = tuple(Turn(f"c{i}-t{j}", f"q{i}{j}", "gold") for j in range(2))
        conversations.append(Conversation(f"c{i}", name, None, turns))
    return Split(root=root, conversations=conversations)


def test_cap_text_cuts_on_a_character_boundary_and_replaces_what_is_not_utf8() -> None:
    assert cap_text("é" * 10, 5) == "éé"
    assert cap_text("a\udcffb\x00", 100) == "a?b\ufffd"


def test_the_turn_plan_sizes_the_image_directory_for_three_batches_of_the_largest(
    tmp_path: Path,
) -> None:
    split = crag_split(tmp_path, {"a": 10, "b": 5000, "c": 4096, "d": 1, "e": 1})
    plan = TurnPlan(split, "multi-turn-qa", str)
    # per turn its conversation's image; three batches of one (the one answered last, the one
    # shown, the one staged ahead): the three largest turns (b, b, then one of a page)
    assert plan.volume_bytes(1) == 8192 + 8192 + 4096 + MARGIN_BYTES
    # never more than every image once: 8192 + 4096 + 4096 + 4096 + 4096
    assert plan.volume_bytes(16) == 8192 + 4 * 4096 + MARGIN_BYTES
    (tmp_path / "d").unlink()
    with pytest.raises(FileNotFoundError):
        plan.volume_bytes(16)


def test_the_turn_plan_refuses_a_reply_that_is_not_text_and_caps_answers(tmp_path: Path) -> None:
    split = crag_split(tmp_path, {"a": 10})
    plan = TurnPlan(split, "multi-turn-qa", lambda text: text[:3])
    (batch,) = list(plan.batches(16, ()))[:1]
    with pytest.raises(BatchRefused, match="every response must be a string"):
        plan.read_replies(batch, [2], 100)
    (reply,) = plan.read_replies(batch, ["ééé"], 4)
    assert reply.text == "éé" and reply.problem is None
    plan.remember(batch[0], "a long answer")
    second = next(iter(plan.batches(16, {"c0-t0"})))
    body = plan.requests(second, [["/podium/images/x/a"]], RequestContext("A"))
    history = body["turns"][0]["message_history"]
    assert history[1] == {"role": "assistant", "content": "a l"}  # truncated, as official
    assert body["turns"][0]["image_path"] == "/podium/images/x/a"


def test_the_turn_plan_truncates_only_the_answers_a_later_turn_shows(tmp_path: Path) -> None:
    """The official truncation runs between two batches, while the agent waits: never for a
    conversation's last turn (no history shows it), on a resume as during a run."""
    split = crag_split(tmp_path, {"a": 10})
    truncated: list[str] = []

    def truncate(text: str) -> str:
        truncated.append(text)
        return text[:3]

    plan = TurnPlan(split, "multi-turn-qa", truncate, {"c0-t0": "first", "c0-t1": "last"})
    assert truncated == ["first"]
    first, last = (ref for batch in plan.batches(1, ()) for ref in batch)
    plan.remember(last, "the last answer")
    plan.remember(first, "the first answer")
    assert truncated == ["first", "the first answer"]
    body = plan.requests([last], [[]], RequestContext("A"))
    assert body["turns"][0]["message_history"][1]["content"] == "the"


def test_an_unknown_task_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown task"):
        TurnPlan(crag_split(tmp_path, {"a": 1}), "visual-rag", str)


def test_a_setting_plan_asks_every_query_once_in_order_and_resumes(visual: VisualSplit) -> None:
    plan = SettingPlan(visual, "gt_clue")
    keys = plan.keys()
    assert keys == [f"gt_clue/{q.query_id}" for q in visual.queries]
    asked = [plan.key(ref) for batch in plan.batches(5, ()) for ref in batch]
    assert asked == keys and next(len(b) for b in plan.batches(5, ())) == 5
    rest = [plan.key(ref) for batch in plan.batches(5, set(keys[:7])) for ref in batch]
    assert rest == keys[7:]
    ref = next(iter(plan.batches(1, ())))[0]
    assert plan.place(ref) == ("gt_clue", 0)


def test_a_setting_plan_sends_given_images_and_candidates_by_path(visual: VisualSplit) -> None:
    retrieval = SettingPlan(visual, "retrieval")
    item = next(iter(retrieval.batches(1, ())))[0]
    files = retrieval.image_files(item)
    query = visual.queries[0]
    assert [visual.image_path(i) for i in query.candidates] == list(files)
    paths = [f"/podium/images/1/{i}.png" for i in range(len(files))]
    body = retrieval.requests([item], [paths], RequestContext("items"))
    sent = body["items"][0]
    assert body["protocol"] == "visual-rag" and sent["images"] == []
    assert [c["id"] for c in sent["candidates"]] == list(query.candidates)
    assert [c["path"] for c in sent["candidates"]] == paths
    assert not any(answer in json.dumps(body) for answer in query.answers)  # no gold
    one_in = SettingPlan(visual, "one_in_3")
    item = next(iter(one_in.batches(1, ())))[0]
    assert len(one_in.image_files(item)) == 3 and item.candidates == ()


def test_a_setting_plan_keeps_replies_as_predictions_and_names_problems(
    visual: VisualSplit,
) -> None:
    plan = SettingPlan(visual, "retrieval")
    batch = next(iter(plan.batches(3, ())))
    long_id = "x" * 5000
    replies = plan.read_replies(
        batch,
        [{"answer": "red", "ranking": ["a", long_id]}, {"answer": "red"}, "not an object"],
        64 * 1024,
    )
    assert json.loads(replies[0].text) == {
        "answer": "red",
        "ranking": ["a", "x" * MAX_IMAGE_ID_CHARS],
    }
    assert replies[0].problem is None
    assert replies[1].problem == "the retrieval setting needs a ranking"
    assert replies[2].problem == "the response is not an object {answer, ranking}"
    assert json.loads(replies[2].text) == {"answer": "", "ranking": []}
    benchmark = VisualRAG(("retrieval",))
    stored = benchmark.stored_prediction(visual, plan.key(batch[0]), replies[0].text)
    assert stored.answer == "red" and stored.ranking == ("a", "x" * MAX_IMAGE_ID_CHARS)


def test_the_setting_plan_volume_never_exceeds_every_image(visual: VisualSplit) -> None:
    plan = SettingPlan(visual, "retrieval")
    every = sum(-(-visual.image_path(i).stat().st_size // 4096) * 4096 for i in visual.images)
    assert plan.volume_bytes(16) <= every + MARGIN_BYTES
    biggest = max(
        sum(-(-p.stat().st_size // 4096) * 4096 for p in set(plan.image_files(ref)))
        for batch in plan.batches(1, ())
        for ref in batch
    )
    assert plan.volume_bytes(1) >= biggest + MARGIN_BYTES


def test_a_benchmark_runs_one_setting_at_a_time(visual: VisualSplit) -> None:
    benchmark = VisualRAG.from_settings({"evaluated": ["gt_clue", "zero_shot"]})
    assert benchmark.run_settings() == ("gt_clue", "zero_shot")
    with pytest.raises(EvaluatorError, match="one setting"):
        benchmark.agent_plan(visual, "t", {})
    with pytest.raises(EvaluatorError, match="not evaluated here"):
        benchmark.for_setting("one_in_5")
    run = benchmark.for_setting("zero_shot")
    assert run.split_keys(visual) == run.agent_plan(visual, "t", {}).keys()


def test_a_huge_reply_is_stored_bounded(visual: VisualSplit) -> None:
    """Rankings are scored at k <= 30: an agent sending 5000 long ids stores 100 short ones."""
    plan = SettingPlan(visual, "retrieval")
    batch = next(iter(plan.batches(1, ())))
    (reply,) = plan.read_replies(batch, [{"answer": "x", "ranking": ["y" * 9000] * 5000}], 1)
    stored = json.loads(reply.text)
    assert len(stored["ranking"]) == MAX_RANKING and reply.problem is None
    assert len(reply.text.encode()) < MAX_RANKING * (MAX_IMAGE_ID_CHARS + 4) + 100
