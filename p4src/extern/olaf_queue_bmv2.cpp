// BMv2 adapter of the OlafQueue: a user extern (bm::ExternType) around the
// plain C++ core (olaf_queue_core.hpp). P4 declaration: p4src/include/olaf_queue.p4.
//
// Build as a shared object against the installed BMv2 headers and load it with
//   simple_switch_grpc ... -- --load-modules /abs/path/olaf_queue.so
// (P4 compiled with p4c-bm2-ss --emit-externs).
//
// Threading: BMv2 takes the extern instance's mutex around every method call
// (BM_REGISTER_EXTERN_METHOD), so ingress (enqueue/status) and the egress
// threads (dequeue) are serialised; the core needs no locking of its own.
// Time for the activity window is read from steady_clock under that mutex, so
// it never goes backwards.
//
// BMv2 mapping (docs/dataplane.md "The token ledger"): an APPENDed packet is
// the token of its segment in the traffic manager's queue toward the PS, which
// can drop it (a full port queue: that queue also carries INIT and bypass
// traffic). enqueue() returns the segment's token id; dequeue(token) hands it to
// the core's dequeue_token, which departs exactly that token's segment after
// reclaiming the older segments whose tokens were lost, or nothing for a stale
// token, and writes the segment's Olaf fields into the token's header, its
// gradients into the token's payload, and its owner's source IP/port (the packet
// that appended or last replaced it). Segments older than max_sojourn_ns
// (olaf_params) are reclaimed at every call; each method reports how many
// segments it reclaimed so that the P4 program counts them.
//
// Chunks (docs/dataplane.md "Chunks"): the core is keyed by (cluster, chunk) for
// the configured K (olaf_params num_chunks, 1..max_chunks, the constructor's build
// limit); its per-key state is num_clusters * K entries. The status it reports is in
// updates (ceil(occupancy / K), floor(queue_size / K)).

#include <bm/bm_sim/extern.h>
#include <bm/bm_sim/logger.h>
#include <bm/bm_sim/packet.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "olaf_constants.hpp"
#include "olaf_queue_core.hpp"

namespace {

namespace k = olaf::constants;

int32_t load_be32(const char *p) {
  const auto *b = reinterpret_cast<const unsigned char *>(p);
  return static_cast<int32_t>((uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                              (uint32_t{b[2]} << 8) | uint32_t{b[3]});
}

void store_be32(char *p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  p[0] = static_cast<char>(u >> 24);
  p[1] = static_cast<char>(u >> 16);
  p[2] = static_cast<char>(u >> 8);
  p[3] = static_cast<char>(u);
}

}  // namespace

class OlafQueue : public bm::ExternType {
 public:
  BM_EXTERN_ATTRIBUTES {
    BM_EXTERN_ATTRIBUTE_ADD(segments);
    BM_EXTERN_ATTRIBUTE_ADD(num_clusters);
    BM_EXTERN_ATTRIBUTE_ADD(max_chunks);
  }

  void init() override {
    start_ = std::chrono::steady_clock::now();
    config_.segments = segments.get<uint32_t>();
    config_.num_clusters = num_clusters.get<uint32_t>();
    config_.queue_size = std::min<uint32_t>(k::DEFAULT_QUEUE_SIZE, config_.segments);
    config_.num_grads = 0;  // set by the first configure() (olaf_params)
    config_.num_chunks = 1;
    max_chunks_ = std::min<uint32_t>(std::max<uint32_t>(max_chunks.get<uint32_t>(), 1), 0xFFFF);
    core_ = std::make_unique<olaf::Queue>(config_, discipline_);
    owners_.assign(config_.segments, Owner{});
  }

  void configure(const bm::Data &queue_size, const bm::Data &flags,
                 const bm::Data &reward_threshold, const bm::Data &activity_window_ns,
                 const bm::Data &num_grads, const bm::Data &max_sojourn_ns,
                 const bm::Data &num_chunks) {
    const auto f = flags.get<uint32_t>();
    const auto want_disc = (f & k::PARAM_FIFO) ? olaf::Discipline::kFifo : olaf::Discipline::kOlaf;
    const auto want_grads = num_grads.get<uint32_t>();
    const auto qs = queue_size.get<uint32_t>();
    const bool filter = (f & k::PARAM_REWARD_FILTER) != 0;
    const auto thr = static_cast<int64_t>(reward_threshold.get<uint32_t>() & 0x7FFFFFFFu);
    const auto win = activity_window_ns.get<uint64_t>();
    const auto soj = max_sojourn_ns.get<uint64_t>();
    const auto want_k = num_chunks.get<uint32_t>();

    // Static parameters change only while the queue is empty (nothing is lost);
    // until then the request stays pending and is retried on every call. The new
    // core continues the token ids, so a stale token still in the traffic manager
    // can never match a segment of the new core.
    // A K outside 1..max_chunks is refused (logged once) and the queue keeps its K; the
    // updates of the refused K are then refused by the core (malformed[extern]). A
    // queue_size below K is refused by the core (logged); the queue keeps >= K segments.
    const bool k_ok = want_k >= 1 && want_k <= max_chunks_;
    if (!k_ok && want_k != refused_k_) {
      BMLOG_ERROR("OlafQueue {}: rejected num_chunks={} (must be 1..{})", get_name(), want_k,
                  max_chunks_);
    }
    refused_k_ = k_ok ? 0 : want_k;
    const uint32_t k_next = k_ok ? want_k : config_.num_chunks;
    const bool static_change =
        want_disc != discipline_ || want_grads != config_.num_grads || k_next != config_.num_chunks;
    if (static_change && core_->occupancy() == 0) {
      discipline_ = want_disc;
      config_.num_grads = want_grads;
      config_.num_chunks = k_next;
      if (qs >= k_next && qs <= config_.segments) {
        config_.queue_size = qs;
      } else if (config_.queue_size < k_next) {
        config_.queue_size = std::min(k_next, config_.segments);
      }
      config_.reward_filter = filter;
      config_.reward_threshold = thr;
      config_.activity_window_ns = win;
      config_.max_sojourn_ns = soj;
      config_.first_token = core_->next_token();
      if (config_.queue_size < config_.num_chunks) {
        // K above the segments: no queue size can hold one update; keep the old core.
        BMLOG_ERROR("OlafQueue {}: num_chunks={} exceeds the {} segments", get_name(),
                    config_.num_chunks, config_.segments);
        config_ = core_->config();
        discipline_ = core_->discipline();
      } else {
        core_ = std::make_unique<olaf::Queue>(config_, discipline_);
      }
    }
    const auto &c = core_->config();
    if (qs != c.queue_size || filter != c.reward_filter || thr != c.reward_threshold ||
        win != c.activity_window_ns || soj != c.max_sojourn_ns) {
      if (!core_->configure(qs, filter, thr, win, soj)) {
        BMLOG_ERROR("OlafQueue {}: rejected queue_size={} (must be {}..{} segments)", get_name(),
                    qs, c.num_chunks, c.segments);
      }
    }
  }

  void enqueue(const bm::Data &cluster_id, const bm::Data &worker_id, const bm::Data &seq,
               const bm::Data &count, const bm::Data &reward_sum, const bm::Data &gen_ts,
               const bm::Data &chunk, const bm::Data &num_chunks, const bm::Data &src_ip,
               const bm::Data &src_port, bm::Data &decision, bm::Data &token, bm::Data &expired) {
    olaf::Update u;
    u.cluster_id = cluster_id.get<uint16_t>();
    u.worker_id = worker_id.get<uint16_t>();
    u.seq = seq.get<uint32_t>();
    u.count = count.get<uint16_t>();
    u.reward_sum = static_cast<int32_t>(reward_sum.get<uint32_t>());
    u.gen_ts = gen_ts.get<uint64_t>();
    u.chunk = chunk.get<uint16_t>();
    u.num_chunks = num_chunks.get<uint16_t>();
    const size_t need = size_t{core_->config().num_grads} * 4;
    bm::Packet &pkt = get_packet();
    token.set(0);
    expired.set(0);
    if (pkt.get_data_size() < need) {
      decision.set(k::DECISION_ERROR);
      return;
    }
    const char *p = pkt.data();
    u.grads.resize(core_->config().num_grads);
    for (size_t i = 0; i < u.grads.size(); i++) u.grads[i] = load_be32(p + 4 * i);

    const uint64_t expired_before = core_->counters().expired_total;
    const auto r = core_->enqueue(u, now_ns());
    expired.set(core_->counters().expired_total - expired_before);
    if (r.error != olaf::Error::kNone) {
      decision.set(k::DECISION_ERROR);
      return;
    }
    decision.set(static_cast<uint32_t>(r.decision));
    token.set(r.token.value_or(0));
    if (r.decision == olaf::Decision::kAppend || r.decision == olaf::Decision::kReplaceWorker ||
        r.decision == olaf::Decision::kReplaceReward) {
      owners_[r.segment] = Owner{src_ip.get<uint32_t>(), src_port.get<uint16_t>()};
    }
  }

  void dequeue(const bm::Data &token, bm::Data &fate, bm::Data &lost, bm::Data &expired,
               bm::Data &cluster_id, bm::Data &worker_id, bm::Data &seq, bm::Data &count,
               bm::Data &reward_sum, bm::Data &gen_ts, bm::Data &chunk, bm::Data &num_chunks,
               bm::Data &src_ip, bm::Data &src_port) {
    bm::Packet &pkt = get_packet();
    lost.set(0);
    expired.set(0);
    if (pkt.get_data_size() < size_t{core_->config().num_grads} * 4) {
      // Cannot happen for a validated update; the segment stays (reclaimed later as
      // lost or expired) and the packet is dropped as stale.
      BMLOG_ERROR("OlafQueue {}: token {} too short to carry {} gradients; dropped", get_name(),
                  token.get<uint32_t>(), core_->config().num_grads);
      fate.set(k::TOKEN_FATE_STALE);
      return;
    }
    const auto r = core_->dequeue_token(token.get<uint32_t>(), now_ns());
    fate.set(static_cast<uint32_t>(r.fate));
    lost.set(r.lost);
    expired.set(r.expired);
    if (!r.departure) return;
    const olaf::Update &u = r.departure->update;
    char *p = pkt.data();
    for (size_t i = 0; i < u.grads.size(); i++) store_be32(p + 4 * i, u.grads[i]);
    cluster_id.set(u.cluster_id);
    worker_id.set(u.worker_id);
    seq.set(u.seq);
    count.set(u.count);
    reward_sum.set(static_cast<uint32_t>(u.reward_sum));
    gen_ts.set(u.gen_ts);
    chunk.set(u.chunk);
    num_chunks.set(u.num_chunks);
    const Owner &o = owners_[r.departure->segment];
    src_ip.set(o.ip);
    src_port.set(o.port);
  }

  void status(bm::Data &queue_util, bm::Data &active_clusters, bm::Data &queue_size,
              bm::Data &expired) {
    const uint64_t expired_before = core_->counters().expired_total;
    const auto s = core_->status(now_ns());
    expired.set(core_->counters().expired_total - expired_before);
    queue_util.set(std::min<uint32_t>(s.queue_util, 0xFFFFFF));
    active_clusters.set(std::min<uint32_t>(s.active_clusters, 0xFFFF));
    queue_size.set(std::min<uint32_t>(s.queue_size, 0xFFFFFF));
  }

 private:
  struct Owner {
    uint32_t ip = 0;
    uint16_t port = 0;
  };

  uint64_t now_ns() const {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start_)
                                     .count());
  }

  // Constructor parameters (P4: OlafQueue(bit<32> segments, bit<32> num_clusters,
  // bit<32> max_chunks)).
  bm::Data segments{k::SEGMENTS};
  bm::Data num_clusters{k::MAX_CLUSTERS};
  bm::Data max_chunks{k::MAX_CHUNKS};
  uint32_t max_chunks_ = 1;
  uint32_t refused_k_ = 0;  // the refused num_chunks last logged (0: none)

  olaf::Config config_;
  olaf::Discipline discipline_ = olaf::Discipline::kOlaf;
  std::unique_ptr<olaf::Queue> core_;
  std::vector<Owner> owners_;
  std::chrono::steady_clock::time_point start_;
};

BM_REGISTER_EXTERN(OlafQueue);
BM_REGISTER_EXTERN_METHOD(OlafQueue, configure, const bm::Data &, const bm::Data &,
                          const bm::Data &, const bm::Data &, const bm::Data &, const bm::Data &,
                          const bm::Data &);
BM_REGISTER_EXTERN_METHOD(OlafQueue, enqueue, const bm::Data &, const bm::Data &, const bm::Data &,
                          const bm::Data &, const bm::Data &, const bm::Data &, const bm::Data &,
                          const bm::Data &, const bm::Data &, const bm::Data &, bm::Data &,
                          bm::Data &, bm::Data &);
BM_REGISTER_EXTERN_METHOD(OlafQueue, dequeue, const bm::Data &, bm::Data &, bm::Data &, bm::Data &,
                          bm::Data &, bm::Data &, bm::Data &, bm::Data &, bm::Data &, bm::Data &,
                          bm::Data &, bm::Data &, bm::Data &, bm::Data &);
BM_REGISTER_EXTERN_METHOD(OlafQueue, status, bm::Data &, bm::Data &, bm::Data &, bm::Data &);
