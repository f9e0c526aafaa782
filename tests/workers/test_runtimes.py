"""Which runtime an agent container runs under (``workers.runtimes``): the one named where the
engine offers it, refused where it does not; by default runsc where offered, runc with GPUs."""

from __future__ import annotations

import pytest

from workers.faults import PodiumFault, RuntimeMissing, is_transient
from workers.runtimes import RUNTIMES, check, choose, offered
from workers.sandbox import SandboxPolicy

BOTH = frozenset({"runc", "runsc"})
RUNC_ONLY = frozenset({"runc", "io.containerd.runc.v2"})


def test_the_default_is_runsc_where_the_engine_offers_it_and_runc_elsewhere_or_with_gpus():
    assert choose(None, BOTH, gpu=False) == "runsc"
    assert choose(None, RUNC_ONLY, gpu=False) == "runc"
    assert choose(None, BOTH, gpu=True) == "runc"  # Debian's runsc has no GPU proxy


def test_a_runtime_named_is_used_where_offered_and_refused_where_not_never_replaced():
    assert choose("runc", BOTH, gpu=False) == "runc"
    assert choose("runsc", BOTH, gpu=True) == "runsc"  # an operator's nvproxy gVisor
    with pytest.raises(RuntimeMissing, match=r"'runsc' is not offered .*offers: io\.con.*, runc"):
        choose("runsc", RUNC_ONLY, gpu=False)
    missing = RuntimeMissing("x")
    assert isinstance(missing, PodiumFault) and not is_transient(missing)  # refunded, not retried


def test_only_known_runtimes_are_accepted():
    assert RUNTIMES == ("runsc", "runc") and check("runsc") == "runsc"
    with pytest.raises(ValueError, match="unknown agent runtime 'kata': one of runsc, runc"):
        check("kata")


def test_the_runtime_goes_into_the_containers_arguments_only_once_chosen():
    policy = SandboxPolicy(runtime="runsc")
    assert policy.container_kwargs("i", "t", "v", "w", "r")["runtime"] == "runsc"
    assert "runtime" not in SandboxPolicy().container_kwargs("i", "t", "v", "w", "r")


@pytest.mark.docker
def test_a_policy_naming_none_settles_on_what_the_real_engine_offers(docker_client):
    """runsc where the engine offers it (scripts/runsc.sh registers it unless PODIUM_RUNSC=0), else
    runc; runc with GPUs; a runtime the engine lacks refused before anything starts."""
    found = offered(docker_client)
    assert "runc" in found
    expected = "runsc" if "runsc" in found else "runc"
    assert SandboxPolicy().settled(docker_client).runtime == expected
    assert SandboxPolicy(gpus="all").settled(docker_client).runtime == "runc"
    if "runsc" not in found:
        with pytest.raises(RuntimeMissing, match="'runsc' is not offered"):
            SandboxPolicy(runtime="runsc").settled(docker_client)
