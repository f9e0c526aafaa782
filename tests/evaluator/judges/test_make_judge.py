import pytest

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.judges import RulesJudge, make_judge
from evaluator.judges.openai_judge import OpenAIJudge
from evaluator.records import EvaluatorError

RUBRIC = CragMMRubric()

ENV = (
    "PODIUM_JUDGE_BASE_URL",
    "OPENAI_BASE_URL",
    "PODIUM_JUDGE_MODEL",
    "PODIUM_JUDGE_API_KEY",
    "OPENAI_API_KEY",
    "PODIUM_JUDGE_REVISION",
    "PODIUM_JUDGE_CONCURRENCY",
    "PODIUM_JUDGE_STRUCTURED",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_rules_judge() -> None:
    assert isinstance(make_judge("rules", RUBRIC), RulesJudge)
    assert make_judge("rules", RUBRIC, concurrency=None).judge_id == "rules@1"
    with pytest.raises(EvaluatorError, match=r"rules judge: takes no options, got \['model'\]"):
        make_judge("rules", RUBRIC, model="gpt")


def test_openai_judge_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODIUM_JUDGE_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("PODIUM_JUDGE_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("PODIUM_JUDGE_REVISION", "a1b2c3")
    monkeypatch.setenv("PODIUM_JUDGE_CONCURRENCY", "32")
    monkeypatch.setenv("PODIUM_JUDGE_STRUCTURED", "vllm")
    judge = make_judge("openai", RUBRIC)
    assert isinstance(judge, OpenAIJudge)
    assert judge.judge_id == "openai:Qwen/Qwen2.5-7B-Instruct@a1b2c3"
    assert (judge.concurrency, judge.structured) == (32, "vllm")
    assert (
        make_judge("openai", RUBRIC, model="other").judge_id == "openai:other@a1b2c3"
    )  # options win


@pytest.mark.parametrize(
    ("env", "options", "message"),
    [
        ({}, {"model": "m"}, "no API key"),
        ({"PODIUM_JUDGE_BASE_URL": "http://x/v1"}, {}, "no model"),
        ({"PODIUM_JUDGE_CONCURRENCY": "many"}, {"model": "m"}, "PODIUM_JUDGE_CONCURRENCY='many'"),
        ({"OPENAI_API_KEY": "k"}, {"model": "m", "structured": "json"}, "option structured"),
        ({"OPENAI_API_KEY": "k"}, {"model": "m", "concurrency": 0}, "option concurrency"),
        ({"OPENAI_API_KEY": "k"}, {"model": "m", "temperature": 1}, "unknown option"),
    ],
)
def test_bad_configuration_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], options: dict, message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(EvaluatorError, match=message):
        make_judge("openai", RUBRIC, **options)


def test_unknown_judge() -> None:
    with pytest.raises(EvaluatorError, match="unknown judge 'gpt'"):
        make_judge("gpt", RUBRIC)


def _key(judge) -> str:
    return judge._headers["Authorization"].removeprefix("Bearer ")


@pytest.mark.parametrize(
    ("env", "options", "key"),
    [
        # Each environment key goes to its own server only.
        ({"PODIUM_JUDGE_BASE_URL": "http://a/v1", "PODIUM_JUDGE_API_KEY": "ka"}, {}, "ka"),
        ({"PODIUM_JUDGE_BASE_URL": "http://a/v1/", "PODIUM_JUDGE_API_KEY": "ka"},
         {"base_url": "http://a/v1"}, "ka"),
        ({"PODIUM_JUDGE_BASE_URL": "http://a/v1", "PODIUM_JUDGE_API_KEY": "ka"},
         {"base_url": "http://b/v1"}, "EMPTY"),
        ({"OPENAI_API_KEY": "ko"}, {"base_url": "http://b/v1"}, "EMPTY"),
        ({"OPENAI_API_KEY": "ko"}, {}, "ko"),
        ({"PODIUM_JUDGE_API_KEY": "ka"}, {}, "ka"),
        ({"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "ko",
          "PODIUM_JUDGE_API_KEY": "ka"}, {}, "ko"),
        ({"PODIUM_JUDGE_API_KEY": "ka"}, {"base_url": "http://b/v1", "api_key": "kb"}, "kb"),
    ],
)  # fmt: skip
def test_an_environment_key_goes_only_to_its_own_server(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], options: dict, key: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _key(make_judge("openai", RUBRIC, model="m", **options)) == key


def test_another_endpoint_never_receives_the_default_key(monkeypatch, fake_openai) -> None:
    """Over HTTP: a judge pointed at another server sends no key of the environment's."""
    from tests.evaluator.judges.test_openai_judge import DOG, run

    monkeypatch.setenv("PODIUM_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PODIUM_JUDGE_API_KEY", "default-endpoint-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-secret")
    judge = make_judge(
        "openai", RUBRIC, base_url=fake_openai.url, model="fake-judge", structured="none"
    )
    run(judge, DOG)
    assert fake_openai.authorizations == ["Bearer EMPTY"]
