// Fuzzing the OlafQueue core (olaf_queue_core.hpp) under ASan/UBSan.
//
// The input bytes are decoded into a configuration (K = num_chunks 1..4 chunks
// per update) and a sequence of calls: enqueue of a chunk (including invalid
// ones: cluster out of range, wrong num_chunks or chunk >= K, wrong length, time
// going backwards, which must change nothing), dequeue_token with the tokens of
// a simulated traffic-manager queue that loses, duplicates and reorders them
// (plus tokens that were never issued), dequeue / lock_head, status and
// configure (including refused values). After every call the core's invariants
// and the conservation law (Queue::check_invariants) must hold, and every
// dequeue_token must release exactly the token's own segment, or nothing, after
// reclaiming only older segments; a departure must carry the content its token's
// segment accumulated (a shadow copy kept here with olaf::aggregate). A failed
// check aborts, so libFuzzer keeps the input.
//
// Two entry points (one decoder):
//  * LLVMFuzzerTestOneInput (clang -fsanitize=fuzzer): `make fuzz-core`;
//  * with -DOLAF_FUZZ_TRACE_MAIN, a program that replays input files and writes
//    each as a trace (JSON lines: {"config"}, then per valid call {"event"} before
//    it and {"expect"} after it, then {"final_counters"}; {"failure"} if a check
//    failed) for the differential step against the Python model
//    (olaf.vectors.differential; docs/vectors.md "Fuzzing").
//
// Usage of the trace program: fuzz_queue_trace OUT_DIR INPUT...

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "olaf_queue_core.hpp"
#include "queue_vectors.hpp"

namespace {

using nlohmann::json;
using olaf::vectors::apply_event;
using olaf::vectors::update_to_json;

constexpr uint32_t kTokenModulus32Max = 0xFFFFFFFFu;

class Bytes {
 public:
  Bytes(const uint8_t *data, size_t size) : p_(data), n_(size) {}
  bool done() const { return i_ >= n_; }
  uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = (v << 8) | u8();
    return v;
  }
  template <typename T, size_t N>
  T pick(const T (&table)[N]) {
    return table[u8() % N];
  }

 private:
  const uint8_t *p_;
  size_t n_;
  size_t i_ = 0;
};

// Receives the trace; the libFuzzer entry point passes none.
class Trace {
 public:
  explicit Trace(std::ostream *out) : out_(out) {}
  void line(const json &j) {
    if (out_) *out_ << j.dump() << "\n" << std::flush;
  }

 private:
  std::ostream *out_;
};

[[noreturn]] void fail(Trace &trace, const std::string &what) {
  trace.line(json{{"failure", what}});
  std::fprintf(stderr, "fuzz_queue_core: %s\n", what.c_str());
  std::abort();
}

class Driver {
 public:
  Driver(Bytes &in, Trace &trace) : in_(in), trace_(trace) {}

  void run() {
    olaf::Config cfg;
    const uint8_t shape = in_.u8();
    const auto disc = (shape & 7) == 7 ? olaf::Discipline::kFifo : olaf::Discipline::kOlaf;
    // Bits 5-6 of shape: K - 1, so inputs with them clear decode as before chunks.
    cfg.num_chunks = 1 + ((shape >> 5) & 3);
    cfg.segments = std::max<uint32_t>(1 + in_.u8() % 8, cfg.num_chunks);
    cfg.num_clusters = 1 + in_.u8() % 6;
    cfg.num_grads = in_.u8() % 4;
    cfg.queue_size = valid_queue_size(cfg, in_.u8());
    const int64_t thresholds[] = {-1, -1, 0, 32768, 65536};
    const int64_t thr = in_.pick(thresholds);
    cfg.reward_filter = thr >= 0;
    cfg.reward_threshold = thr >= 0 ? thr : 0;
    const uint64_t windows[] = {0, 2000, 20000, 1000000};
    cfg.activity_window_ns = in_.pick(windows);
    const uint64_t sojourns[] = {0, 0, 1, 5000, 20000, 100000};
    cfg.max_sojourn_ns = in_.pick(sojourns);
    const uint32_t first[] = {0, kTokenModulus32Max - 2, kTokenModulus32Max - 63, 0x7FFFFFFEu};
    cfg.first_token = (shape & 0x18) == 0x18 ? in_.u32() : in_.pick(first);
    q_.emplace(cfg, disc);
    trace_.line(json{{"config", olaf::vectors::config_to_json(cfg, disc)}});
    check("construction");

    for (int steps = 0; !in_.done() && steps < 4096; steps++) step();
    trace_.line(json{{"final_counters", olaf::vectors::counters_to_json(*q_)}});
  }

 private:
  const uint64_t kDt[6] = {0, 1, 100, 1000, 3000, 40000};

  // A queue size the core accepts: num_chunks .. segments.
  static uint32_t valid_queue_size(const olaf::Config &k, uint8_t b) {
    return k.num_chunks + b % (k.segments - k.num_chunks + 1);
  }

  void check(const std::string &after) {
    const std::string broken = q_->check_invariants();
    if (!broken.empty()) fail(trace_, "after " + after + ": " + broken);
  }

  // A valid call: traced, applied through the shared event applier.
  json call(json event) {
    trace_.line(json{{"event", event}});
    json got = apply_event(*q_, event);
    trace_.line(json{{"expect", got}});
    check(event.at("op").get<std::string>());
    return got;
  }

  olaf::Update random_update() {
    olaf::Update u;
    const uint32_t num_chunks = q_->config().num_chunks;
    u.cluster_id = static_cast<uint16_t>(in_.u8() % q_->config().num_clusters);
    u.num_chunks = static_cast<uint16_t>(num_chunks);
    if (num_chunks > 1) u.chunk = static_cast<uint16_t>(in_.u8() % num_chunks);
    u.worker_id = static_cast<uint16_t>(in_.u8() % 4);
    u.seq = seq_++;
    const uint8_t c = in_.u8();
    u.count = c < 200 ? 1 : (c < 250 ? 1 + c % 4 : 0xFFFF - c % 3);
    const int32_t rewards[] = {-65536, 0, 32768, 65536, 163840, 0x7FFFFFFF, -0x7FFFFFFF - 1};
    u.reward_sum = in_.pick(rewards);
    u.gen_ts = t_ + in_.u8();
    for (uint32_t i = 0; i < q_->config().num_grads; i++) {
      const uint8_t g = in_.u8();
      u.grads.push_back(g >= 250 ? (g & 1 ? 0x7FFFFFFF : -0x7FFFFFFF - 1)
                                 : static_cast<int32_t>(g) - 128);
    }
    return u;
  }

  void step() {
    switch (in_.u8() % 14) {
      case 0:
      case 1:
      case 2:
      case 3:
        enqueue();
        break;
      case 4:
      case 5:
        deliver(/*duplicate=*/false);
        break;
      case 6:  // the traffic manager drops the oldest token
        if (!tm_.empty()) tm_.pop_front();
        break;
      case 7:
        deliver(/*duplicate=*/true);
        break;
      case 8:  // reordering: the oldest token swaps with a later one
        if (tm_.size() > 1) std::swap(tm_[0], tm_[1 + in_.u8() % (tm_.size() - 1)]);
        break;
      case 9:  // a token that is not (or no longer) live
        dequeue_token(in_.u8() & 1 ? in_.u32() : q_->next_token() + in_.u8() % 4);
        break;
      case 10:
        t_ += in_.pick(kDt);
        call(json{{"op", "status"}, {"t_ns", t_}});
        break;
      case 11:
        call(json{{"op", in_.u8() & 1 ? "lock" : "dequeue"}});
        break;
      case 12:
        configure();
        break;
      default:
        invalid_call();
        break;
    }
  }

  void enqueue() {
    t_ += in_.pick(kDt);
    const olaf::Update u = random_update();
    const json got = call(json{{"op", "enqueue"}, {"t_ns", t_}, {"update", update_to_json(u)}});
    const std::string d = got.at("decision");
    if (d == "append") {
      const uint32_t token = got.at("token");
      shadow_[token] = u;
      token_of_segment_[got.at("segment").get<int>()] = token;
      if (in_.u8() % 16 != 0) tm_.push_back(token);  // else lost on its way into the TM
    } else if (d == "aggregate") {
      olaf::Update &w = shadow_.at(token_of_segment_.at(got.at("segment").get<int>()));
      w = olaf::aggregate(w, u);
    } else if (d == "replace_worker" || d == "replace_reward") {
      shadow_.at(token_of_segment_.at(got.at("segment").get<int>())) = u;
    }
  }

  void deliver(bool duplicate) {
    if (tm_.empty()) return;
    const uint32_t token = tm_.front();
    if (!duplicate) tm_.pop_front();
    dequeue_token(token);
  }

  void dequeue_token(uint32_t token) {
    t_ += in_.pick(kDt);
    const auto &k = q_->counters();
    const uint64_t lost0 = k.lost_total, expired0 = k.expired_total;
    const uint32_t occ0 = q_->occupancy();
    const json got = call(json{{"op", "dequeue_token"}, {"t_ns", t_}, {"token", token}});
    const uint64_t lost = k.lost_total - lost0, expired = k.expired_total - expired0;
    const std::string fate = got.at("fate");
    std::ostringstream bad;
    if (got.at("lost") != lost || got.at("expired") != expired)
      bad << "reported " << got.dump() << " but reclaimed " << lost << " lost, " << expired
          << " expired; ";
    const bool departed = fate != "stale";
    if (departed != !got.at("update").is_null()) bad << "fate and departure disagree; ";
    if ((fate == "departed") != (departed && lost == 0)) bad << "fate vs lost; ";
    if (occ0 != q_->occupancy() + lost + expired + (departed ? 1 : 0)) bad << "occupancy; ";
    if (q_->token_position(token)) bad << "token still live after dequeue_token; ";
    if (departed) {
      // Exactly its own segment: the content its token's segment accumulated; the
      // reclaimed ones were older (the new head, if any, is the next token).
      const auto it = shadow_.find(token);
      if (it == shadow_.end() || update_to_json(it->second) != got.at("update"))
        bad << "token " << token << " departed with another segment's content; ";
      if (q_->occupancy() && q_->token_position(token + 1) != 0u) bad << "new head not token+1; ";
    }
    if (!bad.str().empty())
      fail(trace_, "dequeue_token(" + std::to_string(token) + "): " + bad.str());
  }

  void configure() {
    const auto &k = q_->config();
    json e{{"op", "configure"}};
    switch (in_.u8() % 4) {
      case 0:
        e["queue_size"] = valid_queue_size(k, in_.u8());
        break;
      case 1: {
        const int64_t thr[] = {-1, 0, 32768, 65536};
        const int64_t v = in_.pick(thr);
        e["reward_threshold"] = v < 0 ? json(nullptr) : json(v);
        break;
      }
      case 2: {
        const uint64_t w[] = {0, 2000, 20000, 1000000};
        e["activity_window_ns"] = in_.pick(w);
        break;
      }
      default: {
        const uint64_t s[] = {0, 1, 5000, 20000, 100000};
        e["max_sojourn_ns"] = in_.pick(s);
        break;
      }
    }
    call(e);
  }

  // Calls the core must refuse without changing anything (not traced: the model raises).
  void invalid_call() {
    const json before = olaf::vectors::counters_to_json(*q_);
    const uint32_t occ = q_->occupancy(), next = q_->next_token();
    const auto &k = q_->config();
    olaf::Update u = random_update();
    bool refused = false;
    switch (in_.u8() % 6) {
      case 0:
        u.cluster_id = static_cast<uint16_t>(k.num_clusters + in_.u8());
        refused = q_->enqueue(u, t_).error == olaf::Error::kBadCluster;
        break;
      case 4: {  // another deployment's K, or a chunk index outside 0..K-1
        const uint8_t b = in_.u8();
        if (b & 1)
          u.num_chunks = static_cast<uint16_t>(k.num_chunks + 1 + b % 3);
        else
          u.chunk = static_cast<uint16_t>(k.num_chunks + b % 3);
        refused = q_->enqueue(u, t_).error == olaf::Error::kBadChunk;
        break;
      }
      case 1:
        u.grads.push_back(1);
        refused = q_->enqueue(u, t_).error == olaf::Error::kBadLength;
        break;
      case 2:
        if (t_ == 0) return;
        refused = q_->enqueue(u, t_ - 1).error == olaf::Error::kTimeBackwards;
        break;
      case 5:  // a queue smaller than one whole update (K segments)
        if (k.num_chunks == 1) return;
        refused = !q_->configure(k.num_chunks - 1, k.reward_filter, k.reward_threshold,
                                 k.activity_window_ns);
        break;
      default:
        refused = !q_->configure(in_.u8() & 1 ? 0 : k.segments + 1, k.reward_filter,
                                 k.reward_threshold, k.activity_window_ns);
        break;
    }
    // An enqueue error counts in counters().errors, which the vectors do not carry.
    if (!refused || olaf::vectors::counters_to_json(*q_) != before || q_->occupancy() != occ ||
        q_->next_token() != next)
      fail(trace_, "an invalid call was accepted or changed the queue");
    check("invalid call");
  }

  Bytes &in_;
  Trace &trace_;
  std::optional<olaf::Queue> q_;
  uint64_t t_ = 0;
  uint32_t seq_ = 0;
  std::deque<uint32_t> tm_;                  // tokens in the simulated traffic-manager queue
  std::map<uint32_t, olaf::Update> shadow_;  // token -> content its segment must depart with
  std::map<int, uint32_t> token_of_segment_;
};

void run_one(const uint8_t *data, size_t size, std::ostream *out) {
  Bytes in(data, size);
  Trace trace(out);
  Driver(in, trace).run();
}

}  // namespace

#ifdef OLAF_FUZZ_TRACE_MAIN

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " OUT_DIR INPUT...\n";
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    std::ifstream f(argv[i], std::ios::binary);
    if (!f) {
      std::cerr << argv[i] << ": cannot open\n";
      return 2;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
    std::string name = argv[i];
    name = name.substr(name.find_last_of('/') + 1);
    std::ofstream out(std::string(argv[1]) + "/" + name + ".jsonl");
    run_one(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), &out);
  }
  return 0;
}

#else

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run_one(data, size, nullptr);
  return 0;
}

#endif
