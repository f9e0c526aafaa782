"""Kit detection and constructor keywords, on classes shaped like the official kits."""

from __future__ import annotations

import sys

import pytest

from agentkit.adapters import (
    KIT_A,
    KIT_B,
    AgentLoadError,
    AgentProtocolError,
    check_responses,
    detect_kit,
    load_agent,
)


class KitA:
    def __init__(self, search_pipeline):
        self.search_pipeline = search_pipeline

    def get_batch_size(self):
        return 8

    def batch_generate_response(self, queries, images, message_histories):
        return ["a"] * len(queries)


class KitBPositional:
    def __init__(self, model_name, is_multi_turn=False):
        self.model_name = model_name

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories, rag_context_list):
        return list(rag_context_list)


class KitBWantsSearch:
    def __init__(self, *, search_pipeline, is_multi_turn):
        self.search_pipeline = search_pipeline
        self.is_multi_turn = is_multi_turn

    def get_batch_size(self):
        return 1

    def batch_generate_response(
        self, queries, images, message_histories, rag_context_list, domains
    ):
        return list(domains)


class NoInit:
    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories, rag_context_list):
        return list(queries)


class KitAWithExtras:
    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories, temperature=0.0):
        return list(queries)


def test_kit_is_read_from_batch_generate_response():
    assert detect_kit(KitA) == KIT_A
    assert detect_kit(KitAWithExtras) == KIT_A
    assert detect_kit(KitBPositional) == KIT_B
    assert detect_kit(KitBWantsSearch) == KIT_B


def test_kit_b_gets_only_the_keywords_its_constructor_takes(monkeypatch):
    monkeypatch.setenv("PODIUM_MODEL_NAME", "meta-llama/Llama-3.2-11B-Vision-Instruct")
    loaded = load_agent(f"{__name__}:KitBPositional", task="multi-turn-qa")
    assert loaded.instance.model_name == "meta-llama/Llama-3.2-11B-Vision-Instruct"
    assert (loaded.kit, loaded.batch_size, loaded.accepts_domains) == (KIT_B, 2, False)
    loaded = load_agent(f"{__name__}:KitBWantsSearch", task="multi-turn-qa")
    assert loaded.instance.is_multi_turn is True
    assert loaded.instance.search_pipeline.web_search is True
    assert loaded.accepts_domains is True
    assert load_agent(f"{__name__}:NoInit", task="multi-turn-qa").kit == KIT_B


def test_kit_b_without_model_name_says_what_is_missing(monkeypatch):
    monkeypatch.delenv("PODIUM_MODEL_NAME", raising=False)
    with pytest.raises(TypeError, match="model_name"):
        load_agent(f"{__name__}:KitBPositional", task="multi-turn-qa")


def test_kit_a_is_constructed_with_the_search_pipeline_for_the_task():
    loaded = load_agent(f"{__name__}:KitA", task="single-source-augmentation")
    assert loaded.kit == KIT_A
    assert loaded.instance.search_pipeline.web_search is False


def test_not_a_class_is_refused():
    with pytest.raises(AgentLoadError, match="is a function, not a class"):
        load_agent(f"{__name__}:test_not_a_class_is_refused")


def test_check_responses_accepts_lists_and_tuples_of_str_only():
    assert check_responses(("a", "b"), 2) == ["a", "b"]
    with pytest.raises(AgentProtocolError, match="response 0 is bytes"):
        check_responses([b"a"], 1)


def test_without_podium_agent_the_kits_user_config_is_the_agent(monkeypatch, tmp_path):
    """The starter kit names its agent in agents/user_config.py (UserAgent), and the original
    platform loaded that: so does agentkit when PODIUM_AGENT is not set."""
    from agentkit.adapters import KIT_ENTRY_POINT, AgentLoadError, kit_entry_point
    from agentkit.host import READY, AgentHost

    for name in ("agents", "agents.user_config", "agents.my_agent"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(AgentLoadError, match=r"agents/user_config\.py naming UserAgent"):
        kit_entry_point()
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents/__init__.py").write_text("")
    (tmp_path / "agents/my_agent.py").write_text(
        "class MyAgent:\n"
        "    def __init__(self, search_pipeline): pass\n"
        "    def get_batch_size(self): return 3\n"
        "    def batch_generate_response(self, queries, images, message_histories):\n"
        "        return ['kit'] * len(queries)\n"
    )
    (tmp_path / "agents/user_config.py").write_text(
        "from agents.my_agent import MyAgent\n\nUserAgent = MyAgent\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert kit_entry_point() == KIT_ENTRY_POINT == "agents.user_config:UserAgent"
    host = AgentHost(None, "single-source-augmentation")
    host.load()
    assert host.state == READY, host.error
    assert host.spec == KIT_ENTRY_POINT and host.agent is not None and host.agent.batch_size == 3
