"""Where a run goes (``app.requests.ClusterSpec``): the scheduler addresses every door accepts,
the choices refused with a message, and the run folder of a run that writes no file itself."""

from __future__ import annotations

import pytest

from thermocrop.app.requests import ClusterSpec, scheduler_address
from thermocrop.core.errors import InputError


@pytest.mark.parametrize("text, address", [
    ("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
    ("10.0.0.5:8786", "tcp://10.0.0.5:8786"),
    ("  node-07.cluster.example:8786 ", "tcp://node-07.cluster.example:8786"),
    ("tcp://[fe80::1]:8786/", "tcp://[fe80::1]:8786"),
    ("localhost:08786", "tcp://localhost:8786"),
    ("", None),
    (None, None),
])
def test_scheduler_addresses_are_read_as_tcp_host_and_port(text, address):
    assert scheduler_address(text) == address


@pytest.mark.parametrize("text", ["http://10.0.0.5:8786", "tls://10.0.0.5:8786", "10.0.0.5", "tcp://:8786",
                                  "node 7:8786", "node:0", "node:65536", "node:port", "-node:8786"])
def test_other_addresses_are_refused_with_the_form_to_give(text):
    with pytest.raises(InputError, match=r"is not tcp://HOST:PORT or HOST:PORT \(e\.g\. tcp://10\.0\.0\.5:8786"):
        scheduler_address(text)
    assert "tcp://HOST:PORT" in ClusterSpec(scheduler=text).problem()


def test_a_scheduler_and_local_workers_are_not_both_asked_for():
    assert ClusterSpec(scheduler="node:8786", workers=3).problem().startswith(
        "Give either the Dask scheduler node:8786 or 3 local workers, not both")
    assert ClusterSpec(scheduler="node:8786").problem() is None
    assert ClusterSpec(workers=3).problem() is None


def test_a_partitioned_run_without_an_output_file_needs_a_run_folder(tmp_path):
    from thermocrop.app.runs import run_folder_of

    assert run_folder_of(ClusterSpec(workers=2), tmp_path / "out.gpkg") == tmp_path / "out.gpkg.parts"
    assert run_folder_of(ClusterSpec(workers=2, run_folder=str(tmp_path / "run")), None) == str(tmp_path / "run")
    with pytest.raises(InputError, match="needs a run folder"):
        run_folder_of(ClusterSpec(workers=2), None)
