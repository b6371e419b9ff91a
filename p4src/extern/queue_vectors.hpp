// The OlafQueue vector format (docs/vectors.md) on the C++ side: JSON <-> core
// types, and apply_event(), the one place that computes what the C++ core
// produces for an event (the counterpart of olaf.vectors.format.outcome in
// Python). Used by the vector replay (test_queue_core.cpp) and the fuzzer's trace
// writer (fuzz_queue_core.cpp). Header-only; needs nlohmann/json.

#ifndef OLAF_QUEUE_VECTORS_HPP_
#define OLAF_QUEUE_VECTORS_HPP_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "olaf_queue_core.hpp"

namespace olaf::vectors {

using nlohmann::json;

inline Update update_from_json(const json &j) {
  Update u;
  u.cluster_id = j.at("cluster_id").get<uint16_t>();
  u.worker_id = j.at("worker_id").get<uint16_t>();
  u.seq = j.value("seq", 0u);
  u.count = j.at("count").get<uint16_t>();
  u.reward_sum = j.at("reward_sum").get<int32_t>();
  u.gen_ts = j.at("gen_ts").get<uint64_t>();
  u.grads = j.at("grads").get<std::vector<int32_t>>();
  u.chunk = j.value("chunk", uint16_t{0});
  u.num_chunks = j.value("num_chunks", uint16_t{1});
  return u;
}

// chunk and num_chunks only when the update is one of several chunks (num_chunks
// > 1), as olaf.update.Update.to_dict writes them.
inline json update_to_json(const Update &u) {
  json j{{"cluster_id", u.cluster_id},
         {"worker_id", u.worker_id},
         {"seq", u.seq},
         {"count", u.count},
         {"reward_sum", u.reward_sum},
         {"gen_ts", u.gen_ts},
         {"grads", u.grads}};
  if (u.num_chunks != 1) {
    j["chunk"] = u.chunk;
    j["num_chunks"] = u.num_chunks;
  }
  return j;
}

// The "config" object of a vector file -> (Config, Discipline).
inline std::pair<Config, Discipline> config_from_json(const json &c) {
  Config cfg;
  cfg.segments = c.at("segments").get<uint32_t>();
  cfg.num_clusters = c.at("num_clusters").get<uint32_t>();
  cfg.num_grads = c.at("num_grads").get<uint32_t>();
  cfg.queue_size = c.at("queue_size").get<uint32_t>();
  cfg.reward_filter = !c.at("reward_threshold").is_null();
  cfg.reward_threshold = cfg.reward_filter ? c.at("reward_threshold").get<int64_t>() : 0;
  cfg.activity_window_ns = c.at("activity_window_ns").get<uint64_t>();
  cfg.max_sojourn_ns = c.value("max_sojourn_ns", uint64_t{0});
  cfg.first_token = c.value("first_token", uint32_t{0});
  cfg.num_chunks = c.value("num_chunks", uint32_t{1});
  const auto disc =
      c.value("discipline", std::string("olaf")) == "fifo" ? Discipline::kFifo : Discipline::kOlaf;
  return {cfg, disc};
}

// num_chunks only when it is not 1, as olaf.vectors.format writes it.
inline json config_to_json(const Config &c, Discipline d) {
  json j{{"discipline", d == Discipline::kFifo ? "fifo" : "olaf"},
         {"segments", c.segments},
         {"num_clusters", c.num_clusters},
         {"num_grads", c.num_grads},
         {"queue_size", c.queue_size},
         {"reward_threshold", c.reward_filter ? json(c.reward_threshold) : json(nullptr)},
         {"activity_window_ns", c.activity_window_ns},
         {"max_sojourn_ns", c.max_sojourn_ns},
         {"first_token", c.first_token}};
  if (c.num_chunks != 1) j["num_chunks"] = c.num_chunks;
  return j;
}

// The "final_counters" object: decisions, per cluster (decisions, departures,
// lost, expired) and token fates.
inline json counters_to_json(const Queue &q) {
  const auto &k = q.counters();
  json decisions = json::object();
  for (int d = 0; d < kNumDecisions; d++)
    decisions[decision_label(static_cast<Decision>(d))] = k.decisions[d];
  json per_cluster = json::array();
  for (size_t c = 0; c < k.per_cluster.size(); c++) {
    json row = json::object();
    for (int d = 0; d < kNumDecisions; d++)
      row[decision_label(static_cast<Decision>(d))] = k.per_cluster[c][d];
    row["departures"] = k.departures[c];
    row["lost"] = k.lost[c];
    row["expired"] = k.expired[c];
    per_cluster.push_back(row);
  }
  json fates = json::object();
  for (int f = 0; f < kNumTokenFates; f++)
    fates[token_fate_label(static_cast<TokenFate>(f))] = k.token_fates[f];
  return json{{"decisions", decisions}, {"per_cluster", per_cluster}, {"token_fates", fates}};
}

// Applies event `e` (its op and inputs; any "expect" is ignored) to `q` and
// returns what the core produced, in the vector's "expect" form (null for
// configure). Throws std::invalid_argument for an unknown op or a configure the
// core refuses; an enqueue the core rejects yields {"error": text}.
inline json apply_event(Queue &q, const json &e) {
  const std::string op = e.at("op");
  auto seg_or_null = [](int seg) { return seg < 0 ? json(nullptr) : json(seg); };
  if (op == "enqueue") {
    const auto r = q.enqueue(update_from_json(e.at("update")), e.at("t_ns").get<uint64_t>());
    if (r.error != Error::kNone) return json{{"error", error_text(r.error)}};
    return json{{"decision", decision_label(r.decision)},
                {"segment", seg_or_null(r.segment)},
                {"token", r.token ? json(*r.token) : json(nullptr)}};
  }
  if (op == "lock") {
    const auto s = q.lock_head();
    return json{{"segment", s ? json(*s) : json(nullptr)}};
  }
  if (op == "dequeue") {
    const auto d = q.dequeue();
    return d ? json{{"segment", d->segment}, {"update", update_to_json(d->update)}} : json(nullptr);
  }
  if (op == "dequeue_token") {
    const auto r = q.dequeue_token(e.at("token").get<uint32_t>(), e.at("t_ns").get<uint64_t>());
    const auto &d = r.departure;
    return json{{"fate", token_fate_label(r.fate)},
                {"lost", r.lost},
                {"expired", r.expired},
                {"segment", d ? json(d->segment) : json(nullptr)},
                {"update", d ? update_to_json(d->update) : json(nullptr)}};
  }
  if (op == "status") {
    const auto s = q.status(e.at("t_ns").get<uint64_t>());
    return json{{"queue_util", s.queue_util},
                {"active_clusters", s.active_clusters},
                {"queue_size", s.queue_size}};
  }
  if (op == "configure") {
    const auto &k = q.config();
    const uint32_t qs = e.contains("queue_size") ? e["queue_size"].get<uint32_t>() : k.queue_size;
    bool filter = k.reward_filter;
    int64_t thr = k.reward_threshold;
    if (e.contains("reward_threshold")) {
      filter = !e["reward_threshold"].is_null();
      thr = filter ? e["reward_threshold"].get<int64_t>() : 0;
    }
    const uint64_t win = e.contains("activity_window_ns") ? e["activity_window_ns"].get<uint64_t>()
                                                          : k.activity_window_ns;
    const uint64_t soj =
        e.contains("max_sojourn_ns") ? e["max_sojourn_ns"].get<uint64_t>() : k.max_sojourn_ns;
    if (!q.configure(qs, filter, thr, win, soj))
      throw std::invalid_argument("configure rejected: " + e.dump());
    return json(nullptr);
  }
  throw std::invalid_argument("unknown op " + op);
}

}  // namespace olaf::vectors

#endif  // OLAF_QUEUE_VECTORS_HPP_
