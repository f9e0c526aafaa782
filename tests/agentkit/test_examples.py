"""The example agents, served by agentkit on the host, against Podium's real context format."""

from __future__ import annotations

from tests.agentkit.conftest import IMAGE_RESULT, REPO, batch, jpeg_bytes, turn
from workers.search.rag import image_context

EXAMPLES = REPO / "examples/agents"


def test_kit_b_example_answers_from_podiums_rag_context(start_agent):
    agent = start_agent((EXAMPLES / "kit-b/agent.py").read_text(), spec="agent:ContextAgent")
    status, ready = agent.wait_loaded()
    assert (status, ready["kit"], ready["batch_size"]) == (200, "B", 16)
    found = {**IMAGE_RESULT, "score": 0.9}
    context = f"<search results>{image_context([found])}</search results>"
    empty = "<search results></search results>"
    queries = [
        ("What vehicle is this?", context, "Model T"),
        ("What is the brand of this vehicle?", context, "Ford"),
        ("What is the price of this vehicle?", context, "I don't know"),
        ("What is the brand of this vehicle?", empty, "I don't know"),
    ]
    turns = [
        turn(query, jpeg_bytes(), interaction_id=f"i{n}", rag_context=rag)
        for n, (query, rag, _) in enumerate(queries)
    ]
    status, body = agent.post(batch(*turns))
    assert status == 200, body
    assert body["responses"] == [expected for _, _, expected in queries]


def test_rag_example_never_web_searches_in_task_1(start_agent, stub):
    agent = start_agent(
        (EXAMPLES / "rag-kit-a/agent.py").read_text(),
        spec="agent:RagAgent",
        env={"PODIUM_TASK": "single-source-augmentation"},
    )
    server = stub("single-source-augmentation", agent.socket_dir / "search.sock")
    assert agent.wait_loaded()[0] == 200
    photo = jpeg_bytes()
    status, body = agent.post(
        batch(
            turn("What is the brand of this vehicle?", photo),
            turn("What is the price of this vehicle?", photo, interaction_id="i2"),
            turn("Where is it?", None, interaction_id="i3"),
        )
    )
    assert status == 200, body
    assert body["responses"] == ["Ford", "I don't know", "I don't know"]
    assert [path for path, _ in server.requests] == ["/search/image", "/search/image"]
