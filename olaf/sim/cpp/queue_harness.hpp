// Drives one OlafQueueDisc (p4src/extern/olaf_queue_ns3.hpp) through its ns-3
// QueueDisc interface on the simulator clock, for the shared vectors
// (tests/test_sim_vectors.py): enqueue a datagram at a time, lock (Peek) and dequeue the head,
// read the status, write the runtime parameters. Standard types only, so that
// cppyy parses it without the ns-3 headers.

#ifndef OLAF_SIM_QUEUE_HARNESS_HPP_
#define OLAF_SIM_QUEUE_HARNESS_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace olaf::sim {

struct HarnessEnqueue {
  int decision = -1;  // DECISION_* code, 255 = error
  int segment = -1;
  std::string error;  // olaf::error_text, empty if none
};

struct HarnessDeparture {
  bool ok = false;  // false: the queue was empty
  int segment = -1;
  std::vector<int> datagram;  // IPv4 datagram of the departing update, one byte per element
};

class QueueHarness {
 public:
  // discipline "olaf" | "fifo"; reward_threshold < 0: off; num_chunks: K
  // (queue_size in segments, K..segments). Throws std::invalid_argument for a
  // configuration the QueueDisc refuses.
  QueueHarness(const std::string &discipline, uint32_t segments, uint32_t num_clusters,
               uint32_t num_grads, uint32_t queue_size, int64_t reward_threshold,
               int64_t activity_window_ns, uint32_t num_chunks = 1);
  ~QueueHarness();
  QueueHarness(const QueueHarness &) = delete;
  QueueHarness &operator=(const QueueHarness &) = delete;

  // Advances the simulator clock to t_ns (never backwards) and enqueues.
  HarnessEnqueue Enqueue(const std::string &datagram, int64_t t_ns);
  HarnessDeparture Dequeue();
  // QueueDisc::Peek: locks the head; returns its segment, -1 if the queue is empty.
  int Lock();
  // (queue_util, active_clusters, queue_size) at t_ns.
  std::vector<uint32_t> Status(int64_t t_ns);
  bool Configure(uint32_t queue_size, int64_t reward_threshold, int64_t activity_window_ns);
  // Final counters: decisions[6], per cluster decisions[num_clusters * 6],
  // departures[num_clusters].
  std::vector<uint64_t> Decisions() const;
  std::vector<uint64_t> ClusterDecisions() const;
  std::vector<uint64_t> Departures() const;
  int64_t Now() const;
  // Items the QueueDisc counted and dropped: (errors, malformed, bad_chunk).
  std::vector<uint64_t> Errors() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_QUEUE_HARNESS_HPP_
