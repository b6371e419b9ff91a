"""BMv2's receive path holds a burst (olaf/bmv2.py, "Receive rings"): every update of a burst
that reaches a switch port while BMv2's receive thread cannot run is decided once it runs.

The switch process is stopped (SIGSTOP) while the burst is sent, so the kernel puts every
frame into the port's libpcap ring and none is read meanwhile: the test needs a ring of more
than :data:`BURST` frames, which a veth with its segmentation offloads on does not give
(32 frames), and does not depend on how fast the machine is.
"""

import os
import signal

from olaf_base import OlafTest
from ptf import testutils as tu

from olaf.update import Update

BURST = 200
"""Updates in the burst: above the 32 frames of a ring sized for 64 KiB packets, below the
1,310 of one sized for the PTF veths' 1500 B MTU."""


class ReceiveRingHoldsABurst(OlafTest):
    """200 updates sent into worker port 1 while the switch is stopped: all 200 are decided."""

    def runTest(self):
        self.add_workers(0, [1], group=True)
        pid = int(tu.test_params_get()["switch_pid"])
        frames = [bytes(self.update_frame(1, Update(cluster_id=0, worker_id=1, seq=s, count=1, reward_sum=0,
                                                    gen_ts=1000 + s, grads=(s, 1, 2, 3))))
                  for s in range(1, BURST + 1)]
        base = self.decided()
        os.kill(pid, signal.SIGSTOP)
        try:
            for f in frames:
                tu.send_packet(self, 1, f)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.wait_decided(base + BURST, timeout=30.0)
        self.assertEqual(self.decided(), base + BURST)
