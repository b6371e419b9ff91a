// Simulated Olaf hosts as ns-3 applications: the worker and the PS of
// olaf/hosts/ reduced to what the network sees (docs/simulation.md).
//
// OlafWorker (olaf/hosts/worker.py): generates an update one gap after the
// previous one was due (gap = period + U(-jitter, +jitter)), asks transmission
// control (txcontrol.hpp, paper §5) whether to send it, and sends a real Olaf
// update datagram (docs/protocol.md) on its access link. Skipped generations
// are subsumed: the next sent update carries the mean reward and mean
// gradient of every generation since the last sent one (olaf.hosts.task.
// Experience). The learning task itself is not simulated: a generation's
// reward is U(-1, 0) and its gradient x·b with x ~ U(-1, 1) and b a fixed
// per-worker direction with elements in [-1, 1] (synthetic, but real bytes that
// the switches aggregate). ACKs restart the Δ̂ timer and update the status.
//
// OlafPs (olaf/hosts/ps.py): answers every update with an ACK to the update's
// source IPv4 address, UDP 50101, carrying the update's ids, seq, count and
// gen_ts, and G weight elements so that the ACK has the size of an emulated
// run's; it keeps no global model (global_reward = INT32_MIN, "−∞").

#ifndef OLAF_SIM_OLAF_HOSTS_HPP_
#define OLAF_SIM_OLAF_HOSTS_HPP_

#include <cstdint>
#include <vector>

#include "ns3/application.h"
#include "ns3/net-device.h"
#include "rng.hpp"
#include "sim_api.hpp"
#include "txcontrol.hpp"

namespace olaf::sim {

class OlafWorker : public ns3::Application {
 public:
  OlafWorker(const WorkerParams &p, uint32_t num_grads, bool keep_records);
  void SetDevice(ns3::Ptr<ns3::NetDevice> dev);

  const std::vector<GenRecord> &gens() const { return gens_; }
  const std::vector<AckRecord> &acks() const { return acks_; }
  const WorkerCounters &counters() const { return counters_; }

 private:
  static constexpr size_t kSentMemory = 4096;  // own-ACK recognition, as olaf/hosts/worker.py

  void StartApplication() override;
  void StopApplication() override;
  int64_t NextGap();
  void Generate();
  bool Receive(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<const ns3::Packet> p, uint16_t protocol,
               const ns3::Address &from);

  WorkerParams p_;
  uint32_t num_grads_;
  bool keep_records_;
  ns3::Ptr<ns3::NetDevice> dev_;
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
  std::vector<uint32_t> sent_seq_;
  std::vector<uint64_t> sent_gen_ts_;
  std::vector<uint8_t> buf_;
  std::vector<int32_t> grads_;
  std::vector<GenRecord> gens_;
  std::vector<AckRecord> acks_;
  WorkerCounters counters_;
};

class OlafPs : public ns3::Application {
 public:
  OlafPs(uint32_t ip, uint32_t num_grads, bool keep_records);
  void SetDevice(ns3::Ptr<ns3::NetDevice> dev);

  const std::vector<PsRecord> &updates() const { return updates_; }
  const PsCounters &counters() const { return counters_; }

 private:
  bool Receive(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<const ns3::Packet> p, uint16_t protocol,
               const ns3::Address &from);

  uint32_t ip_;
  uint32_t num_grads_;
  bool keep_records_;
  ns3::Ptr<ns3::NetDevice> dev_;
  std::vector<uint8_t> in_;
  std::vector<uint8_t> ack_;  // template: IPv4/UDP/ACK header and G zero weights
  std::vector<PsRecord> updates_;
  PsCounters counters_;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_OLAF_HOSTS_HPP_
