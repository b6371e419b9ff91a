"""A training script for `olaf launch` tests: a numpy "model" through OlafClient.from_env.

argv: P [MODE]; MODE "fail1": rank 1 exits 3 after the INIT, rank 0 waits to be stopped;
"size1": rank 1 has P + 1 parameters. Prints its client's stats as one JSON line.
"""

import json
import os
import sys
import time
from dataclasses import asdict

import numpy as np

from olaf.client import OlafClient

P = int(sys.argv[1])
mode = sys.argv[2] if len(sys.argv) > 2 else ""
rank = int(os.environ["OLAF_RANK"])
p = P + 1 if mode == "size1" and rank == 1 else P
with OlafClient.from_env(p) as client:
    client.init(np.zeros(p), wait_s=60)
    if mode == "fail1":
        if rank == 1:
            sys.exit(3)
        while True:  # until the launcher stops it
            time.sleep(0.1)
    w = np.zeros(p)
    for i in range(5):
        got = client.adopt(w)
        if got.weights is not None:
            w = got.weights
        client.push(np.full(p, 0.01), 1.0 + i, samples=10)
        client.wait_for_answer(5.0)
    print(json.dumps(asdict(client.stats())), flush=True)
