"""What a challenge's starter kit holds, and its content version.

A kit (one ``.tar.gz``, a folder ``<slug>-starter-kit/``) carries:

- ``README.md``: what each task's agents can use on Podium (``leaderboard.task_environment``:
  models, GPU, base images, package index), then the steps, from the base image to a
  submission, with the local evaluation commands written out for each task
  (``leaderboard.kits.commands``: its limits, its benchmark's settings);
- ``agents/<example>/``: the example agent of each benchmark the challenge's tasks use, when it
  has one (``Samples.example_agent``);
- ``data/<task>/<split>/``: the public splits (validation and public test) whose data the
  organisers let be seen (``kit_splits``); never a private test;
- ``corpus/``: the challenge's search corpus, only when the organisers allow it
  (``Challenge.kit_includes_corpus``);
- ``files/``: the organisers' own files (``KitFile``: a bundle's ``challenge.kit_files``), at
  their path in the bundle;
- ``tools/``: Podium's own ``agentkit``, ``evaluator`` and ``workers`` (its Django parts left
  out), ``podium/cli.py`` and the modules it imports, with ``tools/requirements.txt``: what
  the commands need;
- ``kit.json``: the manifest (the tasks with their environment; the splits, the corpus and the
  organisers' files by sha256; the version).

The version is a hash of everything that goes in, so the archive is made again exactly when a
public split, the corpus, a setting, a limit or Podium's code changes.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string

from leaderboard.kits.commands import split_path, task_commands
from leaderboard.models import Challenge, KitFile, Split, Task
from leaderboard.pipeline.bundles import corpus_sha256
from leaderboard.task_environment import task_environment

# Podium's source the commands need, whole: none of these packages imports Django (the import
# contracts in pyproject.toml, checked by ``lint-imports``).
TOOL_PACKAGES = ("agentkit", "evaluator", "workers")
# podium.cli and what it imports of podium (none of them imports Django)
CLI_MODULES = (
    "cli.py", "api_client.py", "cli_challenge.py", "cli_context.py", "cli_text.py", "downloads.py"
)  # fmt: skip
# requirements.txt sections the tools need (from the "# --- workers" line to "# --- tests").
REQUIREMENT_SECTIONS = ("# --- workers", "# --- evaluator")
KIT_FORMAT = 1  # bumped when the layout of a kit changes
ORGANISER_FILES = "files"  # the kit's folder of the organisers' files


def archive_filename(image: str) -> str:
    """A base image's download name: ``podium/agent-base:py3.11`` ->
    ``podium-agent-base-py3.11.tar``."""
    return image.replace("/", "-").replace(":", "-").replace("@", "-") + ".tar"


def repository() -> Path:
    return Path(settings.BASE_DIR)


@dataclass(frozen=True)
class KitPlan:
    challenge: Challenge
    tasks: tuple[Task, ...]
    splits: tuple[Split, ...]  # in the kit
    withheld: tuple[tuple[Split, str], ...]  # with data, not in the kit: why
    corpus_sha256: str | None  # the corpus in the kit, if any
    corpus_withheld: bool  # the challenge has a corpus the organisers keep out
    agents: tuple[str, ...]  # example agents' folder names, under agents/
    agent_folders: tuple[Path, ...]  # where they are, in the same order
    files: tuple[KitFile, ...]  # the organisers' files, under ORGANISER_FILES/
    manifest: dict[str, Any]
    readme: str
    version: str

    @property
    def folder(self) -> str:
        return f"{self.challenge.slug}-starter-kit"

    @property
    def filename(self) -> str:
        return f"{self.folder}-{self.version[:12]}.tar.gz"

    @property
    def storage_name(self) -> str:
        return f"kits/{self.challenge.slug}/{self.version}.tar.gz"


def organiser_file_path(kit_file: KitFile) -> str:
    return f"{ORGANISER_FILES}/{kit_file.path}"


def kit_splits(challenge: Challenge) -> tuple[list[Split], list[tuple[Split, str]]]:
    """The splits a kit carries, and those with data it leaves out (with the reason).

    In: validation and public-test splits whose results the organisers made public
    (``Split.is_revealed``: visibility public, reveal time reached). Out: every private test,
    a hidden split, and one whose reveal time has not come.
    """
    included, withheld = [], []
    splits = Split.objects.current().filter(task__challenge=challenge).exclude(sha256="")
    kinds = list(Split.Kind.values)  # validation, public test, private test
    ordered = sorted(
        splits.select_related("task"),
        key=lambda s: (s.task.order, s.task.task_id, kinds.index(s.kind)),
    )
    for split in ordered:
        if split.is_private:
            withheld.append((split, "a private test is never in the kit"))
        elif split.visibility == Split.Visibility.HIDDEN:
            withheld.append((split, "the organisers keep it hidden"))
        elif not split.is_revealed():
            withheld.append((split, f"from {split.reveal_at:%Y-%m-%d %H:%M} UTC"))
        else:
            included.append(split)
    return included, withheld


def _tool_files() -> list[tuple[Path, str]]:
    """(file on disk, name in the kit) of Podium's source the kit carries."""
    root, files = repository(), []
    for package in TOOL_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            name = path.relative_to(root).as_posix()
            if not path.is_file() or "__pycache__" in name or path.suffix == ".pyc":
                continue
            files.append((path, f"tools/{name}"))
    for module in CLI_MODULES:
        files.append((root / "podium" / module, f"tools/podium/{module}"))
    return files


def example_agents(tasks: tuple[Task, ...]) -> dict[str, Path | None]:
    """Each task's example agent (its benchmark's ``example_agent``; None: it has none), by
    task id."""
    return {task.task_id: task.declared().example_agent() for task in tasks}


def agent_files(folders: tuple[Path, ...]) -> list[tuple[Path, str]]:
    files = []
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(folder).as_posix()
                files.append((path, f"agents/{folder.name}/{name}"))
    return files


def tool_requirements() -> str:
    """The lines of requirements.txt's workers and evaluator sections."""
    lines, keep = [], False
    for line in (repository() / "requirements.txt").read_text().splitlines():
        if line.startswith("# ---"):
            keep = line.startswith(REQUIREMENT_SECTIONS)
        if keep:
            lines.append(line)
    return "\n".join(lines) + "\n"


def code_files(agent_folders: tuple[Path, ...]) -> list[tuple[Path, str]]:
    return [*_tool_files(), *agent_files(agent_folders)]


@functools.cache
def _file_hash(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _code_hash(agent_folders: tuple[Path, ...]) -> str:
    digest = hashlib.sha256()
    for path, name in code_files(agent_folders):
        stat = path.stat()
        digest.update(f"{name} {_file_hash(path, stat.st_size, stat.st_mtime_ns)}\n".encode())
    return digest.hexdigest()


def plan(challenge: Challenge) -> KitPlan:
    """The kit as it would be made now (cheap: nothing is read from storage but hashes)."""
    tasks = tuple(challenge.tasks.order_by("order", "task_id"))
    splits, withheld = kit_splits(challenge)
    stored_corpus = corpus_sha256(challenge)
    corpus = stored_corpus if challenge.kit_includes_corpus else None
    examples = example_agents(tasks)
    by_name = {folder.name: folder for folder in examples.values() if folder is not None}
    agents = tuple(sorted(by_name))
    agent_folders = tuple(by_name[name] for name in agents)
    without = sorted({t.declared().title for t in tasks if examples[t.task_id] is None})
    files = tuple(challenge.kit_files.order_by("path"))
    models = list(challenge.hub_models.all())
    envs = [task_environment(task, models) for task in tasks]
    manifest = {
        "format": KIT_FORMAT,
        "challenge": challenge.slug,
        "tasks": [
            {
                "task_id": task.task_id,
                "protocol": task.benchmark,
                "settings": task.effective_settings,
                "run_settings": list(task.run_settings()),
                "example_agent": getattr(examples[task.task_id], "name", None),
                **env.as_dict(),  # what its agents can use on Podium
            }
            for task, env in zip(tasks, envs, strict=True)
        ],
        "splits": [
            {"task_id": s.task.task_id, "kind": s.kind, "path": split_path(s), "sha256": s.sha256}
            for s in splits
        ],
        "corpus": {"path": "corpus", "sha256": corpus} if corpus else None,
        "files": [
            {"path": organiser_file_path(f), "sha256": f.sha256, "size": f.size} for f in files
        ],
        "base_images": list(settings.PODIUM_BUILD_BASE_IMAGES),
    }
    readme = render_to_string(
        "leaderboard/kit/README.md",
        {
            "challenge": challenge,
            "tasks": [
                (task, task_commands(task, splits, corpus is not None), env)
                for task, env in zip(tasks, envs, strict=True)
            ],
            "splits": splits,
            "withheld": withheld,
            "corpus": corpus,
            "corpus_withheld": stored_corpus is not None and corpus is None,
            "agents": agents,
            "without_example": without,
            "files": [organiser_file_path(f) for f in files],
            "base_image": settings.PODIUM_BUILD_BASE_IMAGES[0],
            "base_image_file": archive_filename(settings.PODIUM_BUILD_BASE_IMAGES[0]),
        },
    )
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode())
    digest.update(readme.encode())
    digest.update(_code_hash(agent_folders).encode())
    version = digest.hexdigest()
    manifest["version"] = version
    return KitPlan(
        challenge=challenge,
        tasks=tasks,
        splits=tuple(splits),
        withheld=tuple(withheld),
        corpus_sha256=corpus,
        corpus_withheld=stored_corpus is not None and corpus is None,
        agents=agents,
        agent_folders=agent_folders,
        files=files,
        manifest=manifest,
        readme=readme,
        version=version,
    )
