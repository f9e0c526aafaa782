"""Turn order and histories: the official CRAGTurnBatchIterator's behaviour."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evaluator.benchmarks.crag_mm.agent import message_history, turn_batches
from evaluator.benchmarks.crag_mm.records import Conversation, Turn


def conversations(turn_counts: list[int]) -> list[Conversation]:
    return [
        Conversation(
            f"c{i}",
            None,
            None,
            tuple(Turn(f"c{i}-t{j}", f"q c{i}-t{j}", f"GT c{i}-t{j}") for j in range(n)),
        )
        for i, n in enumerate(turn_counts)
    ]


def ids(batches) -> list[list[str]]:
    return [[ref.interaction_id for ref in batch] for batch in batches]


def test_official_order_puts_continuing_conversations_back_at_the_front_reversed():
    # Batch 1 takes a, b, c; each is put back with appendleft in that order, so the queue
    # is c, b, a, d: the official iterator's order, reversal included.
    order = ids(turn_batches(conversations([2, 2, 2, 1]), batch_size=3))
    assert order == [["c0-t0", "c1-t0", "c2-t0"], ["c2-t1", "c1-t1", "c0-t1"], ["c3-t0"]]


def test_official_order_fills_free_places_from_the_queue():
    order = ids(turn_batches(conversations([2, 1, 3]), batch_size=2))
    assert order == [["c0-t0", "c1-t0"], ["c0-t1", "c2-t0"], ["c2-t1"], ["c2-t2"]]


def test_batch_size_is_clipped_to_1_to_16():
    many = conversations([1] * 40)
    assert [len(b) for b in turn_batches(many, batch_size=100)] == [16, 16, 8]
    assert [len(b) for b in turn_batches(many[:3], batch_size=0)] == [1, 1, 1]


def test_answered_turns_are_left_out_and_the_rest_keeps_its_order():
    convs = conversations([3, 2])
    order = ids(turn_batches(convs, batch_size=2, answered={"c0-t0", "c0-t1", "c1-t0"}))
    assert order == [["c0-t2", "c1-t1"]]
    assert (
        ids(turn_batches(convs, 2, answered={t.interaction_id for c in convs for t in c.turns}))
        == []
    )


@given(
    st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=25),
    st.integers(min_value=-3, max_value=20),
)
def test_every_turn_once_one_per_conversation_per_batch_in_turn_order(counts, size):
    batches = list(turn_batches(conversations(counts), size))
    seen = [ref.interaction_id for batch in batches for ref in batch]
    assert sorted(seen) == sorted(f"c{i}-t{j}" for i, n in enumerate(counts) for j in range(n))
    position = {}
    for number, batch in enumerate(batches):
        assert 1 <= len(batch) <= max(1, min(16, size))
        sessions = [ref.session_id for ref in batch]
        assert len(sessions) == len(set(sessions)), "two turns of one conversation in a batch"
        for ref in batch:
            position[(ref.session_id, ref.turn_idx)] = number
    for (session, turn_idx), number in position.items():
        if turn_idx:
            assert position[(session, turn_idx - 1)] < number


def test_history_holds_earlier_queries_and_own_truncated_answers_never_ground_truth():
    conv = conversations([3])[0]
    batches = list(turn_batches([conv], 1))
    third = batches[2][0]
    history = message_history(third, {"c0-t0": "first answer", "c0-t1": ""})
    assert history == [
        {"role": "user", "content": "q c0-t0"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "q c0-t1"},
        {"role": "assistant", "content": ""},
    ]
    assert all("GT" not in m["content"] for m in history)
    assert message_history(batches[0][0], {}) == []
