"""olaf.ps.serve: the real PS in a thread, for notebooks and tests; a client trains against it
over loopback and every update it sent is in the PS's summary."""

import numpy as np
import pytest
from hostnet import loopback_net

from olaf.chunks import Chunking
from olaf.client import OlafClient
from olaf.constants import MTU
from olaf.ps import serve

P = 3000


def test_a_client_trains_against_an_embedded_ps():
    ip = loopback_net()
    k = Chunking.for_model(P, MTU).num_chunks
    with serve(ip(100), num_params=P, mtu=MTU, step="sgd", lr=1.0, gate=False) as ps:
        with OlafClient(ps.address, num_params=P, bind=ip(1)) as client:
            client.init(np.zeros(P), wait_s=30)
            for i in range(3):
                r = client.push(np.full(P, 0.5), float(i), samples=1)
                assert r.sent
                assert client.wait_for_answer(30)
            w = client.latest_weights()
    assert w is not None and np.allclose(w, 1.5)  # three steps of 0.5 at lr 1
    s = ps.summary
    assert s is not None and (s["num_weights"], s["num_chunks"]) == (P, k)
    assert s["accepted"] == s["updates"] == 3 * k and s["stop_reason"] == "signal"


def test_a_bad_setting_is_named():
    with pytest.raises(ValueError, match="unknown PS setting.*lerning_rate"):
        with serve("127.0.0.1", lerning_rate=1.0):
            pass
