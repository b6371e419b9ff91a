// Replays the shared OlafQueue vectors (docs/vectors.md) through the C++ core
// with no switch: every decision, segment, token, departing update, token fate,
// status and the final counters must equal the reference model's, and the
// core's invariants (check_invariants, with the conservation law) must hold
// after every event.
//
// Usage: test_queue_core VECTOR.json...   (exit 0 iff every file matches)

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "olaf_queue_core.hpp"

using nlohmann::json;

namespace {

olaf::Update update_from_json(const json &j) {
  olaf::Update u;
  u.cluster_id = j.at("cluster_id").get<uint16_t>();
  u.worker_id = j.at("worker_id").get<uint16_t>();
  u.seq = j.value("seq", 0u);
  u.count = j.at("count").get<uint16_t>();
  u.reward_sum = j.at("reward_sum").get<int32_t>();
  u.gen_ts = j.at("gen_ts").get<uint64_t>();
  u.grads = j.at("grads").get<std::vector<int32_t>>();
  return u;
}

json update_to_json(const olaf::Update &u) {
  return json{{"cluster_id", u.cluster_id},
              {"worker_id", u.worker_id},
              {"seq", u.seq},
              {"count", u.count},
              {"reward_sum", u.reward_sum},
              {"gen_ts", u.gen_ts},
              {"grads", u.grads}};
}

json seg_or_null(int seg) { return seg < 0 ? json(nullptr) : json(seg); }

template <typename T>
json opt_or_null(const std::optional<T> &v) {
  return v ? json(*v) : json(nullptr);
}

json counters_to_json(const olaf::Queue &q) {
  const auto &k = q.counters();
  json decisions = json::object();
  for (int d = 0; d < olaf::kNumDecisions; d++)
    decisions[olaf::decision_label(static_cast<olaf::Decision>(d))] = k.decisions[d];
  json per_cluster = json::array();
  for (size_t c = 0; c < k.per_cluster.size(); c++) {
    json row = json::object();
    for (int d = 0; d < olaf::kNumDecisions; d++)
      row[olaf::decision_label(static_cast<olaf::Decision>(d))] = k.per_cluster[c][d];
    row["departures"] = k.departures[c];
    row["lost"] = k.lost[c];
    row["expired"] = k.expired[c];
    per_cluster.push_back(row);
  }
  json fates = json::object();
  for (int f = 0; f < olaf::kNumTokenFates; f++)
    fates[olaf::token_fate_label(static_cast<olaf::TokenFate>(f))] = k.token_fates[f];
  return json{{"decisions", decisions}, {"per_cluster", per_cluster}, {"token_fates", fates}};
}

// Returns the number of mismatches (printing each), or -1 on a format error.
int replay(const std::string &path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << path << ": cannot open\n";
    return -1;
  }
  json v;
  try {
    in >> v;
  } catch (const std::exception &e) {
    std::cerr << path << ": not JSON: " << e.what() << "\n";
    return -1;
  }
  const json &c = v.at("config");
  olaf::Config cfg;
  cfg.segments = c.at("segments").get<uint32_t>();
  cfg.num_clusters = c.at("num_clusters").get<uint32_t>();
  cfg.num_grads = c.at("num_grads").get<uint32_t>();
  cfg.queue_size = c.at("queue_size").get<uint32_t>();
  cfg.reward_filter = !c.at("reward_threshold").is_null();
  cfg.reward_threshold = cfg.reward_filter ? c.at("reward_threshold").get<int64_t>() : 0;
  cfg.activity_window_ns = c.at("activity_window_ns").get<uint64_t>();
  cfg.max_sojourn_ns = c.value("max_sojourn_ns", uint64_t{0});
  cfg.first_token = c.value("first_token", uint32_t{0});
  const auto disc = c.value("discipline", std::string("olaf")) == "fifo" ? olaf::Discipline::kFifo
                                                                         : olaf::Discipline::kOlaf;
  olaf::Queue q(cfg, disc);

  int bad = 0;
  const json &events = v.at("events");
  for (size_t i = 0; i < events.size(); i++) {
    const json &e = events[i];
    const std::string op = e.at("op");
    json got;
    if (op == "enqueue") {
      auto r = q.enqueue(update_from_json(e.at("update")), e.at("t_ns").get<uint64_t>());
      if (r.error != olaf::Error::kNone)
        got = json{{"error", olaf::error_text(r.error)}};
      else
        got = json{{"decision", olaf::decision_label(r.decision)},
                   {"segment", seg_or_null(r.segment)},
                   {"token", opt_or_null(r.token)}};
    } else if (op == "lock") {
      auto s = q.lock_head();
      got = json{{"segment", s ? json(*s) : json(nullptr)}};
    } else if (op == "dequeue") {
      auto d = q.dequeue();
      got =
          d ? json{{"segment", d->segment}, {"update", update_to_json(d->update)}} : json(nullptr);
    } else if (op == "dequeue_token") {
      const auto r =
          q.dequeue_token(e.at("token").get<uint32_t>(), e.at("t_ns").get<uint64_t>());
      const auto &d = r.departure;
      got = json{{"fate", olaf::token_fate_label(r.fate)},
                 {"lost", r.lost},
                 {"expired", r.expired},
                 {"segment", d ? json(d->segment) : json(nullptr)},
                 {"update", d ? update_to_json(d->update) : json(nullptr)}};
    } else if (op == "status") {
      auto s = q.status(e.at("t_ns").get<uint64_t>());
      got = json{{"queue_util", s.queue_util},
                 {"active_clusters", s.active_clusters},
                 {"queue_size", s.queue_size}};
    } else if (op == "configure") {
      const auto &k = q.config();
      uint32_t qs = e.contains("queue_size") ? e["queue_size"].get<uint32_t>() : k.queue_size;
      bool filt = k.reward_filter;
      int64_t thr = k.reward_threshold;
      if (e.contains("reward_threshold")) {
        filt = !e["reward_threshold"].is_null();
        thr = filt ? e["reward_threshold"].get<int64_t>() : 0;
      }
      uint64_t win = e.contains("activity_window_ns") ? e["activity_window_ns"].get<uint64_t>()
                                                      : k.activity_window_ns;
      uint64_t soj =
          e.contains("max_sojourn_ns") ? e["max_sojourn_ns"].get<uint64_t>() : k.max_sojourn_ns;
      if (!q.configure(qs, filt, thr, win, soj)) {
        std::cerr << path << ": event " << i << ": configure rejected\n";
        bad++;
      }
      continue;
    } else {
      std::cerr << path << ": event " << i << ": unknown op " << op << "\n";
      return -1;
    }
    if (got != e.at("expect")) {
      if (bad < 5)
        std::cerr << path << ": event " << i << " (" << op << "): expected "
                  << e.at("expect").dump() << ", got " << got.dump() << "\n";
      bad++;
    }
    const std::string broken = q.check_invariants();
    if (!broken.empty()) {
      std::cerr << path << ": event " << i << " (" << op << "): invariant broken: " << broken
                << "\n";
      bad++;
    }
  }
  if (v.contains("final_counters") && counters_to_json(q) != v["final_counters"]) {
    std::cerr << path << ": final counters differ: expected " << v["final_counters"].dump()
              << ", got " << counters_to_json(q).dump() << "\n";
    bad++;
  }
  return bad;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " VECTOR.json...\n";
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    int bad;
    try {
      bad = replay(argv[i]);
    } catch (const std::exception &e) {
      std::cerr << argv[i] << ": " << e.what() << "\n";
      bad = -1;
    }
    std::cout << (bad == 0 ? "ok    " : "FAIL  ") << argv[i] << "\n";
    if (bad != 0) failed++;
  }
  std::cout << (argc - 1 - failed) << "/" << (argc - 1)
            << " vector files match the reference model\n";
  return failed ? 1 : 0;
}
