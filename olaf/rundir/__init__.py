"""The run directory: what every backend writes and every reader (``olaf report``, experiments,
training monitors) reads.

Layout::

    run.json                  the manifest (olaf.rundir.manifest.RunManifest)
    hosts/<name>.jsonl        a host's log, one record a line (olaf.rundir.records)
    hosts/<name>.summary.json a host's counters at shutdown (WorkerSummary, PsSummary)
    switch_counters.json      per switch, the data plane's counters (Mininet, ns-3)
    network.yaml              the deployment (olaf.controller.config), when there is a network
    regroups.jsonl            membership changes made with olafctl during the run
    deliveries.csv            per update whose content reached the PS: worker, seq, gen_ts_ns,
                              t_delivered_ns (a backend that knows it exactly: ns-3)
    summary.json, summary.csv the report (olaf report; olaf.rundir.summary.RunSummary)
    training.json             a training job's result (olaf.rundir.training.TrainingResult)

Backends add their own files beside these (the Mininet backend: the P4 program, switch logs,
pcaps). Modules: :mod:`~olaf.rundir.records` (the record models), :mod:`~olaf.rundir.jsonl`
(the writer, reader and follower of the logs), :mod:`~olaf.rundir.manifest` (``run.json``),
:mod:`~olaf.rundir.training` (``training.json``), :mod:`~olaf.rundir.summary` (``summary.json``)
and :mod:`~olaf.rundir.atomic` (the atomic file writer).
"""

from __future__ import annotations

from olaf.rundir.atomic import write_json, write_text_atomic
from olaf.rundir.jsonl import JsonlContents, JsonlFollower, JsonlLog, read_jsonl
from olaf.rundir.manifest import MANIFEST_FILE, ManifestError, RunManifest, read_manifest, write_manifest

HOSTS_DIR = "hosts"
SWITCH_COUNTERS_FILE = "switch_counters.json"
NETWORK_FILE = "network.yaml"
REGROUPS_FILE = "regroups.jsonl"
DELIVERIES_FILE = "deliveries.csv"
DELIVERIES_COLUMNS = ("worker", "seq", "gen_ts_ns", "t_delivered_ns")

__all__ = ["DELIVERIES_COLUMNS", "DELIVERIES_FILE", "HOSTS_DIR", "MANIFEST_FILE", "NETWORK_FILE", "REGROUPS_FILE",
           "SWITCH_COUNTERS_FILE", "JsonlContents",
           "JsonlFollower", "JsonlLog", "ManifestError", "RunManifest", "read_jsonl", "read_manifest",
           "write_json", "write_manifest", "write_text_atomic"]
