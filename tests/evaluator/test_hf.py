"""The Hugging Face layout: real ``datasets`` data saved with save_to_disk and to_parquet."""

from __future__ import annotations

import io
from pathlib import Path

import datasets
import pytest
from datasets import ClassLabel, Features, Value
from PIL import Image

from evaluator.benchmarks.crag_mm.hf import convert_hf, is_hf_layout
from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.official_data import IMAGE_URL_UPDATES, SKIPPED_SESSIONS
from evaluator.records import EvaluatorError

# Names deliberately not in alphabetical order: the loader must read them, not assume them.
DOMAIN = ClassLabel(names=["vehicle", "other", "shopping", "animal"])
CATEGORY = ClassLabel(names=["simple-recognition", "reasoning", "simple-knowledge"])
DYNAMISM = ClassLabel(names=["static", "fast-changing"])
QUALITY = ClassLabel(names=["normal", "low light", "rotated"])


def picture(kind: str, color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), color).save(buffer, kind)
    return buffer.getvalue()


JPEG, PNG = picture("JPEG", (250, 0, 0)), picture("PNG", (0, 0, 250))

# (session_id, image bytes, image_url, turns as (id, query, domain, category, dynamism,
# quality, popularity), answers as (id, ans_full))
CONVERSATIONS = [
    ("s1", JPEG, None, [("s1-0", "What is it?", 3, 0, 0, 2, "head"),
                        ("s1-1", "How old?", 3, 1, 1, 2, "head")],
     [("s1-0", "an otter"), ("s1-1", "4 years")]),
    ("s2", None, "https://example.org/b.jpg", [("s2-0", "Price?", 2, 2, 1, 0, "tail")],
     [("s2-0", "$10")]),
    ("s3", PNG, "", [("s3-0", "Brand?", 0, 2, 0, 1, "torso")], [("s3-0", "Arvo")]),
]  # fmt: skip
TURN_KEYS = ("interaction_id", "query", "domain", "query_category", "dynamism", "image_quality")


def columnar(conversations=CONVERSATIONS) -> datasets.Dataset:
    """The later release: turns/answers as a sequence of structs (columns of lists)."""
    turn_features = dict(
        zip(
            TURN_KEYS,
            [Value("string"), Value("string"), DOMAIN, CATEGORY, DYNAMISM, QUALITY],
            strict=True,
        )
    )
    features = Features(
        {
            "session_id": Value("string"),
            "image": datasets.Image(),
            "image_url": Value("string"),
            "turns": datasets.Sequence(turn_features | {"entity_popularity": Value("string")}),
            "answers": datasets.Sequence(
                {"interaction_id": Value("string"), "ans_full": Value("string")}
            ),
        }
    )
    rows = {name: [] for name in features}
    for session_id, image, url, turns, answers in conversations:
        rows["session_id"].append(session_id)
        rows["image"].append({"bytes": image, "path": None} if image else None)
        rows["image_url"].append(url)
        names = [*TURN_KEYS, "entity_popularity"]
        rows["turns"].append({n: [t[i] for t in turns] for i, n in enumerate(names)})
        rows["answers"].append(
            {"interaction_id": [a[0] for a in answers], "ans_full": [a[1] for a in answers]}
        )
    return datasets.Dataset.from_dict(rows, features=features)


def as_rows() -> datasets.Dataset:
    """The first release: turns as a list of structs, image_quality at conversation level."""
    features = Features(
        {
            "session_id": Value("string"),
            "image": datasets.Image(),
            "image_url": Value("string"),
            "image_quality": QUALITY,
            "turns": datasets.List(
                {"interaction_id": Value("string"), "query": Value("string"), "domain": DOMAIN,
                 "query_category": CATEGORY, "dynamism": DYNAMISM, "turn_number": Value("int32")}
            ),
            "answers": datasets.List(
                {"interaction_id": Value("string"), "ans_full": Value("string")}
            ),
        }
    )  # fmt: skip
    rows = []
    for session_id, image, url, turns, answers in CONVERSATIONS:
        rows.append(
            {
                "session_id": session_id,
                "image": {"bytes": image, "path": None} if image else None,
                "image_url": url,
                "image_quality": turns[0][5],
                "turns": [
                    dict(zip(TURN_KEYS[:5], t[:5], strict=True), turn_number=n)
                    for n, t in enumerate(turns)
                ],
                "answers": [{"interaction_id": a, "ans_full": b} for a, b in answers],
            }
        )
    return datasets.Dataset.from_list(rows, features=features)


def check_loaded(split, with_popularity: bool = True) -> None:
    s1, s2, s3 = split.conversations
    assert [t.interaction_id for t in s1.turns] == ["s1-0", "s1-1"]
    expected = {"domain": "animal", "query_category": "reasoning", "dynamism": "fast-changing"}
    expected |= {"image_quality": "rotated"}
    if with_popularity:
        expected["entity_popularity"] = "head"
    assert s1.turns[1].labels == expected
    assert s1.turns[1].ground_truth == "4 years"
    assert s2.turns[0].labels["domain"] == "shopping"
    assert s1.is_ego and not s2.is_ego and s3.is_ego
    assert split.image_path(s1).read_bytes() == JPEG
    assert split.image_path(s1).suffix == ".jpg" and split.image_path(s3).suffix == ".png"
    assert split.image_path(s3).read_bytes() == PNG
    assert s2.image is None and s2.image_url == "https://example.org/b.jpg"


def test_save_to_disk_dataset_dict_picks_the_named_split(tmp_path: Path) -> None:
    other = columnar(CONVERSATIONS[:1])
    datasets.DatasetDict({"validation": columnar(), "public_test": other}).save_to_disk(
        tmp_path / "hf"
    )
    assert is_hf_layout(tmp_path / "hf")
    with pytest.raises(EvaluatorError, match=r"several splits.*public_test, validation"):
        load_split(tmp_path / "hf", cache_dir=tmp_path / "cache")
    with pytest.raises(EvaluatorError, match="split 'test' not found"):
        load_split(tmp_path / "hf", hf_split="test", cache_dir=tmp_path / "cache")
    check_loaded(load_split(tmp_path / "hf", hf_split="validation", cache_dir=tmp_path / "cache"))
    public = load_split(tmp_path / "hf", hf_split="public_test", cache_dir=tmp_path / "cache")
    assert [c.session_id for c in public.conversations] == ["s1"]


def test_parquet_as_on_the_hub_converts_to_podium_format(tmp_path: Path) -> None:
    data = tmp_path / "hub" / "data"
    data.mkdir(parents=True)
    columnar().to_parquet(data / "validation-00000-of-00001.parquet")
    columnar(CONVERSATIONS[2:]).to_parquet(data / "public_test-00000-of-00001.parquet")
    written = convert_hf(tmp_path / "hub", tmp_path / "out", hf_split="validation")
    check_loaded(written)
    check_loaded(load_split(tmp_path / "out"))
    single = load_split(data / "public_test-00000-of-00001.parquet", cache_dir=tmp_path / "c")
    assert [c.session_id for c in single.conversations] == ["s3"]


def test_sharded_parquet_keeps_the_order_of_the_shards(tmp_path: Path) -> None:
    columnar(CONVERSATIONS[:2]).to_parquet(tmp_path / "validation-00000-of-00002.parquet")
    columnar(CONVERSATIONS[2:]).to_parquet(tmp_path / "validation-00001-of-00002.parquet")
    check_loaded(load_split(tmp_path, cache_dir=tmp_path / "cache"))


def test_list_of_structs_with_conversation_level_image_quality(tmp_path: Path) -> None:
    as_rows().save_to_disk(tmp_path / "hf")
    split = convert_hf(tmp_path / "hf", tmp_path / "out")
    check_loaded(split, with_popularity=False)
    assert "turn_number" not in split.conversations[0].turns[0].labels


def test_cache_converts_once_and_again_when_the_source_changes(tmp_path: Path) -> None:
    columnar().to_parquet(tmp_path / "src" / "validation.parquet")
    first = load_split(tmp_path / "src", cache_dir=tmp_path / "cache")
    stamp = (first.root / "sessions.jsonl").stat().st_mtime_ns
    again = load_split(tmp_path / "src", cache_dir=tmp_path / "cache")
    assert again.root == first.root
    assert (again.root / "sessions.jsonl").stat().st_mtime_ns == stamp
    columnar(CONVERSATIONS[:1]).to_parquet(tmp_path / "src" / "validation.parquet")
    changed = load_split(tmp_path / "src", cache_dir=tmp_path / "cache")
    assert changed.root != first.root and len(changed.conversations) == 1


def bad(change) -> list:
    conversations = [list(c) for c in CONVERSATIONS]
    change(conversations)
    return [tuple(c) for c in conversations]


@pytest.mark.parametrize(
    ("conversations", "expected"),
    [
        (bad(lambda c: c[1].__setitem__(4, [])), r"row 1: field 'answers' is empty"),
        (bad(lambda c: c[2].__setitem__(0, "s1")), r"row 2: field 'session_id': duplicate 's1'"),
        (
            bad(lambda c: c[0].__setitem__(3, [("s1-0", "q", -1, 0, 0, 0, "x")])),
            r"row 0: field 'turns\[0\].domain': label index -1 outside the 4",
        ),
        (
            bad(lambda c: c[1].__setitem__(2, None)),
            r"row 1: fields 'image' and 'image_url' are both empty",
        ),
    ],
)
def test_bad_rows_name_the_file_row_and_field(
    tmp_path: Path, conversations: list, expected: str
) -> None:
    columnar(conversations).to_parquet(tmp_path / "validation.parquet")
    with pytest.raises(EvaluatorError, match=expected):
        convert_hf(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_integer_labels_without_class_names_are_refused(tmp_path: Path) -> None:
    features = Features(
        {
            "session_id": Value("string"),
            "turns": datasets.List({"interaction_id": Value("string"), "domain": Value("int64")}),
            "answers": datasets.List({"interaction_id": Value("string")}),
        }
    )
    rows = [{"session_id": "s", "turns": [{"interaction_id": "i", "domain": 1}], "answers": []}]
    datasets.Dataset.from_list(rows, features=features).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(EvaluatorError, match="'domain' is neither strings nor a ClassLabel"):
        convert_hf(tmp_path / "x.parquet", tmp_path / "out")


def test_not_hugging_face_data(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert not is_hf_layout(tmp_path)
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(EvaluatorError, match=r"broken\.parquet: not a readable parquet file"):
        convert_hf(tmp_path, tmp_path / "out")


def test_the_official_corrections_are_applied_and_reported(tmp_path: Path) -> None:
    """The official evaluation leaves two sessions out and gives one single-turn session an
    archived image URL; a multi-turn conversation with that id keeps its own URL."""
    skipped = "04d98259-27af-41b1-a7be-5798fd1b8e95"
    updated = "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe"
    one_turn = [("u-0", "Which car?", 0, 0, 0, 0, "head")]
    conversations = [
        CONVERSATIONS[0],
        (skipped, JPEG, None, [("x-0", "What?", 0, 0, 0, 0, "head")], [("x-0", "a")]),
        (updated, None, "https://upload.wikimedia.org/gone.jpg", one_turn, [("u-0", "a BMW")]),
        CONVERSATIONS[1],
    ]
    columnar(conversations).to_parquet(tmp_path / "validation-00000-of-00001.parquet")
    split = convert_hf(tmp_path, tmp_path / "out")
    assert [c.session_id for c in split.conversations] == ["s1", updated, "s2"]
    fixed = split.conversations[1]
    assert fixed.image_url == IMAGE_URL_UPDATES[updated]
    assert fixed.image_url.startswith("https://web.archive.org/web/20250521025904/")
    assert split.notes == (
        f"left out session {skipped} (the official SESSIONS_TO_SKIP)",
        f"session {updated}: image_url replaced by the official archived copy (SESSIONS_TO_UPDATE)",
    )
    assert load_split(tmp_path / "out").conversations[1].image_url == fixed.image_url
    assert {skipped, "695b4b5c-7c65-4f7b-8968-50fe10482a16"} == SKIPPED_SESSIONS

    two_turns = [*one_turn, ("u-1", "Its year?", 0, 0, 0, 0, "head")]
    multi = [
        (updated, None, "https://example.org/own.jpg", two_turns, [("u-0", "a"), ("u-1", "b")])
    ]
    (tmp_path / "multi").mkdir()
    columnar(multi).to_parquet(tmp_path / "multi" / "validation.parquet")
    kept = convert_hf(tmp_path / "multi", tmp_path / "out-multi")
    assert kept.conversations[0].image_url == "https://example.org/own.jpg" and kept.notes == ()
