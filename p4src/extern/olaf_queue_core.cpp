// OlafQueue core — see olaf_queue_core.hpp and olaf/queue_model.py (the spec).

#include "olaf_queue_core.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

namespace olaf {

namespace {

const auto &kLabels = constants::DECISION_LABELS;

int32_t sat_add32(int32_t a, int32_t b) {
  int64_t s = static_cast<int64_t>(a) + b;
  if (s > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (s < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(s);
}

uint16_t sat_add_u16(uint16_t a, uint16_t b) {
  uint32_t s = static_cast<uint32_t>(a) + b;
  return static_cast<uint16_t>(std::min<uint32_t>(s, 0xFFFF));
}

}  // namespace

const char *decision_label(Decision d) { return kLabels[static_cast<int>(d)]; }

bool decision_from_label(const std::string &label, Decision *out) {
  for (int i = 0; i < kNumDecisions; i++) {
    if (label == kLabels[i]) {
      *out = static_cast<Decision>(i);
      return true;
    }
  }
  return false;
}

const char *token_fate_label(TokenFate f) {
  return constants::TOKEN_FATE_LABELS[static_cast<int>(f)];
}

bool token_fate_from_label(const std::string &label, TokenFate *out) {
  for (int i = 0; i < kNumTokenFates; i++) {
    if (label == constants::TOKEN_FATE_LABELS[i]) {
      *out = static_cast<TokenFate>(i);
      return true;
    }
  }
  return false;
}

const char *error_text(Error e) {
  switch (e) {
    case Error::kNone:
      return "none";
    case Error::kBadCluster:
      return "cluster_id outside 0..num_clusters-1";
    case Error::kBadLength:
      return "number of grads differs from num_grads";
    case Error::kTimeBackwards:
      return "time went backwards";
    case Error::kBadChunk:
      return "num_chunks differs from the queue's or chunk >= num_chunks";
  }
  return "?";
}

bool Update::operator==(const Update &o) const {
  return cluster_id == o.cluster_id && worker_id == o.worker_id && seq == o.seq &&
         count == o.count && reward_sum == o.reward_sum && gen_ts == o.gen_ts && grads == o.grads &&
         chunk == o.chunk && num_chunks == o.num_chunks;
}

Update aggregate(const Update &q, const Update &n) {
  Update r = q;
  r.count = sat_add_u16(q.count, n.count);
  r.reward_sum = sat_add32(q.reward_sum, n.reward_sum);
  r.gen_ts = std::max(q.gen_ts, n.gen_ts);
  for (size_t i = 0; i < r.grads.size(); i++) r.grads[i] = sat_add32(q.grads[i], n.grads[i]);
  return r;
}

Queue::Queue(const Config &config, Discipline discipline)
    : config_(config), discipline_(discipline) {
  if (config.segments < 1) throw std::invalid_argument("segments must be >= 1");
  if (config.num_clusters < 1 || config.num_clusters > 0xFFFF)
    throw std::invalid_argument("num_clusters must be in 1..65535");
  if (config.num_chunks < 1 || config.num_chunks > 0xFFFF)
    throw std::invalid_argument("num_chunks must be in 1..65535");
  if (config.queue_size < 1 || config.queue_size > config.segments)
    throw std::invalid_argument("queue_size must be in 1..segments");
  if (config.queue_size < config.num_chunks)
    throw std::invalid_argument(
        "queue_size (segments) must be at least num_chunks: a smaller queue holds no whole "
        "update (Q_max = floor(queue_size / num_chunks) = 0)");
  if (config.reward_threshold < 0 || config.reward_threshold > 0x7FFFFFFF)
    throw std::invalid_argument("reward_threshold must be in 0..2^31-1 (Q15.16)");
  segments_.resize(config.segments);
  segment_key_.assign(config.segments, -1);
  segment_token_.assign(config.segments, 0);
  segment_appended_ns_.assign(config.segments, 0);
  next_token_ = config.first_token;
  for (uint32_t s = 0; s < config.segments; s++)
    available_mem_addrs_.push_back(static_cast<int>(s));
  const size_t keys = static_cast<size_t>(config.num_clusters) * config.num_chunks;
  cluster_status_.assign(keys, -1);
  replace_status_.resize(keys);
  last_seen_ns_.resize(config.num_clusters);
  counters_.per_cluster.resize(config.num_clusters);
  counters_.departures.assign(config.num_clusters, 0);
  counters_.lost.assign(config.num_clusters, 0);
  counters_.expired.assign(config.num_clusters, 0);
}

bool Queue::configure(uint32_t queue_size, bool reward_filter, int64_t reward_threshold,
                      uint64_t activity_window_ns, std::optional<uint64_t> max_sojourn_ns) {
  if (queue_size < 1 || queue_size > config_.segments || queue_size < config_.num_chunks)
    return false;
  if (reward_threshold < 0 || reward_threshold > 0x7FFFFFFF) return false;
  config_.queue_size = queue_size;
  config_.reward_filter = reward_filter;
  config_.reward_threshold = reward_threshold;
  if (activity_window_ns != config_.activity_window_ns) {
    config_.activity_window_ns = activity_window_ns;
    recount();
  }
  if (max_sojourn_ns) config_.max_sojourn_ns = *max_sojourn_ns;
  return true;
}

EnqueueResult Queue::enqueue(const Update &n, uint64_t now_ns) {
  EnqueueResult r;
  if (n.cluster_id >= config_.num_clusters)
    r.error = Error::kBadCluster;
  else if (n.num_chunks != config_.num_chunks || n.chunk >= n.num_chunks)
    r.error = Error::kBadChunk;
  else if (n.grads.size() != config_.num_grads)
    r.error = Error::kBadLength;
  else if (now_ns < now_ns_)
    r.error = Error::kTimeBackwards;
  if (r.error != Error::kNone) {
    counters_.errors++;
    return r;
  }
  now_ns_ = now_ns;
  expire(now_ns);
  const int c = n.cluster_id;
  see(c, now_ns);
  const size_t k = key(n);

  const int seg = cluster_status_[k];
  if (discipline_ == Discipline::kFifo || seg < 0) {
    r = append(n, discipline_ == Discipline::kOlaf);
  } else {
    const Update &q = *segments_[seg];
    ReplaceStatus &rs = replace_status_[k];
    bool decided = false;
    if (config_.reward_filter) {
      // Compare mean rewards without division (paper Alg. 1; olaf/queue_model.py).
      const __int128 d = static_cast<__int128>(n.reward_sum) * q.count -
                         static_cast<__int128>(q.reward_sum) * n.count;
      const __int128 limit = static_cast<__int128>(config_.reward_threshold) * n.count * q.count;
      if (d < -limit) {
        r.decision = Decision::kDropReward;
        decided = true;
      } else if (d > limit) {
        overwrite(seg, n);
        r.decision = Decision::kReplaceReward;
        r.segment = seg;
        decided = true;
      }
    }
    if (!decided) {
      r.segment = seg;
      if (rs.flag && rs.worker_id == n.worker_id && n.count == 1) {
        overwrite(seg, n);
        r.decision = Decision::kReplaceWorker;
      } else {
        segments_[seg] = aggregate(q, n);
        rs = ReplaceStatus{};
        r.decision = Decision::kAggregate;
      }
    }
  }
  const int d = static_cast<int>(r.decision);
  counters_.decisions[d]++;
  counters_.per_cluster[c][d]++;
  return r;
}

EnqueueResult Queue::append(const Update &n, bool track) {
  EnqueueResult r;
  if (out_mem_addrs_.size() >= config_.queue_size || available_mem_addrs_.empty()) {
    r.decision = Decision::kDropFull;
    return r;
  }
  const int seg = available_mem_addrs_.front();
  available_mem_addrs_.pop_front();
  segments_[seg] = n;
  segment_key_[seg] = static_cast<int64_t>(key(n));
  segment_token_[seg] = next_token_;
  segment_appended_ns_[seg] = now_ns_;
  r.token = next_token_++;  // uint32_t: wraps modulo 2^32 (RFC 1982)
  out_mem_addrs_.push_back(seg);
  if (track) {
    cluster_status_[key(n)] = seg;
    mark_replaceable(n);
  }
  r.decision = Decision::kAppend;
  r.segment = seg;
  return r;
}

void Queue::overwrite(int seg, const Update &n) {
  segments_[seg] = n;
  mark_replaceable(n);
}

void Queue::mark_replaceable(const Update &n) {
  ReplaceStatus &rs = replace_status_[key(n)];
  rs.flag = n.count == 1;
  rs.worker_id = rs.flag ? n.worker_id : 0;
}

std::optional<int> Queue::lock_head() {
  if (out_mem_addrs_.empty()) return std::nullopt;
  const int head = out_mem_addrs_.front();
  if (locked_ != head) {
    locked_ = head;
    const size_t c = static_cast<size_t>(segment_key_[head]);
    if (cluster_status_[c] == head) {
      cluster_status_[c] = -1;
      replace_status_[c] = ReplaceStatus{};
    }
  }
  return head;
}

Departure Queue::free_head() {
  const int seg = out_mem_addrs_.front();
  out_mem_addrs_.pop_front();
  Departure dep{seg, std::move(*segments_[seg]), segment_token_[seg]};
  const size_t c = static_cast<size_t>(segment_key_[seg]);
  if (cluster_status_[c] == seg) {
    cluster_status_[c] = -1;
    replace_status_[c] = ReplaceStatus{};
  }
  if (locked_ == seg) locked_ = -1;
  segments_[seg].reset();
  segment_key_[seg] = -1;
  segment_token_[seg] = 0;
  segment_appended_ns_[seg] = 0;
  available_mem_addrs_.push_back(seg);
  return dep;
}

std::optional<Departure> Queue::dequeue() {
  if (!lock_head()) return std::nullopt;
  Departure dep = free_head();
  counters_.departures[dep.update.cluster_id]++;
  return dep;
}

void Queue::reclaim_head(bool lost) {
  const Departure d = free_head();
  if (lost) {
    counters_.lost[d.update.cluster_id]++;
    counters_.lost_total++;
  } else {
    counters_.expired[d.update.cluster_id]++;
    counters_.expired_total++;
  }
}

uint32_t Queue::expire(uint64_t now_ns) {
  uint32_t n = 0;
  const uint64_t limit = config_.max_sojourn_ns;
  while (limit != 0 && !out_mem_addrs_.empty() &&
         now_ns - segment_appended_ns_[out_mem_addrs_.front()] > limit) {
    reclaim_head(false);
    n++;
  }
  return n;
}

std::optional<uint32_t> Queue::token_position(uint32_t token) const {
  if (out_mem_addrs_.empty()) return std::nullopt;
  const uint32_t pos = token - segment_token_[out_mem_addrs_.front()];  // modulo 2^32
  if (pos >= out_mem_addrs_.size()) return std::nullopt;
  return pos;
}

DequeueResult Queue::dequeue_token(uint32_t token, uint64_t now_ns) {
  now_ns_ = std::max(now_ns_, now_ns);
  DequeueResult r;
  r.expired = expire(now_ns_);
  const auto pos = token_position(token);
  if (!pos) {
    r.fate = TokenFate::kStale;
  } else {
    for (uint32_t i = 0; i < *pos; i++) reclaim_head(true);
    r.lost = *pos;
    r.departure = dequeue();
    r.fate = *pos == 0 ? TokenFate::kDeparted : TokenFate::kDepartedAfterLoss;
  }
  counters_.token_fates[static_cast<int>(r.fate)]++;
  return r;
}

void Queue::see(int cluster, uint64_t now_ns) {
  retire(now_ns);
  std::optional<uint64_t> &last = last_seen_ns_[cluster];
  // Inactive: never seen, or its last sighting has just retired.
  if (!last || now_ns - *last > config_.activity_window_ns) active_count_++;
  if (last != now_ns) {
    last = now_ns;
    sightings_.emplace_back(now_ns, cluster);
  }
}

void Queue::retire(uint64_t now_ns) {
  while (!sightings_.empty() && now_ns - sightings_.front().first > config_.activity_window_ns) {
    const auto [t, c] = sightings_.front();
    sightings_.pop_front();
    if (last_seen_ns_[c] == t) active_count_--;  // its last sighting: the cluster leaves the window
  }
}

void Queue::recount() {
  std::vector<std::pair<uint64_t, int>> seen;
  for (size_t c = 0; c < last_seen_ns_.size(); c++) {
    const auto &s = last_seen_ns_[c];
    if (s && now_ns_ - *s <= config_.activity_window_ns) seen.emplace_back(*s, static_cast<int>(c));
  }
  std::sort(seen.begin(), seen.end());
  sightings_.assign(seen.begin(), seen.end());
  active_count_ = static_cast<uint32_t>(seen.size());
}

Status Queue::status(uint64_t now_ns) {
  now_ns_ = std::max(now_ns_, now_ns);
  expire(now_ns_);
  retire(now_ns_);
  const uint32_t k = config_.num_chunks;
  return Status{(occupancy() + k - 1) / k, active_count_, config_.queue_size / k};
}

std::string Queue::check_invariants() const {
  std::ostringstream bad;
  const uint32_t n = config_.segments;
  std::vector<int> seen(n, 0);
  for (int s : out_mem_addrs_) seen[s]++;
  for (int s : available_mem_addrs_) seen[s]++;
  for (uint32_t s = 0; s < n; s++)
    if (seen[s] != 1) bad << "segment " << s << " is in " << seen[s] << " lists; ";
  std::vector<bool> occupied(n, false);
  for (int s : out_mem_addrs_) occupied[s] = true;
  for (uint32_t s = 0; s < n; s++) {
    if (segments_[s].has_value() != occupied[s]) bad << "segment " << s << " content; ";
    if (!occupied[s] &&
        (segment_key_[s] != -1 || segment_token_[s] != 0 || segment_appended_ns_[s] != 0))
      bad << "free segment " << s << " keeps state; ";
  }
  if (locked_ != -1 && (out_mem_addrs_.empty() || locked_ != out_mem_addrs_.front()))
    bad << "lock not at the head; ";
  if (out_mem_addrs_.size() > n) bad << "occupancy above segments; ";
  if (config_.queue_size < config_.num_chunks) bad << "queue_size below num_chunks; ";
  for (int s : out_mem_addrs_) {
    const Update &u = *segments_[s];
    if (u.num_chunks != config_.num_chunks || u.chunk >= u.num_chunks ||
        segment_key_[s] != static_cast<int64_t>(key(u)))
      bad << "segment " << s << " holds an update of another key; ";
  }
  // Keys with an unlocked update waiting (a map: the key space can be large).
  std::map<int64_t, int> unlocked_of;
  for (int s : out_mem_addrs_)
    if (s != locked_) unlocked_of[segment_key_[s]]++;
  for (size_t c = 0; c < cluster_status_.size(); c++) {
    const int cs = cluster_status_[c];
    if (cs < 0) {
      if (replace_status_[c].flag) bad << "key " << c << " replaceable without update; ";
      continue;
    }
    if (!occupied[cs] || cs == locked_ || segment_key_[cs] != static_cast<int64_t>(c))
      bad << "key " << c << " points to a bad segment; ";
  }
  if (discipline_ == Discipline::kOlaf)
    for (const auto &[c, n_unlocked] : unlocked_of)
      if (n_unlocked > 1) bad << "two unlocked updates of key " << c << "; ";
  if (!out_mem_addrs_.empty()) {
    const uint32_t head = segment_token_[out_mem_addrs_.front()];
    uint32_t i = 0;
    uint64_t last_t = 0;
    for (int s : out_mem_addrs_) {
      if (segment_token_[s] != static_cast<uint32_t>(head + i)) bad << "tokens not consecutive; ";
      if (segment_appended_ns_[s] < last_t) bad << "append times out of order; ";
      last_t = segment_appended_ns_[s];
      i++;
    }
    if (static_cast<uint32_t>(head + i) != next_token_)
      bad << "tail token is not the last issued; ";
  }
  uint64_t out = 0;
  for (uint32_t c = 0; c < config_.num_clusters; c++)
    out += counters_.departures[c] + counters_.lost[c] + counters_.expired[c];
  const uint64_t appended = counters_.decisions[static_cast<int>(Decision::kAppend)];
  if (appended != out + out_mem_addrs_.size())
    bad << "segments not conserved: " << appended << " appended, " << out << " gone, "
        << out_mem_addrs_.size() << " waiting; ";
  return bad.str();
}

}  // namespace olaf
