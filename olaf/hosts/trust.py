"""What the PS accepts (docs/reliability.md "The PS's trust"): a decoded update is checked against
the deployment before it can touch the global model.

In a deployment the switch already drops updates from unknown or spoofed sources (port-bound
identity, docs/dataplane.md) and stamps the cluster and worker ids, so every update that reaches
the PS through it comes from a worker's address. The PS checks what it can see itself:

* **source** — with ``allowed_sources`` (``olaf ps --allow IP``; ``olaf run`` passes every worker
  of ``network.yaml``) an update or INIT from any other address is rejected (``source``);
* **INIT** — with ``init_from`` (``--init-from IP``; ``olaf run`` passes the first worker) only that
  worker's INIT may set the initial weights (paper §2.1: "the weights of the first responding
  worker"); another allowed worker's INIT is answered like a late INIT (``init_ignored``) but
  cannot set them (``init_source`` is counted);
* **reward** — ``|reward_sum / count|`` above ``max_abs_reward`` (reward units) is rejected
  (``reward``): one update with ``reward_sum = 0x7fffffff`` would otherwise become the global
  reward and make the reward gate reject every later update;
* **gen_ts** — outside ``[PS start − gen_ts_slack_s, now + gen_ts_slack_s]`` is rejected
  (``gen_ts``): it would make AoM negative or overflow (hosts share ``CLOCK_REALTIME``).

A rejected datagram changes nothing and gets no ACK; it is counted by reason.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from olaf.fixedpoint import reward_from_fixed
from olaf.update import Update

DEFAULT_MAX_ABS_REWARD = 10_000.0
"""Default bound of a mean update reward (reward units): above every episode return of the
Gymnasium tasks Olaf trains (LunarLander about ±300, CartPole ≤ 500) and of the bandit, far below
Q15.16's 32,768."""

DEFAULT_GEN_TS_SLACK_S = 60.0
"""Default tolerance of ``gen_ts`` around the PS's lifetime, seconds."""


class Reject(str, enum.Enum):
    """Why the PS refused a decoded update (``untrusted_reasons`` in its summary)."""

    SOURCE = "source"
    REWARD = "reward"
    GEN_TS = "gen_ts"


@dataclass(frozen=True)
class TrustPolicy:
    """The PS's checks; ``None`` switches a check off.

    Attributes:
        allowed_sources: IPv4 addresses updates and INITs may come from.
        init_from: the address whose INIT sets the initial weights.
        max_abs_reward: bound of ``|reward_sum/count|``, reward units (> 0).
        gen_ts_slack_s: tolerance of ``gen_ts`` around the PS's lifetime, s (≥ 0).

    Raises:
        ValueError: a bound out of range.
    """

    allowed_sources: Optional[frozenset[str]] = None
    init_from: Optional[str] = None
    max_abs_reward: Optional[float] = DEFAULT_MAX_ABS_REWARD
    gen_ts_slack_s: Optional[float] = DEFAULT_GEN_TS_SLACK_S

    def __post_init__(self) -> None:
        if self.max_abs_reward is not None and not self.max_abs_reward > 0:
            raise ValueError(f"max_abs_reward={self.max_abs_reward} must be > 0")
        if self.gen_ts_slack_s is not None and not self.gen_ts_slack_s >= 0:
            raise ValueError(f"gen_ts_slack_s={self.gen_ts_slack_s} must be >= 0")

    def check(self, u: Update, init: bool, src: str, t_ns: int, t_start_ns: int) -> Optional[Reject]:
        """The reason to reject ``u`` (INIT flag ``init``) received from ``src`` at ``t_ns`` by a PS
        started at ``t_start_ns`` (ns, ``CLOCK_REALTIME``), or None to accept it."""
        if self.allowed_sources is not None and src not in self.allowed_sources:
            return Reject.SOURCE
        if init:
            return None
        if self.max_abs_reward is not None and abs(reward_from_fixed(u.reward_sum) / u.count) > self.max_abs_reward:
            return Reject.REWARD
        if self.gen_ts_slack_s is not None:
            slack = int(self.gen_ts_slack_s * 1e9)
            if not t_start_ns - slack <= u.gen_ts <= t_ns + slack:
                return Reject.GEN_TS
        return None

    def may_set_weights(self, src: str) -> bool:
        """Whether an INIT from ``src`` may set the initial weights."""
        return self.init_from is None or src == self.init_from
