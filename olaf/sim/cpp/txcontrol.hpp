// Worker-side transmission control (paper §5) for the simulated workers: the
// same rule as olaf/hosts/txcontrol.py (send_probability, TransmissionControl.
// decide), in C++ so that 10^4 simulated workers decide without calling into
// Python. tests/test_sim_txcontrol.py checks that both give the same P_s.
//
//   P_s = 1                          if N <= Q_max (no congestion)
//   P_s = min(Q_max / N + f(Δ̂), 1)   else, f(Δ̂) = v (Δ̂ - Δ̄_T) / 1000 if Δ̂ > Δ̄_T else 0
// with Δ̂ and Δ̄_T in ms and v in 1/s.
//
// Reading backoff (TxReading, olaf/constants.py; paper §6 "Δ̄_T ... decides on the base time to
// backoff"): a skipped draw starts a back-off; while it lasts an update of the congestion regime
// is not sent and draws nothing (reason backoff). It ends at the next ACK event or once
// t - t_skip >= Δ̄_T. Reading probabilistic (the default) never backs off.

#ifndef OLAF_SIM_TXCONTROL_HPP_
#define OLAF_SIM_TXCONTROL_HPP_

#include <algorithm>
#include <cstdint>

#include "olaf_constants.hpp"
#include "rng.hpp"

namespace olaf::sim {

// f(Δ̂) of paper §5: ms in, v in 1/s.
inline double staleness_boost(double delta_hat_ms, double delta_t_ms, double v_per_s) {
  const double excess_ms = delta_hat_ms - delta_t_ms;
  return excess_ms > 0 ? v_per_s * excess_ms / 1000 : 0.0;
}

// P_s of paper §5 for status (N, Q_max) and Δ̂ (ms); q_max must be >= 1.
inline double send_probability(uint32_t active_clusters, uint32_t queue_size, double delta_hat_ms,
                               double delta_t_ms, double v_per_s) {
  if (active_clusters <= queue_size) return 1.0;
  const double p = static_cast<double>(queue_size) / active_clusters +
                   staleness_boost(delta_hat_ms, delta_t_ms, v_per_s);
  return std::min(p, 1.0);
}

// Why a generation was sent or not: olaf.constants.TxReason (labels: TX_REASON_LABELS).
enum class Reason : uint8_t {
  kTcOff = constants::TX_REASON_TC_OFF,
  kNoStatus = constants::TX_REASON_NO_STATUS,
  kNoQmax = constants::TX_REASON_NO_QMAX,
  kUncongested = constants::TX_REASON_UNCONGESTED,
  kDraw = constants::TX_REASON_DRAW,
  kBackoff = constants::TX_REASON_BACKOFF,
};
static_assert(constants::NUM_TX_REASON == 6, "a TxReason without a Reason here");

struct TxParams {
  bool enabled = false;
  double delta_t_ms = 400.0;
  double v_per_s = 2.5;
  uint32_t q_max = 0;                                     // 0: use the Q_max of the ACK status
  uint8_t reading = constants::TX_READING_PROBABILISTIC;  // olaf.constants.TxReading
};

struct TxDecision {
  bool send = true;
  Reason reason = Reason::kTcOff;
  double p_send = 1.0;
  double draw = -1.0;          // < 0: no draw
  double delta_hat_ms = -1.0;  // < 0: no ACK yet
  int64_t n = -1;              // status N, -1 if none
  int64_t q_max = -1;          // Q_max used, -1 if none
};

// Per-worker state: the latest status (N, Q_max) and the time of the last ACK.
class TransmissionControl {
 public:
  TransmissionControl(const TxParams &p, Xoshiro256 rng) : p_(p), rng_(rng) {}

  // An ACK event at t_ns: Δ̂ restarts; a valid status becomes the latest.
  void on_ack(int64_t t_ns, bool status_valid, uint32_t active_clusters, uint32_t queue_size) {
    last_ack_ns_ = t_ns;
    skip_ns_ = -1;
    on_status(status_valid, active_clusters, queue_size);
  }

  // An ACK slice that is not an ACK event: only its status (if valid) is taken.
  void on_status(bool status_valid, uint32_t active_clusters, uint32_t queue_size) {
    if (status_valid) {
      has_status_ = true;
      n_ = active_clusters;
      q_ = queue_size;
    }
  }

  TxDecision decide(int64_t t_ns) {
    TxDecision d;
    if (last_ack_ns_ >= 0) d.delta_hat_ms = static_cast<double>(t_ns - last_ack_ns_) / 1e6;
    if (!p_.enabled) return d;
    if (!has_status_) {
      d.reason = Reason::kNoStatus;
      return d;
    }
    const uint32_t q_max = p_.q_max ? p_.q_max : q_;
    d.n = n_;
    d.q_max = q_max;
    if (q_max < 1) {
      d.reason = Reason::kNoQmax;
      return d;
    }
    if (n_ <= q_max) {
      d.reason = Reason::kUncongested;
      return d;
    }
    if (in_backoff(t_ns)) {
      d.reason = Reason::kBackoff;
      d.p_send = 0.0;
      d.send = false;
      return d;
    }
    d.reason = Reason::kDraw;
    d.p_send = send_probability(n_, q_max, d.delta_hat_ms, p_.delta_t_ms, p_.v_per_s);
    d.draw = rng_.uniform();
    d.send = d.draw < d.p_send;
    if (p_.reading == constants::TX_READING_BACKOFF && !d.send) skip_ns_ = t_ns;
    return d;
  }

  // Reading backoff: t_ns is within the back-off of the last skipped draw (no ACK event since,
  // less than Δ̄_T after it).
  bool in_backoff(int64_t t_ns) const {
    return skip_ns_ >= 0 && static_cast<double>(t_ns - skip_ns_) / 1e6 < p_.delta_t_ms;
  }

 private:
  TxParams p_;
  Xoshiro256 rng_;
  int64_t last_ack_ns_ = -1;
  int64_t skip_ns_ = -1;  // reading backoff: the skip that started the back-off, -1 if none
  bool has_status_ = false;
  uint32_t n_ = 0;
  uint32_t q_ = 0;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_TXCONTROL_HPP_
