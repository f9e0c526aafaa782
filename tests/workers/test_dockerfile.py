"""The Dockerfile check: which references a build may read, and how allowed bases are pinned."""

from __future__ import annotations

import pytest

from workers.dockerfile import DockerfileError, check_base_images, pin_base_images

BASE = "podium/agent-base:py3.11"
resolve = {BASE: "sha256:" + "a" * 64, f"docker.io/{BASE}": "sha256:" + "a" * 64}.get
PINNED = "sha256:" + "a" * 64


def test_allowed_bases_are_pinned_and_stages_kept_line_for_line():
    text = (
        "# syntax=docker/dockerfile:1\n"
        f"FROM --platform=linux/amd64 {BASE} AS Build\n"
        'RUN echo "a  b" && \\\n'
        "    echo done\n"
        "FROM \\\n"
        f"  {BASE}\n"
        "COPY --from=build /x /y\n"
        "COPY --from=0 --chown=1000 /x /y\n"
        "RUN --mount=type=bind,from=build,target=/a ls /a\n"
    )
    lines = pin_base_images(text, resolve).splitlines()
    assert lines[1] == f"FROM --platform=linux/amd64 {PINNED} AS build"
    assert lines[2:4] == ['RUN echo "a  b" && \\', "    echo done"]  # untouched
    assert lines[4:6] == [f"FROM {PINNED}", ""]  # same line numbers after
    assert lines[6:] == text.splitlines()[6:]


def test_copy_from_an_allowed_base_is_pinned_too():
    text = f"FROM scratch\nCOPY --from={BASE} /usr/bin/python3 /p\n"
    assert (
        pin_base_images(text, resolve).splitlines()[1]
        == f"COPY --from={PINNED} /usr/bin/python3 /p"
    )


def test_the_escape_directive_and_onbuild_are_understood():
    text = f"# escape=`\nFROM `\n  {BASE}\nONBUILD COPY --from=other/x / /\n"
    with pytest.raises(DockerfileError, match="line 4: COPY 'other/x' is not one of the base"):
        pin_base_images(text, resolve)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM podium-submission/1:latest\n", "line 1: FROM 'podium-submission/1:latest' is not"),
        (f"FROM {BASE}\nCOPY --from=team/agent:1 /agent /a\n", "line 2: COPY 'team/agent:1'"),
        (f"FROM {BASE}\nCOPY --from=1 / /\n", "line 2: COPY '1' is not"),  # no such stage yet
        ("FROM 0\n", "line 1: FROM '0' is not"),  # an index is no image
        ("ARG B=x\nFROM $B\n", "line 2: FROM '$B': write image references out"),
        (f"FROM {BASE}\nCOPY --from=${{X}} / /\n", "write image references out"),
        (f"FROM {BASE}\nRUN --mount=type=cache,target=/c,from=evil/x ls\n", "RUN 'evil/x'"),
        (f"FROM {BASE} AS\n", "line 1: FROM <image> [AS <name>] expected"),
        ("RUN ls\n", "no FROM instruction"),
        # Docker drops a byte-order mark before the first line: this FROM is read
        ("\ufeffFROM 9fc4 AS loot\nFROM podium/agent-base:py3.11\n", "line 1: FROM '9fc4'"),
        # a no-break space after "\\" does not continue the line for Docker: line 2 is read
        (f"FROM {BASE}\nRUN true \\\u00a0\nFROM 9fc4 AS loot\n", "line 3: FROM '9fc4'"),
    ],
)
def test_other_references_are_refused_naming_the_line(text, message):
    with pytest.raises(DockerfileError, match=message.replace("$", r"\$").replace("[", r"\[")):
        pin_base_images(text, resolve)


ALLOWED = ("podium/agent-base:py3.11", "podium/agent-base:cuda12")


def test_the_upload_check_matches_bases_by_name_as_docker_normalises_them():
    check_base_images(
        "FROM docker.io/podium/agent-base:py3.11 AS deps\n"
        "FROM index.docker.io/podium/agent-base:cuda12\n"
        "COPY --from=deps /a /b\n"
        f"COPY --from=sha256:{'c' * 64} /x /y\n"  # an image ID: the build knows the bases' IDs
        "FROM scratch\n",
        ALLOWED,
    )
    for text, line in [
        ("FROM podium/agent-base\n", "line 1: FROM 'podium/agent-base' is not"),  # :latest
        ("FROM python:3.10-slim-bookworm\n", "line 1: FROM 'python:3.10-slim-bookworm' is not"),
        (f"FROM {ALLOWED[0]}\nCOPY --from=team/x:1 / /\n", "line 2: COPY 'team/x:1' is not"),
    ]:
        with pytest.raises(DockerfileError) as refused:
            check_base_images(text, ALLOWED)
        assert str(refused.value) == (
            f"Dockerfile {line} one of the base images this challenge allows (or an earlier "
            "stage of this Dockerfile); the allowed bases are podium/agent-base:py3.11, "
            "podium/agent-base:cuda12"
        )
    with pytest.raises(DockerfileError, match="no FROM instruction"):
        check_base_images("# nothing\n", ALLOWED)
