// Simulated Olaf hosts as ns-3 applications: the worker and the PS of
// olaf/hosts/ reduced to what the network sees (docs/simulation.md).
//
// OlafWorker (olaf/hosts/worker.py): generates an update one gap after the
// previous one was due (the plan's arrival model, olaf/plan/arrivals.py: gap =
// period + U(-jitter, +jitter); on/off bursts; or replayed gaps), asks transmission
// control (txcontrol.hpp, paper §5) whether to send it, and sends it as real
// Olaf update datagrams (docs/protocol.md) on its access link: K chunks of L
// elements (the last zero-padded, olaf/chunks.py), all with the same seq,
// reward_sum and gen_ts, back to back (transmission control decides per
// update: all K chunks or none). Skipped generations
// are subsumed: the next sent update carries the mean reward and mean
// gradient of every generation since the last sent one (olaf.hosts.task.
// Experience). The learning task itself is not simulated: a generation's
// reward is U(-1, 0) and its gradient x·b with x ~ U(-1, 1) and b a fixed
// per-worker direction with elements in [-1, 1] (synthetic, but real bytes that
// the switches aggregate). The ACK event (Δ̂ restarts) is the first ACK slice
// answering an update, as on the real hosts (olaf/hosts/worker.py,
// docs/hosts.md); every slice updates the status.
//
// OlafPs (olaf/hosts/ps.py): answers every update chunk with an ACK slice to the
// chunk's source IPv4 address, UDP 50101, carrying the chunk's ids, seq, count,
// gen_ts, chunk and num_chunks, and as many weight elements as the slice has
// (L, fewer for the last chunk: unpadded) so that the ACK has the size of an
// emulated run's; it keeps no global model (global_reward = INT32_MIN, "−∞").
// Both record every chunk's fate in the FateLedger (fate_ledger.hpp).

#ifndef OLAF_SIM_OLAF_HOSTS_HPP_
#define OLAF_SIM_OLAF_HOSTS_HPP_

#include <array>
#include <cstdint>
#include <vector>

#include "fate_ledger.hpp"
#include "ns3/application.h"
#include "ns3/net-device.h"
#include "rng.hpp"
#include "sim_api.hpp"
#include "txcontrol.hpp"

namespace olaf::sim {

class OlafWorker : public ns3::Application {
 public:
  // P = num_params parameters in K = num_chunks chunks of L = chunk_len; node:
  // this worker's node index (the ledger's worker id).
  OlafWorker(const WorkerParams &p, uint32_t num_params, uint32_t chunk_len, uint32_t num_chunks,
             FateLedger *ledger, int node, bool keep_records);
  void SetDevice(ns3::Ptr<ns3::NetDevice> dev);

  const std::vector<GenRecord> &gens() const { return gens_; }
  const std::vector<AckRecord> &acks() const { return acks_; }
  const WorkerCounters &counters() const { return counters_; }

 private:
  static constexpr size_t kSentMemory = 4096;    // own-ACK recognition, as olaf/hosts/worker.py
  static constexpr size_t kAnsweredMemory = 64;  // updates whose first ACK slice came (ACK events)

  // Identity of the update an ACK answers: its (worker_id, seq) here, its gen_ts in
  // answered_gen_ts_ at the same index (scanned first: contiguous).
  struct Answered {
    uint16_t worker_id;
    uint32_t seq;
  };
  // True the first time an ACK slice of this update arrives (then remembered): the ACK event.
  bool FirstSlice(uint16_t worker_id, uint32_t seq, uint64_t gen_ts);

  void StartApplication() override;
  void StopApplication() override;
  int64_t NextGap();
  void Generate();
  bool Receive(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<const ns3::Packet> p, uint16_t protocol,
               const ns3::Address &from);

  WorkerParams p_;
  uint32_t num_params_, chunk_len_, num_chunks_;
  FateLedger *ledger_;
  int node_;
  bool keep_records_;
  ns3::Ptr<ns3::NetDevice> dev_;
  ns3::Address broadcast_;  // dev_'s broadcast address (the frames' destination)
  Xoshiro256 sched_rng_, content_rng_;
  TransmissionControl tc_;
  std::vector<double> direction_;
  int64_t t_due_ = 0;
  int64_t idx_ = 0;
  ns3::EventId next_;
  // Experience since the last sent update (sums over generations).
  double exp_reward_ = 0, exp_x_ = 0;
  int64_t exp_n_ = 0;
  uint32_t seq_ = 0;
  // The update sent with seq s is remembered at index s % kSentMemory (a later one overwrites
  // it). Seq counts up from 1, so the memory grows one entry per sent update up to
  // kSentMemory entries: a worker holds only what it has sent (10⁴ workers that each send
  // 600 updates hold 7 KB each, not 48 KB). An index not yet grown to was never written.
  // gen_ts is split into two 32-bit words: an entry is 12 contiguous bytes (the two arrays
  // it replaces kept seq and gen_ts 16 KB apart).
  struct Sent {
    uint32_t seq, gen_ts_lo, gen_ts_hi;
  };
  bool IsOwn(uint32_t seq, uint64_t gen_ts) const;
  std::vector<Sent> sent_;
  // The last kAnsweredMemory updates whose first slice came (a ring: the oldest is overwritten).
  std::array<Answered, kAnsweredMemory> answered_{};
  std::array<uint64_t, kAnsweredMemory> answered_gen_ts_{};
  size_t answered_n_ = 0, answered_next_ = 0;
  std::vector<uint8_t> buf_;
  std::vector<int32_t> grads_;
  double grad_scale_, reward_scale_;  // 2^frac_bits of the gradient and reward formats
  std::vector<GenRecord> gens_;
  std::vector<AckRecord> acks_;
  WorkerCounters counters_;
};

class OlafPs : public ns3::Application {
 public:
  OlafPs(uint32_t ip, uint32_t num_params, uint32_t chunk_len, uint32_t num_chunks,
         FateLedger *ledger, bool keep_records);
  void SetDevice(ns3::Ptr<ns3::NetDevice> dev);

  const std::vector<PsRecord> &updates() const { return updates_; }
  const PsCounters &counters() const { return counters_; }

 private:
  bool Receive(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<const ns3::Packet> p, uint16_t protocol,
               const ns3::Address &from);

  uint32_t ip_;
  uint32_t num_params_, chunk_len_, num_chunks_;
  FateLedger *ledger_;
  bool keep_records_;
  ns3::Ptr<ns3::NetDevice> dev_;
  ns3::Address broadcast_;  // dev_'s broadcast address (the frames' destination)
  std::vector<uint8_t> in_;
  std::vector<uint8_t> ack_;  // template: IPv4/UDP/ACK header and L zero weights
  std::vector<PsRecord> updates_;
  PsCounters counters_;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_OLAF_HOSTS_HPP_
