"""RunSpec (topologies/spec.py): errors name the field, the CLI names the option, and the
deployment and host configurations it implies."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from olaf.cli import main
from olaf.hosts.argv import worker_argv
from olaf.topologies.spec import RunSpec, RunSpecError


@pytest.mark.parametrize("kw, field", [
    (dict(topo="ring"), "topo"), (dict(queue="red"), "queue"), (dict(duration_s=-1), "duration_s"),
    (dict(jitter_ms=60.0), "jitter_ms"), (dict(queue_size=65), "queue_size"), (dict(rate_pps=-5), "rate_pps"),
    (dict(grads=0), "grads"), (dict(bmv2_log_level="loud"), "bmv2_log_level"), (dict(clusters=251), "clusters"),
])
def test_errors_name_the_field(kw, field):
    with pytest.raises(RunSpecError) as e:
        RunSpec(**kw).deployment()
    assert e.value.field == field and str(e.value).startswith(f"{field}: ")


def test_cli_names_the_option():
    r = CliRunner().invoke(main, ["run", "--jitter-ms", "80"])
    assert r.exit_code == 2 and "--jitter-ms" in r.output and "0..period_ms" in r.output


def test_deployment_and_host_configs(tmp_path):
    spec = RunSpec(clusters=2, workers_per_cluster=2, tc=True, admission=True, period_ms=40, jitter_ms=4)
    d = spec.deployment()
    assert sorted(d.clusters) == [0, 1] and d.admission.enabled and d.admission.worker_period_ms == 40
    w = spec.worker_config(d, "w3", 1, tmp_path / "hosts", tmp_path / "start_ns")
    assert (w.bind_ip, w.cluster_id, w.worker_id, w.tx.enabled) == (d.hosts["w3"].ip, 1, 3, True)
    argv = worker_argv(w)
    assert argv[argv.index("--start-file") + 1] == str(tmp_path / "start_ns")
    assert Path(argv[argv.index("--out-dir") + 1]) == tmp_path / "hosts"
