// OlafQueue core: the queue logic of paper §4 / Alg. 1 with no BMv2 dependency.
//
// It mirrors the Python reference model (olaf/queue_model.py), which is the
// specification; both replay the vectors in tests/vectors/ (docs/vectors.md)
// and must agree on every decision, segment address and departing update.
// The BMv2 extern (olaf_queue_bmv2.cpp) is a thin adapter around this class;
// other shells (e.g. an ns-3 queue discipline) can wrap it the same way.
//
// The token ledger (docs/dataplane.md "The token ledger"): every APPEND returns
// a token id, a 32-bit serial number (RFC 1982) issued in order; segments leave
// the departure order only at its head, so the live tokens are consecutive and
// the head holds the oldest. dequeue_token(token, now) departs the token's own
// segment after reclaiming the older heads whose tokens were lost, or nothing
// for a stale token; heads older than max_sojourn_ns are reclaimed at every
// timed call. Σ APPEND = Σ departures + Σ lost + Σ expired + occupancy.
// dequeue() departs the head for shells whose tokens cannot be lost.
//
// Keys and chunks (docs/protocol.md "Chunks"): a deployment whose model travels
// in K = num_chunks chunks keys the queue by (cluster, chunk), key =
// cluster_id * K + chunk; Algorithm 1 runs per key, the activity count and the
// per-cluster counters stay per cluster, and the status is in updates:
// queue_util = ceil(occupancy / K), queue_size = floor(queue_size / K). K = 1 is
// the paper's queue.
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
#include <utility>
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

// What a token reaching egress did (olaf/constants.py TokenFate).
enum class TokenFate : uint8_t {
  kDeparted = constants::TOKEN_FATE_DEPARTED,
  kDepartedAfterLoss = constants::TOKEN_FATE_DEPARTED_AFTER_LOSS,
  kStale = constants::TOKEN_FATE_STALE,
};
constexpr int kNumTokenFates = constants::NUM_TOKEN_FATE;
const char *token_fate_label(TokenFate f);
bool token_fate_from_label(const std::string &label, TokenFate *out);

// One model update, or one chunk of it (docs/protocol.md): ids stamped by the
// switch, count of worker updates folded in (uint16, saturating), reward_sum
// Q15.16 int32 (saturating), gen_ts in ns (max), grads Q7.24 int32 (saturating
// sums), chunk index 0..num_chunks-1 and num_chunks K (the slice carried).
struct Update {
  uint16_t cluster_id = 0;
  uint16_t worker_id = 0;
  uint32_t seq = 0;
  uint16_t count = 1;
  int32_t reward_sum = 0;
  uint64_t gen_ts = 0;
  std::vector<int32_t> grads;
  uint16_t chunk = 0;
  uint16_t num_chunks = 1;

  bool operator==(const Update &o) const;
};

// Static parameters (fixed at construction) and runtime ones (configure()).
struct Config {
  uint32_t segments = 1;         // physical segments
  uint32_t num_clusters = 1;     // cluster ids 0 .. num_clusters-1
  uint32_t num_grads = 0;        // gradient elements per update (per chunk)
  uint32_t queue_size = 1;       // occupancy limit in segments, num_chunks .. segments
  bool reward_filter = false;    // reward filtering enabled
  int64_t reward_threshold = 0;  // T, Q15.16, >= 0
  uint64_t activity_window_ns = 1000000000ULL;
  uint64_t max_sojourn_ns = 0;  // heads older than this are reclaimed (0: never), ns
  uint32_t first_token = 0;     // token id of the first APPEND (serial, wraps at 2^32)
  uint32_t num_chunks = 1;      // K, chunks per update, 1..65535; state per (cluster, chunk)
};

enum class Error : uint8_t {
  kNone = 0,
  kBadCluster,     // cluster_id >= num_clusters
  kBadLength,      // grads.size() != num_grads
  kTimeBackwards,  // now_ns < the last event's time
  kBadChunk,       // num_chunks != the queue's, or chunk >= num_chunks
};
const char *error_text(Error e);

struct EnqueueResult {
  Error error = Error::kNone;
  Decision decision = Decision::kDropFull;
  int segment = -1;               // segment written; -1 for drops and errors
  std::optional<uint32_t> token;  // the new segment's token id (APPEND only)
};

struct Departure {
  int segment;
  Update update;
  uint32_t token;  // the segment's token id
};

struct DequeueResult {
  TokenFate fate = TokenFate::kStale;
  std::optional<Departure> departure;  // the token's own segment; empty when stale
  uint32_t lost = 0;                   // older heads reclaimed: their tokens never came (segments)
  uint32_t expired = 0;                // heads reclaimed by expiry at this call's time (segments)
};

// The status in updates (paper §5; docs/protocol.md "Chunks").
struct Status {
  uint32_t queue_util;       // Q_n = ceil(occupied segments (incl. a locked head) / K)
  uint32_t active_clusters;  // clusters seen within the activity window
  uint32_t queue_size;       // Q_max = floor(queue_size / K), >= 1
};

struct Counters {
  std::array<uint64_t, kNumDecisions> decisions{};
  std::vector<std::array<uint64_t, kNumDecisions>> per_cluster;
  std::vector<uint64_t> departures;  // per cluster
  std::vector<uint64_t> lost;        // per cluster: reclaimed, a newer token came first
  std::vector<uint64_t> expired;     // per cluster: reclaimed, older than max_sojourn_ns
  std::array<uint64_t, kNumTokenFates> token_fates{};  // dequeue_token calls by fate
  uint64_t lost_total = 0;
  uint64_t expired_total = 0;
  uint64_t errors = 0;
};

enum class Discipline : uint8_t { kOlaf = 0, kFifo = 1 };

class Queue {
 public:
  // Throws std::invalid_argument naming the bad parameter.
  Queue(const Config &config, Discipline discipline = Discipline::kOlaf);

  // Runtime writes (controller). Waiting updates are kept. Returns false
  // (and changes nothing) if queue_size is outside num_chunks..segments or the
  // threshold outside 0..2^31-1. max_sojourn_ns:
  // nullopt keeps the current value; a smaller one applies at the next timed call.
  bool configure(uint32_t queue_size, bool reward_filter, int64_t reward_threshold,
                 uint64_t activity_window_ns,
                 std::optional<uint64_t> max_sojourn_ns = std::nullopt);

  // Reclaims expired heads at now_ns, then decides (an APPEND returns its token).
  // A bad cluster, chunk, length or time is an error: counted, nothing changes.
  EnqueueResult enqueue(const Update &u, uint64_t now_ns);
  std::optional<int> lock_head();
  // Departs the head (no expiry): for shells whose tokens cannot be lost.
  std::optional<Departure> dequeue();
  // The packet of `token` reached egress at now_ns (earlier than the last
  // event: clamped to it). See the file comment and docs/dataplane.md.
  DequeueResult dequeue_token(uint32_t token, uint64_t now_ns);
  // Status at now_ns (clamped like dequeue_token), after reclaiming expired heads.
  Status status(uint64_t now_ns);

  // Place of token in the departure order (0 = head), nullopt if not live:
  // (token - head token) mod 2^32 (RFC 1982) below the occupancy.
  std::optional<uint32_t> token_position(uint32_t token) const;
  // Every internal invariant and the conservation law; empty if they hold,
  // else what is broken (tests and the fuzzer call it after every call).
  std::string check_invariants() const;

  uint32_t occupancy() const { return static_cast<uint32_t>(out_mem_addrs_.size()); }
  const Config &config() const { return config_; }
  const Counters &counters() const { return counters_; }
  Discipline discipline() const { return discipline_; }
  // Segment of the head (next to depart), -1 if empty.
  int head() const { return out_mem_addrs_.empty() ? -1 : out_mem_addrs_.front(); }
  // Token id the next APPEND gets.
  uint32_t next_token() const { return next_token_; }
  // Queue key of a valid update: cluster_id * num_chunks + chunk.
  size_t key(const Update &u) const {
    return static_cast<size_t>(u.cluster_id) * config_.num_chunks + u.chunk;
  }

 private:
  struct ReplaceStatus {
    bool flag = false;
    uint16_t worker_id = 0;
  };

  EnqueueResult append(const Update &u, bool track);
  void overwrite(int seg, const Update &n);
  void mark_replaceable(const Update &n);
  // Pops the head out of the departure order and frees it; returns its content.
  Departure free_head();
  void reclaim_head(bool lost);
  uint32_t expire(uint64_t now_ns);
  // The active-cluster count of status(): a cluster is active while its last sighting is within
  // the activity window. Each cluster's sightings (one per distinct time) wait in time order
  // and retire as they leave the window, so status() costs O(1) amortised, not O(clusters).
  void see(int cluster, uint64_t now_ns);
  void retire(uint64_t now_ns);
  void recount();  // the window changed: rebuild from last_seen_ns_

  Config config_;
  Discipline discipline_;
  std::vector<std::optional<Update>> segments_;
  std::vector<int64_t> segment_key_;  // key of the update in each segment, -1: free
  std::vector<uint32_t> segment_token_;
  std::vector<uint64_t> segment_appended_ns_;
  std::deque<int> available_mem_addrs_;
  std::deque<int> out_mem_addrs_;
  std::vector<int> cluster_status_;                    // per key; -1: no unlocked update waiting
  std::vector<ReplaceStatus> replace_status_;          // per key
  std::vector<std::optional<uint64_t>> last_seen_ns_;  // per cluster
  std::deque<std::pair<uint64_t, int>> sightings_;     // (time, cluster), within the window
  uint32_t active_count_ = 0;                          // clusters seen within the window
  int locked_ = -1;
  uint64_t now_ns_ = 0;
  uint32_t next_token_ = 0;
  Counters counters_;
};

// Fold n into q (saturating sums, gen_ts = max, q keeps worker_id, seq and
// the chunk fields).
Update aggregate(const Update &q, const Update &n);

}  // namespace olaf

#endif  // OLAF_QUEUE_CORE_HPP_
