"""Podium's split format: loading, every kind of bad input, writing."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.records import Conversation, Turn
from evaluator.benchmarks.crag_mm.split import RESERVED_LABELS, write_split
from evaluator.records import EvaluatorError


def jpeg_bytes(color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), color).save(buffer, "JPEG")
    return buffer.getvalue()


def record(session_id: str = "s1", turns: int = 1, image: str | None = "images/a.jpg") -> dict:
    return {
        "session_id": session_id,
        "image": image,
        "image_url": None,
        "turns": [
            {
                "interaction_id": f"{session_id}-{i}",
                "query": f"question {i}?",
                "domain": "vehicle",
                "query_category": "simple-knowledge",
                "dynamism": "static",
                "image_quality": "blurred",
                "entity_popularity": "tail",
            }
            for i in range(turns)
        ],
        "answers": [
            {"interaction_id": f"{session_id}-{i}", "ans_full": f"answer {i}"} for i in range(turns)
        ],
    }


def make_split(root: Path, lines: list, images: tuple[str, ...] = ("a.jpg",)) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    for name in images:
        (root / "images" / name).write_bytes(jpeg_bytes())
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    (root / "sessions.jsonl").write_text(text, encoding="utf-8")
    return root


def test_loads_conversations_turns_labels_and_ground_truth(tmp_path: Path) -> None:
    web = record("s2", turns=3, image=None) | {"image_url": "https://example.org/p.jpg"}
    split = load_split(make_split(tmp_path, [record("s1"), "", web]))
    assert [c.session_id for c in split.conversations] == ["s1", "s2"]
    first, second = split.conversations
    assert first.is_ego and not second.is_ego
    assert split.image_path(first) == tmp_path / "images" / "a.jpg"
    assert split.image_path(second) is None
    assert [t.interaction_id for t in second.turns] == ["s2-0", "s2-1", "s2-2"]
    assert second.turns[2].ground_truth == "answer 2"
    assert first.turns[0].labels == {
        "domain": "vehicle",
        "query_category": "simple-knowledge",
        "dynamism": "static",
        "image_quality": "blurred",
        "entity_popularity": "tail",
    }
    assert [(c.session_id, i) for c, i, _ in split.turns()] == [
        ("s1", 0),
        ("s2", 0),
        ("s2", 1),
        ("s2", 2),
    ]


def test_answers_may_come_in_any_order(tmp_path: Path) -> None:
    item = record(turns=2)
    item["answers"].reverse()
    split = load_split(make_split(tmp_path, [item]))
    assert [t.ground_truth for t in split.conversations[0].turns] == ["answer 0", "answer 1"]


def broken(change) -> dict:
    item = copy.deepcopy(record("s2", turns=2))
    change(item)
    return item


BAD_LINES = {
    "malformed json": ('{"session_id": "s2",', "malformed JSON", "(column 21)"),
    "not an object": ("[1, 2]", "expected a JSON object", "a list"),
    "missing session_id": (broken(lambda r: r.pop("session_id")), "'session_id' is missing", ""),
    "session_id not a string": (broken(lambda r: r.update(session_id=7)), "'session_id'", "int"),
    "query wrong type": (
        broken(lambda r: r["turns"][1].update(query=["x"])),
        "'turns[1].query'",
        "a list",
    ),
    "empty query": (
        broken(lambda r: r["turns"][0].update(query="  ")),
        "'turns[0].query'",
        "empty",
    ),
    "missing label": (
        broken(lambda r: r["turns"][1].pop("dynamism")),
        "'turns[1].dynamism' is missing",
        "",
    ),
    "label not a string": (
        broken(lambda r: r["turns"][0].update(domain=3)),
        "'turns[0].domain'",
        "expected a string",
    ),
    "extra field not a string": (
        broken(lambda r: r["turns"][0].update(entity_popularity=None)),
        "'turns[0].entity_popularity'",
        "null",
    ),
    "reserved label name": (
        broken(lambda r: r["turns"][0].update(agent_response="x")),
        "'turns[0].agent_response'",
        "not allowed",
    ),
    "label name with spaces": (
        broken(lambda r: r["turns"][0].update({"Entity Pop": "x"})),
        "'turns[0].Entity Pop'",
        "snake_case",
    ),
    "empty turns": (broken(lambda r: r.update(turns=[])), "'turns' is empty", ""),
    "turns not a list": (broken(lambda r: r.update(turns={})), "'turns'", "expected a list"),
    "answer missing": (broken(lambda r: r["answers"].pop()), "no answer for", "'s2-1'"),
    "answer for no turn": (
        broken(lambda r: r["answers"].append({"interaction_id": "zz", "ans_full": "x"})),
        "'answers'",
        "'zz'",
    ),
    "two answers for a turn": (
        broken(lambda r: r["answers"].append({"interaction_id": "s2-0", "ans_full": "x"})),
        "'answers[2].interaction_id'",
        "second answer",
    ),
    "ans_full not a string": (
        broken(lambda r: r["answers"][0].update(ans_full=4)),
        "'answers[0].ans_full'",
        "int",
    ),
    "unknown top-level field": (broken(lambda r: r.update(answer="x")), "unknown field", "answer"),
    "image missing": (broken(lambda r: r.update(image="images/nope.jpg")), "'image'", "nope.jpg"),
    "image escapes the split": (
        broken(lambda r: r.update(image="images/../../etc/passwd")),
        "'image'",
        "under images/",
    ),
    "image outside images/": (broken(lambda r: r.update(image="a.jpg")), "'image'", "images/"),
    "no picture at all": (broken(lambda r: r.update(image=None)), "both empty", ""),
    "image not given": (broken(lambda r: r.pop("image")), "'image' is missing", "null"),
    "duplicate session_id": (record("s1"), "duplicate 's1'", "first at"),
    "duplicate interaction_id": (
        broken(
            lambda r: [
                r["turns"][1].update(interaction_id="s1-0"),
                r["answers"][1].update(interaction_id="s1-0"),
            ]
        ),
        "'turns[1].interaction_id'",
        "duplicate 's1-0'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_input_names_file_line_and_field(tmp_path: Path, case: str) -> None:
    line, *expected = BAD_LINES[case]
    root = make_split(tmp_path, [record("s1"), line])
    with pytest.raises(EvaluatorError) as error:
        load_split(root)
    message = str(error.value)
    assert f"{root / 'sessions.jsonl'}:2" in message
    for part in expected:
        assert part in message


def test_image_that_is_not_an_image(tmp_path: Path) -> None:
    root = make_split(tmp_path, [record()])
    (root / "images" / "a.jpg").write_text("not a picture")
    with pytest.raises(EvaluatorError, match=r"sessions.jsonl:1: field 'image': .* not a readable"):
        load_split(root)


def test_empty_file_and_non_utf8_and_not_a_split(tmp_path: Path) -> None:
    root = make_split(tmp_path / "empty", ["", "  "])
    with pytest.raises(EvaluatorError, match="no conversations"):
        load_split(root)
    root = make_split(tmp_path / "latin1", [])
    (root / "sessions.jsonl").write_bytes(json.dumps(record()).encode() + b"\xff\n")
    with pytest.raises(EvaluatorError, match="not UTF-8"):
        load_split(root)
    with pytest.raises(EvaluatorError, match="not a split"):
        load_split(tmp_path / "empty" / "images")


def conversations(count: int) -> list[tuple[Conversation, bytes]]:
    drafts = []
    for n in range(count):
        labels = {"domain": "book", "query_category": "reasoning", "dynamism": "static"}
        labels |= {"image_quality": "normal", "depends_on_history": "no"}
        turn = Turn(f"i{n}", f"q{n}?", f"a{n}", labels)
        drafts.append((Conversation(f"s{n}", f"images/s{n}.jpg", None, (turn,)), jpeg_bytes()))
    return drafts


def test_write_split_round_trips(tmp_path: Path) -> None:
    drafts = conversations(3)
    written = write_split(iter(drafts), tmp_path / "out")
    loaded = load_split(tmp_path / "out")
    assert written.conversations == loaded.conversations == [c for c, _ in drafts]
    assert (tmp_path / "out" / "images" / "s1.jpg").read_bytes() == drafts[1][1]
    first_line = (tmp_path / "out" / "sessions.jsonl").read_text().splitlines()[0]
    assert list(json.loads(first_line)["turns"][0]) == [
        "interaction_id",
        "query",
        "domain",
        "query_category",
        "dynamism",
        "image_quality",
        "depends_on_history",
    ]


def test_write_split_refuses_a_non_empty_directory_and_leaves_nothing_on_failure(
    tmp_path: Path,
) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(EvaluatorError, match="not an empty directory"):
        write_split(conversations(1), tmp_path / "taken")
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"

    clash = conversations(2)
    clash[1] = (Conversation("s1", "images/s0.jpg", None, clash[1][0].turns), jpeg_bytes((0, 0, 9)))
    with pytest.raises(EvaluatorError, match="two different images"):
        write_split(clash, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]

    repeated = conversations(2)
    repeated[1] = (Conversation("s0", "images/s1.jpg", None, repeated[0][0].turns), repeated[1][1])
    with pytest.raises(EvaluatorError, match="duplicate 's0'"):
        write_split(repeated, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


texts = st.text(min_size=1, max_size=30).filter(str.strip)
label_names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda name: name not in RESERVED_LABELS and name not in {"interaction_id", "query"}
)


@settings(max_examples=25, deadline=None)
@given(
    queries=st.lists(texts, min_size=1, max_size=4),
    answers=st.lists(st.text(max_size=30), min_size=4, max_size=4),
    extra=st.dictionaries(label_names, texts, max_size=3),
    image_url=st.one_of(st.none(), st.just("https://example.org/p.jpg")),
)
def test_any_valid_conversation_survives_a_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    queries: list[str],
    answers: list[str],
    extra: dict[str, str],
    image_url: str | None,
) -> None:
    labels = {"domain": "book", "query_category": "reasoning", "dynamism": "static"}
    labels |= {"image_quality": "normal"} | extra
    turns = tuple(Turn(f"t{n}", q, answers[n], labels) for n, q in enumerate(queries))
    drafts = [(Conversation("s", "images/s.jpg", image_url, turns), jpeg_bytes())]
    out = tmp_path_factory.mktemp("round-trip") / "split"
    assert load_split(write_split(drafts, out).root).conversations == [drafts[0][0]]
