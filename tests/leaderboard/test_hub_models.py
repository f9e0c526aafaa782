"""Models loaded by hub id: registered by the organiser, declared by the submission, stored as
the Hugging Face cache holds them (``workers.model_store``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management import CommandError, call_command

from leaderboard.models import Challenge, HubModel, Submission
from leaderboard.submitting import Artifact, MethodInfo, submit
from workers.model_store import ModelStoreError, cache_name, register, stored

from .submit_support import broker, open_splits, write_tar

__all__ = ["broker", "open_splits"]  # fixtures used by name

HUB_ID = "podium-test/tiny-bert"
Kind = Submission.ArtifactKind


def tiny_model(directory: Path, hidden: int = 8) -> Path:
    """A transformers config and tokenizer saved as save_pretrained saves them."""
    from transformers import BertConfig, BertTokenizer

    directory.mkdir(parents=True)
    BertConfig(
        vocab_size=12, hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=16,
    ).save_pretrained(directory)  # fmt: skip
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "red", "wings"]))
    BertTokenizer(str(vocab)).save_pretrained(directory)
    return directory


def test_a_registered_model_resolves_by_its_hub_id_with_the_hub_offline(tmp_path: Path) -> None:
    store = tmp_path / "store"
    model = register(store, HUB_ID, tiny_model(tmp_path / "files"))
    folder = stored(store, HUB_ID)
    assert (
        folder == store / "hub" / cache_name(HUB_ID) == store / "hub/models--podium-test--tiny-bert"
    )
    assert (folder / "refs/main").read_text() == model.snapshot and len(model.snapshot) == 40
    assert register(store, HUB_ID, tmp_path / "files").snapshot == model.snapshot  # same files
    load = (
        "from transformers import AutoConfig, AutoTokenizer\n"
        f"config = AutoConfig.from_pretrained({HUB_ID!r})\n"
        f"tokens = AutoTokenizer.from_pretrained({HUB_ID!r})('red wings')['input_ids']\n"
        "print(config.hidden_size, tokens)\n"
    )
    env = {**os.environ, "HF_HOME": str(store), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    loaded = subprocess.run(
        [sys.executable, "-c", load], env=env, capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split("\n")[0] == "8 [2, 5, 6, 3]"

    other = register(store, HUB_ID, tiny_model(tmp_path / "other", hidden=4), revision="v2")
    assert other.snapshot != model.snapshot and (folder / "refs/main").read_text() == model.snapshot
    with pytest.raises(ModelStoreError, match="not in this node's model store"):
        stored(store, HUB_ID, "v3")
    with pytest.raises(ModelStoreError, match="is not a hub id"):
        register(store, "../escape", tmp_path / "files")


@pytest.mark.django_db
def test_register_model_allows_it_for_the_challenge(challenge, tmp_path: Path, settings) -> None:
    settings.PODIUM_MODEL_STORE = tmp_path / "store"
    out = io.StringIO()
    files = tiny_model(tmp_path / "files")
    call_command("register_model", HUB_ID, str(files), "--challenge", challenge.slug, stdout=out)
    assert f"registered {HUB_ID}@main for {challenge.slug}" in out.getvalue()
    (registered,) = HubModel.objects.filter(challenge=challenge)
    assert (registered.hub_id, registered.revision, len(registered.snapshot)) == (
        HUB_ID,
        "main",
        40,
    )
    with pytest.raises(CommandError, match="not a directory"):
        call_command(
            "register_model", HUB_ID, str(tmp_path / "nope"), "--challenge", challenge.slug
        )


def _context(path: Path, **manifests: object) -> File:
    members = {"Dockerfile": b"FROM podium/agent-base:py3.11\nCOPY . /agent/\n"}
    members |= {
        name.replace("_", "."): json.dumps(data).encode() for name, data in manifests.items()
    }
    return File(write_tar(path, members).open("rb"), name=path.name)


def test_a_submission_may_declare_only_the_challenge_s_models(
    open_splits, teams, make_user, tmp_path: Path
) -> None:
    challenge = Challenge.objects.get()
    member = make_user("ann", team=teams["alpha"])
    challenge.organisers.add(member)  # no quota between the submissions below
    HubModel.objects.create(challenge=challenge, hub_id=HUB_ID, snapshot="a" * 40)
    HubModel.objects.create(
        challenge=challenge, hub_id="org/clip", revision="v1", snapshot="b" * 40
    )

    def send(name: str, **manifests: object) -> Submission:
        artifact = Artifact(Kind.BUILD_CONTEXT, file=_context(tmp_path / name, **manifests))
        return submit(teams["alpha"], challenge, member, artifact, MethodInfo(method_name="m"))

    kit = {"hf_models": [{"repo_id": HUB_ID, "revision": "main"}]}
    assert send("kit.tar", aicrowd_json=kit).declared_models == [
        {"hub_id": HUB_ID, "revision": "main"}
    ]
    both = send(
        "both.tar",
        aicrowd_json=kit,
        podium_json={"models": [HUB_ID, {"hub_id": "org/clip", "revision": "v1"}]},
    )
    assert both.declared_models == [
        {"hub_id": HUB_ID, "revision": "main"},
        {"hub_id": "org/clip", "revision": "v1"},
    ]
    assert send("none.tar").declared_models == []
    with pytest.raises(ValidationError) as refused:
        send(
            "llama.tar",
            aicrowd_json={"hf_models": [{"repo_id": "meta-llama/Llama-3.2-11B-Vision-Instruct"}]},
        )
    assert refused.value.message_dict["artifact"] == [
        f"{challenge.name} does not provide meta-llama/Llama-3.2-11B-Vision-Instruct@main: the "
        f"models agents may load are org/clip@v1, {HUB_ID}@main"
    ]
    with pytest.raises(
        ValidationError, match=r"podium.json: models\[0\]: '\.\./x' is not a hub id"
    ):
        send("bad.tar", podium_json={"models": ["../x"]})
    with pytest.raises(ValidationError, match=r"aicrowd\.json is not JSON"):
        artifact = Artifact(
            Kind.BUILD_CONTEXT,
            file=File(
                write_tar(
                    tmp_path / "broken.tar", {"Dockerfile": b"FROM x\n", "aicrowd.json": b"{"}
                ).open("rb"),
                name="broken.tar",
            ),
        )
        submit(teams["alpha"], challenge, member, artifact, MethodInfo(method_name="m"))
