// OlafQueue core: the queue logic of paper §4 / Alg. 1 with no BMv2 dependency.
//
// It mirrors the Python reference model (olaf/queue_model.py), which is the
// specification; both replay the vectors in tests/vectors/ (docs/vectors.md)
// and must agree on every decision, segment address and departing update.
// The BMv2 extern (olaf_queue_bmv2.cpp) is a thin adapter around this class;
// other shells (e.g. an ns-3 queue discipline) can wrap it the same way.
//
// Not thread-safe by itself: the caller serialises calls (BMv2 holds the
// extern instance's mutex during every method call).

#ifndef OLAF_QUEUE_CORE_HPP_
#define OLAF_QUEUE_CORE_HPP_

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "olaf_constants.hpp"

namespace olaf {

// Enqueue decision; the codes come from olaf/constants.py (generated
// olaf_constants.hpp), shared with the P4 program, the RTL and the vectors.
enum class Decision : uint8_t {
  kAppend = constants::DECISION_APPEND,
  kAggregate = constants::DECISION_AGGREGATE,
  kReplaceWorker = constants::DECISION_REPLACE_WORKER,
  kReplaceReward = constants::DECISION_REPLACE_REWARD,
  kDropReward = constants::DECISION_DROP_REWARD,
  kDropFull = constants::DECISION_DROP_FULL,
};
constexpr int kNumDecisions = constants::NUM_DECISION;

const char *decision_label(Decision d);
bool decision_from_label(const std::string &label, Decision *out);

// One model update (docs/protocol.md): ids stamped by the switch, count of
// worker updates folded in (uint16, saturating), reward_sum Q15.16 int32
// (saturating), gen_ts in ns (max), grads Q7.24 int32 (saturating sums).
struct Update {
  uint16_t cluster_id = 0;
  uint16_t worker_id = 0;
  uint32_t seq = 0;
  uint16_t count = 1;
  int32_t reward_sum = 0;
  uint64_t gen_ts = 0;
  std::vector<int32_t> grads;

  bool operator==(const Update &o) const;
};

// Static parameters (fixed at construction) and runtime ones (configure()).
struct Config {
  uint32_t segments = 1;         // physical segments
  uint32_t num_clusters = 1;     // cluster ids 0 .. num_clusters-1
  uint32_t num_grads = 0;        // gradient elements per update
  uint32_t queue_size = 1;       // occupancy limit, 1 .. segments
  bool reward_filter = false;    // reward filtering enabled
  int64_t reward_threshold = 0;  // T, Q15.16, >= 0
  uint64_t activity_window_ns = 1000000000ULL;
};

enum class Error : uint8_t {
  kNone = 0,
  kBadCluster,     // cluster_id >= num_clusters
  kBadLength,      // grads.size() != num_grads
  kTimeBackwards,  // now_ns < the last event's time
};
const char *error_text(Error e);

struct EnqueueResult {
  Error error = Error::kNone;
  Decision decision = Decision::kDropFull;
  int segment = -1;  // segment written; -1 for drops and errors
};

struct Departure {
  int segment;
  Update update;
};

struct Status {
  uint32_t queue_util;       // occupied segments (incl. a locked head)
  uint32_t active_clusters;  // clusters seen within the activity window
  uint32_t queue_size;       // Q_max
};

struct Counters {
  std::array<uint64_t, kNumDecisions> decisions{};
  std::vector<std::array<uint64_t, kNumDecisions>> per_cluster;
  std::vector<uint64_t> departures;
  uint64_t errors = 0;
};

enum class Discipline : uint8_t { kOlaf = 0, kFifo = 1 };

class Queue {
 public:
  // Throws std::invalid_argument naming the bad parameter.
  Queue(const Config &config, Discipline discipline = Discipline::kOlaf);

  // Runtime writes (controller). Waiting updates are kept. Returns false
  // (and changes nothing) if queue_size is outside 1..segments.
  bool configure(uint32_t queue_size, bool reward_filter, int64_t reward_threshold,
                 uint64_t activity_window_ns);

  EnqueueResult enqueue(const Update &u, uint64_t now_ns);
  std::optional<int> lock_head();
  std::optional<Departure> dequeue();
  // Status at now_ns; now_ns earlier than the last event is clamped to it.
  Status status(uint64_t now_ns);

  uint32_t occupancy() const { return static_cast<uint32_t>(out_mem_addrs_.size()); }
  const Config &config() const { return config_; }
  const Counters &counters() const { return counters_; }
  Discipline discipline() const { return discipline_; }
  // Segment of the head (next to depart), -1 if empty.
  int head() const { return out_mem_addrs_.empty() ? -1 : out_mem_addrs_.front(); }

 private:
  struct ReplaceStatus {
    bool flag = false;
    uint16_t worker_id = 0;
  };

  EnqueueResult append(const Update &u, bool track);
  void overwrite(int seg, const Update &n);
  void mark_replaceable(const Update &n);

  Config config_;
  Discipline discipline_;
  std::vector<std::optional<Update>> segments_;
  std::vector<int> segment_cluster_;
  std::deque<int> available_mem_addrs_;
  std::deque<int> out_mem_addrs_;
  std::vector<int> cluster_status_;  // -1: no unlocked update waiting
  std::vector<ReplaceStatus> replace_status_;
  std::vector<std::optional<uint64_t>> last_seen_ns_;
  int locked_ = -1;
  uint64_t now_ns_ = 0;
  Counters counters_;
};

// Fold n into q (saturating sums, gen_ts = max, q keeps worker_id/seq).
Update aggregate(const Update &q, const Update &n);

}  // namespace olaf

#endif  // OLAF_QUEUE_CORE_HPP_
