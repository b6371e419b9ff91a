// Regression test of the token ledger (docs/dataplane.md "The
// token ledger"): the C++ core behind a simulated traffic-manager queue that
// drops each token with probability --loss (0.1 %) over --updates (10,000)
// worker updates on a congested PS port.
//
// Model: updates of 16 clusters x 3 workers arrive as a Poisson stream (mean gap
// 60 us); every APPEND's token enters the traffic manager's FIFO (unless lost),
// which sends one packet per 100 us to egress; a token reaching egress is handed
// to the queue. Mode "ledger" calls dequeue_token(token, now) with max_sojourn_ns
// set to the FIFO's worst-case delay plus a margin; mode "legacy" pops the head
// whatever token arrives (the egress before the ledger, max_sojourn_ns = 0). At
// the end the FIFO drains and time moves past max_sojourn_ns.
//
// Checked for every departure: its segment's token is the arriving token and its
// content is what that token's segment accumulated (a shadow copy kept with
// olaf::aggregate). Printed (one JSON object): updates, tokens dropped, appends,
// departures, wrong departures, leaked segments (waiting at the end with no token
// left to release them), reclaimed lost/expired, stale tokens.
//
// Exit status: mode ledger 0 iff no wrong departure, no leaked segment, every
// dropped token's segment reclaimed, no stale token and the core's invariants
// held after every call; mode legacy 0 (it reproduces the bug and reports it).
//
// Usage: test_token_loss --mode ledger|legacy [--updates N] [--loss P] [--seed S]

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "olaf_queue_core.hpp"

namespace {

struct Options {
  std::string mode = "ledger";
  uint64_t updates = 10000;
  double loss = 0.001;
  uint64_t seed = 1;
};

bool parse(int argc, char **argv, Options *o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode" && (v == "ledger" || v == "legacy"))
      o->mode = v;
    else if (k == "--updates")
      o->updates = std::stoull(v);
    else if (k == "--loss")
      o->loss = std::stod(v);
    else if (k == "--seed")
      o->seed = std::stoull(v);
    else
      return false;
  }
  return argc % 2 == 1;
}

constexpr uint64_t kGapNs = 60000;       // mean gap between updates
constexpr uint64_t kServiceNs = 100000;  // the PS port sends one packet per 100 us
constexpr uint32_t kClusters = 16;
constexpr uint32_t kWorkersPerCluster = 3;
constexpr uint32_t kSegments = 8;

struct Result {
  uint64_t updates = 0, dropped_tokens = 0, departures = 0, wrong = 0, leaked = 0, stale = 0;
  bool invariants = true;
};

}  // namespace

int main(int argc, char **argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) {
    std::cerr << "usage: " << argv[0]
              << " --mode ledger|legacy [--updates N] [--loss P] [--seed S]\n";
    return 2;
  }
  const bool ledger = opt.mode == "ledger";
  olaf::Config cfg;
  cfg.segments = kSegments;
  cfg.queue_size = kSegments;
  cfg.num_clusters = kClusters;
  cfg.num_grads = 4;
  // The FIFO holds at most `segments` tokens: worst-case sojourn segments * service
  // time; the margin covers the last token's wait behind the service clock.
  cfg.max_sojourn_ns = ledger ? 4 * kSegments * kServiceNs : 0;
  olaf::Queue q(cfg);

  std::mt19937_64 rng(opt.seed);
  std::exponential_distribution<double> gap(1.0 / kGapNs);
  std::bernoulli_distribution lose(opt.loss);
  std::uniform_int_distribution<uint32_t> cluster(0, kClusters - 1),
      worker(0, kWorkersPerCluster - 1);
  std::uniform_int_distribution<int32_t> grad(-1000, 1000);

  std::deque<uint32_t> tm;                  // tokens in the traffic manager's queue
  std::map<uint32_t, olaf::Update> shadow;  // token -> the content its segment must carry
  std::map<int, uint32_t> token_of_segment;
  Result r;
  uint64_t now = 0, next_arrival = 0, next_service = kServiceNs;

  auto check = [&]() {
    if (!q.check_invariants().empty()) {
      std::cerr << "invariant broken: " << q.check_invariants() << "\n";
      r.invariants = false;
    }
  };
  auto serve = [&]() {
    const uint32_t token = tm.front();
    tm.pop_front();
    std::optional<olaf::Departure> dep;
    if (ledger) {
      const auto d = q.dequeue_token(token, now);
      if (d.fate == olaf::TokenFate::kStale) r.stale++;
      dep = d.departure;
    } else {
      dep = q.dequeue();
    }
    check();
    if (!dep) return;
    r.departures++;
    if (dep->token != token || !(dep->update == shadow.at(token))) r.wrong++;
  };

  while (r.updates < opt.updates || !tm.empty()) {
    const bool arrive = r.updates < opt.updates && (tm.empty() || next_arrival < next_service);
    if (arrive) {
      now = next_arrival;
      next_arrival = now + 1 + static_cast<uint64_t>(gap(rng));
      olaf::Update u;
      u.cluster_id = static_cast<uint16_t>(cluster(rng));
      u.worker_id = static_cast<uint16_t>(u.cluster_id * kWorkersPerCluster + worker(rng));
      u.seq = static_cast<uint32_t>(r.updates);
      u.gen_ts = now;
      for (int i = 0; i < 4; i++) u.grads.push_back(grad(rng));
      r.updates++;
      const auto e = q.enqueue(u, now);
      check();
      if (e.decision == olaf::Decision::kAppend) {
        shadow[*e.token] = u;
        token_of_segment[e.segment] = *e.token;
        if (lose(rng))
          r.dropped_tokens++;
        else
          tm.push_back(*e.token);
      } else if (e.decision == olaf::Decision::kAggregate) {
        olaf::Update &w = shadow.at(token_of_segment.at(e.segment));
        w = olaf::aggregate(w, u);
      } else if (e.segment >= 0) {
        shadow.at(token_of_segment.at(e.segment)) = u;
      }
    } else {
      now = std::max(now, next_service);
      next_service = now + kServiceNs;
      if (!tm.empty()) serve();
    }
  }
  // The traffic manager is empty: no token is left to release a waiting segment.
  if (ledger) q.status(now + cfg.max_sojourn_ns + 1);
  check();
  r.leaked = q.occupancy();

  const auto &k = q.counters();
  const uint64_t appends = k.decisions[static_cast<int>(olaf::Decision::kAppend)];
  const uint64_t drop_full = k.decisions[static_cast<int>(olaf::Decision::kDropFull)];
  std::cout << "{\"mode\": \"" << opt.mode << "\", \"updates\": " << r.updates
            << ", \"loss\": " << opt.loss << ", \"tokens_dropped\": " << r.dropped_tokens
            << ", \"appends\": " << appends << ", \"drop_full\": " << drop_full
            << ", \"departures\": " << r.departures << ", \"wrong_departures\": " << r.wrong
            << ", \"leaked_segments\": " << r.leaked << ", \"lost\": " << k.lost_total
            << ", \"expired\": " << k.expired_total << ", \"stale\": " << r.stale
            << ", \"invariants\": " << (r.invariants ? "true" : "false") << "}\n";
  if (!ledger) return 0;
  const bool ok = r.wrong == 0 && r.leaked == 0 && r.stale == 0 && r.invariants &&
                  k.lost_total + k.expired_total == r.dropped_tokens;
  return ok ? 0 : 1;
}
