"""A failed build's reason, without Docker: plain text, and the network hint where a step could
not reach a host (the build itself: tests/workers/test_builds.py)."""

from __future__ import annotations

import collections
from pathlib import Path

from workers.build_failures import build_failure, failing_step, plain, plain_lines
from workers.package_index import PackageIndex

NO_INDEX = "Builds have no network, and this challenge names no package index"
INDEX_URL = "http://10.0.0.5:3141/simple/"


def test_terminal_control_sequences_and_characters_are_removed():
    coloured = "\x1b[1;31mERROR:\x1b[0m No matching distribution found for torch"
    assert plain(coloured) == "ERROR: No matching distribution found for torch"
    titled = "\x1b]0;pip install\x07done\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x9b32mok\x9bm"
    assert plain(titled) == "donelink ok"
    assert plain("a\x1b(Bb\x1b=c\x00d\x7fe\tf") == "abcde\tf"  # charset, keypad, NUL, DEL
    assert plain_lines("10%\r50%\r100%\x1b[K\nnext\r\n") == ["10%", "50%", "100%", "next"]


def test_the_failing_step_is_the_last_step_s_lines():
    tail = ["Step 1/3 : FROM x", " ---> ab", "Step 2/3 : RUN a", "out a", "Step 3/3 : RUN b", "b!"]
    assert failing_step(collections.deque(tail)) == ["Step 3/3 : RUN b", "b!"]  # as kept
    assert failing_step(["no step line"]) == ["no step line"]


def test_a_network_failure_gets_the_hint_whether_or_not_the_challenge_has_an_index():
    tail = [
        "Step 1/2 : FROM base",
        "Step 2/2 : RUN pip install torch",
        "\x1b[33mWARNING: Retrying after connection broken by 'NewConnectionError("
        "'<pip._vendor.urllib3.connection.HTTPSConnection>: Failed to establish a new "
        "connection: [Errno -3] Temporary failure in name resolution')'\x1b[0m",
        "\x1b[31mERROR: No matching distribution found for torch\x1b[0m",
    ]
    why = "The command '/bin/sh -c pip install torch' returned a non-zero code: 1"
    reason = build_failure(Path("ctx.tar"), why, tail)
    assert "\x1b" not in reason
    assert reason.startswith(
        f"ctx.tar: build failed: {why}. {NO_INDEX}: nothing can be downloaded while your image "
        "builds. Put what it installs (wheels, model files) in your build context, or ask the "
        "organisers for a package index.\n--- last lines of the build log ---\nStep 1/2"
    )
    assert reason.endswith("\nERROR: No matching distribution found for torch")

    with_index = build_failure(Path("ctx.tar"), why, tail, PackageIndex.parse(INDEX_URL))
    assert f"{why}. Builds have no network but this challenge's package index, {INDEX_URL}: " in (
        with_index
    )
    assert "every other host is out of reach.\n--- last lines" in with_index

    refused = build_failure(
        Path("ctx.tar"), why, ["HTTP Error 403"], PackageIndex.parse(INDEX_URL), ["x.org:80"]
    )
    assert "out of reach. This build asked for x.org:80.\n--- last lines" in refused


def test_a_failure_that_is_not_the_network_gets_no_hint():
    why = "The command '/bin/sh -c exit 3' returned a non-zero code: 3"
    # an earlier step that printed a network-like line does not count: it succeeded
    tail = ["Step 2/3 : RUN echo Connection refused", "Step 3/3 : RUN exit 3"]
    reason = build_failure(Path("ctx.tar"), why, tail)
    assert reason == (
        f"ctx.tar: build failed: {why}\n--- last lines of the build log ---\n" + "\n".join(tail)
    )
    assert build_failure(Path("c.tar"), " over 3 s ", []).startswith(
        "c.tar: build failed: over 3 s\n--- last lines of the build log ---\n(empty)"
    )
