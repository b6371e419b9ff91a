// Simulated Olaf hosts — see olaf_hosts.hpp.

#include "olaf_hosts.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "olaf_wire.hpp"

namespace olaf::sim {

namespace k = olaf::constants;
namespace w = olaf::wire;
using ns3::Ptr;

namespace {

// Q-format conversion of olaf/fixedpoint.py: v · 2^frac_bits (`scale`), rounded half to even,
// saturated to int32. The product by a power of two is exact (as ldexp); adding and subtracting
// 1.5 · 2^52 rounds a double of magnitude < 2^51 to an integer under the default rounding mode
// (half to even, as std::nearbyint, without its call), and leaves a larger one (or ±inf, NaN)
// beyond int32, where the saturation below decides. The simulated workers convert every element
// of every chunk they send, so this is on the simulation's hottest path.
int32_t to_fixed(double v, double scale) {
  constexpr double kRound = 6755399441055744.0;    // 1.5 · 2^52
  const double x = (v * scale + kRound) - kRound;  // ISO C++: neither reassociated nor contracted
  if (!(x > static_cast<double>(INT32_MIN))) return INT32_MIN;
  if (x > static_cast<double>(INT32_MAX)) return INT32_MAX;
  return static_cast<int32_t>(x);
}

}  // namespace

OlafWorker::OlafWorker(const WorkerParams &p, uint32_t num_params, uint32_t chunk_len,
                       uint32_t num_chunks, FateLedger *ledger, int node, bool keep_records)
    : p_(p),
      num_params_(num_params),
      chunk_len_(chunk_len),
      num_chunks_(num_chunks),
      ledger_(ledger),
      node_(node),
      keep_records_(keep_records),
      sched_rng_(p.seed, 1),
      content_rng_(p.seed, 2),
      tc_(TxParams{p.tc, p.tc_delta_t_ms, p.tc_v_per_s, p.tc_q_max, p.tc_reading},
          Xoshiro256(p.seed, 3)),
      buf_(w::update_datagram_len(chunk_len)),
      grads_(chunk_len),
      grad_scale_(std::ldexp(1.0, p.grad_frac_bits)),
      reward_scale_(std::ldexp(1.0, p.reward_frac_bits)) {
  direction_.resize(num_params);
  for (double &d : direction_) d = content_rng_.uniform(-1.0, 1.0);
}

void OlafWorker::SetDevice(Ptr<ns3::NetDevice> dev) {
  dev_ = dev;
  broadcast_ = dev->GetBroadcast();
  dev->SetReceiveCallback(ns3::MakeCallback(&OlafWorker::Receive, this));
}

int64_t OlafWorker::NextGap() {
  // The gap before update idx_ (olaf/plan/arrivals.py); -1: the trace has ended.
  if (!p_.trace_gaps_ns.empty()) {
    return idx_ < static_cast<int64_t>(p_.trace_gaps_ns.size()) ? p_.trace_gaps_ns[idx_] : -1;
  }
  if (idx_ % p_.burst != 0) return 0;  // inside a burst: back to back
  double gap = static_cast<double>(p_.period_ns * p_.burst);
  if (p_.jitter_ns > 0) {
    const double j = static_cast<double>(p_.jitter_ns);
    gap += sched_rng_.uniform(-j, j);
  }
  return std::llround(gap);
}

void OlafWorker::StartApplication() {
  const int64_t gap = NextGap();
  if (gap < 0) return;
  t_due_ = p_.start_ns + gap;
  if (p_.duration_ns > 0 && t_due_ >= p_.start_ns + p_.duration_ns) return;
  next_ = ns3::Simulator::Schedule(ns3::NanoSeconds(t_due_) - ns3::Simulator::Now(),
                                   &OlafWorker::Generate, this);
}

void OlafWorker::StopApplication() { next_.Cancel(); }

void OlafWorker::Generate() {
  const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
  // Experience of this generation (synthetic, see the header).
  const double reward = content_rng_.uniform(-1.0, 0.0);
  exp_reward_ += reward;
  exp_x_ += content_rng_.uniform(-1.0, 1.0);
  exp_n_++;
  counters_.generated++;
  const TxDecision d = tc_.decide(now);
  GenRecord rec{
      now,    idx_,           0,   -1,      reward, -1, static_cast<int64_t>(d.reason), d.p_send,
      d.draw, d.delta_hat_ms, d.n, d.q_max, 0};
  if (d.send) {
    const double mean_reward = exp_reward_ / exp_n_;
    const double mean_x = exp_x_ / exp_n_;
    const int64_t folded = exp_n_;
    exp_reward_ = exp_x_ = 0;
    exp_n_ = 0;
    seq_ = seq_ % 0xFFFFFFFFu + 1;
    w::UpdateHeader h;
    h.num_grads = static_cast<uint16_t>(chunk_len_);
    h.num_chunks = static_cast<uint16_t>(num_chunks_);
    h.seq = seq_;
    h.count = 1;
    h.reward_sum = to_fixed(mean_reward, reward_scale_);
    h.gen_ts = static_cast<uint64_t>(now);
    w::write_ipv4_udp(buf_.data(), p_.ip, p_.ps_ip, p_.src_port, k::UPDATE_PORT,
                      buf_.size() - w::kOlafOffset);
    const uint64_t update = ledger_->NewUpdate(node_, seq_, h.gen_ts, h.reward_sum);
    int64_t taken = 0;
    for (uint32_t c = 0; c < num_chunks_; c++) {
      // Chunk c carries elements [c·L, min((c+1)·L, P)), zero-padded to L (olaf/chunks.py).
      const uint32_t start = c * chunk_len_;
      for (uint32_t i = 0; i < chunk_len_; i++)
        grads_[i] =
            start + i < num_params_ ? to_fixed(mean_x * direction_[start + i], grad_scale_) : 0;
      h.chunk = static_cast<uint16_t>(c);
      w::write_update(buf_.data(), h, grads_.data(), chunk_len_);
      auto pkt = ns3::Create<ns3::Packet>(buf_.data(), buf_.size());
      ledger_->Tag(update, c, *pkt);
      g_packets_sent++;
      if (dev_->Send(pkt, broadcast_, 0x0800)) {
        taken++;
      } else {
        ledger_->Refused(*pkt);
        counters_.send_errors++;
      }
    }
    counters_.chunks_sent += taken;
    rec.chunks_sent = taken;
    if (taken > 0) {
      counters_.sent++;
      const size_t slot = seq_ % kSentMemory;
      if (slot >= sent_.size()) sent_.resize(slot + 1, Sent{0, 0, 0});
      sent_[slot] =
          Sent{seq_, static_cast<uint32_t>(h.gen_ts), static_cast<uint32_t>(h.gen_ts >> 32)};
      rec.sent = 1;
      rec.seq = seq_;
      rec.reward = mean_reward;
      rec.folded = folded;
    }
  } else {
    counters_.skipped++;
  }
  counters_.last_seq = seq_;
  if (keep_records_) gens_.push_back(rec);
  idx_++;
  if (p_.max_updates > 0 && idx_ >= p_.max_updates) return;
  const int64_t gap = NextGap();
  if (gap < 0) return;
  t_due_ += gap;
  if (p_.duration_ns > 0 && t_due_ >= p_.start_ns + p_.duration_ns) return;
  next_ = ns3::Simulator::Schedule(ns3::NanoSeconds(t_due_ - now), &OlafWorker::Generate, this);
}

bool OlafWorker::IsOwn(uint32_t seq, uint64_t gen_ts) const {
  const size_t slot = seq % kSentMemory;
  if (seq == 0 || slot >= sent_.size()) return false;
  const Sent &s = sent_[slot];
  return s.seq == seq && s.gen_ts_lo == static_cast<uint32_t>(gen_ts) &&
         s.gen_ts_hi == static_cast<uint32_t>(gen_ts >> 32);
}

bool OlafWorker::FirstSlice(uint16_t worker_id, uint32_t seq, uint64_t gen_ts) {
  for (size_t i = 0; i < answered_n_; i++)
    if (answered_gen_ts_[i] == gen_ts && answered_[i].seq == seq &&
        answered_[i].worker_id == worker_id)
      return false;
  // Remember it in place of the oldest of the kAnsweredMemory remembered.
  answered_gen_ts_[answered_next_] = gen_ts;
  answered_[answered_next_] = Answered{worker_id, seq};
  answered_next_ = (answered_next_ + 1) % kAnsweredMemory;
  if (answered_n_ < kAnsweredMemory) answered_n_++;
  return true;
}

bool OlafWorker::Receive(Ptr<ns3::NetDevice>, Ptr<const ns3::Packet> p, uint16_t protocol,
                         const ns3::Address &) {
  uint8_t hdr[w::kAckWeightsOffset];
  const size_t len = p->GetSize();
  if (protocol != 0x0800 || len < sizeof(hdr)) {
    counters_.acks_malformed++;
    return true;
  }
  p->CopyData(hdr, sizeof(hdr));
  // classify() needs the datagram length only, which the IPv4/UDP headers carry.
  const w::Classified c = w::classify(hdr, len);
  if (c.kind != w::Kind::kAck || c.dst_ip != p_.ip) {
    counters_.acks_malformed++;
    return true;
  }
  const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
  const w::AckHeader a = w::read_ack_header(hdr);
  const bool valid = (a.flags & k::ACK_FLAG_STATUS_VALID) != 0;
  counters_.acks++;
  // The ACK event (Δ̂ restarts) is the first slice answering an update, as on the real hosts
  // (olaf/hosts/worker.py, docs/hosts.md); the other slices only bring the status.
  if (FirstSlice(a.worker_id, a.seq, a.gen_ts)) {
    tc_.on_ack(now, valid, a.active_clusters, a.queue_size);
  } else {
    tc_.on_status(valid, a.active_clusters, a.queue_size);
  }
  const bool own = IsOwn(a.seq, a.gen_ts);
  if (own) {
    counters_.acks_own++;
    counters_.learned_cluster_id = a.cluster_id;
    counters_.learned_worker_id = a.worker_id;
  }
  if (keep_records_) {
    acks_.push_back(AckRecord{now, a.cluster_id, a.worker_id, a.seq, a.count,
                              static_cast<int64_t>(a.gen_ts), a.global_reward, a.num_weights, own,
                              valid, a.queue_util, a.active_clusters, a.queue_size, a.chunk});
  }
  return true;
}

OlafPs::OlafPs(uint32_t ip, uint32_t num_params, uint32_t chunk_len, uint32_t num_chunks,
               FateLedger *ledger, bool keep_records)
    : ip_(ip),
      num_params_(num_params),
      chunk_len_(chunk_len),
      num_chunks_(num_chunks),
      ledger_(ledger),
      keep_records_(keep_records),
      in_(w::kUpdateGradsOffset),
      ack_(w::ack_datagram_len(chunk_len)) {
  // ack_ is zero-initialised: L weight elements of 0.
}

void OlafPs::SetDevice(Ptr<ns3::NetDevice> dev) {
  dev_ = dev;
  broadcast_ = dev->GetBroadcast();
  dev->SetReceiveCallback(ns3::MakeCallback(&OlafPs::Receive, this));
}

bool OlafPs::Receive(Ptr<ns3::NetDevice>, Ptr<const ns3::Packet> p, uint16_t protocol,
                     const ns3::Address &) {
  counters_.datagrams++;
  const size_t len = p->GetSize();
  if (protocol != 0x0800 || len < in_.size()) {
    counters_.malformed++;
    ledger_->Dropped(ledger_->Bundle(*p));
    return true;
  }
  p->CopyData(in_.data(), in_.size());
  const w::Classified c = w::classify(in_.data(), len);
  if (c.kind != w::Kind::kUpdate || c.dst_ip != ip_) {
    counters_.malformed++;
    ledger_->Dropped(ledger_->Bundle(*p));
    return true;
  }
  const w::UpdateHeader u = w::read_update_header(in_.data());
  if (u.num_chunks != num_chunks_ || u.num_grads != chunk_len_) {
    // A chunk of another model size: counted, never applied (docs/protocol.md "Chunks").
    counters_.malformed++;
    ledger_->Dropped(ledger_->Bundle(*p));
    return true;
  }
  const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
  const int64_t reception = static_cast<int64_t>(counters_.updates);
  counters_.updates++;
  ledger_->Delivered(ledger_->Bundle(*p), now, reception);
  if (keep_records_) {
    updates_.push_back(PsRecord{now, c.src_ip, u.cluster_id, u.worker_id, u.seq, u.count,
                                static_cast<int64_t>(u.gen_ts), u.reward_sum, u.chunk});
  }
  // The slice of chunk u.chunk, unpadded: min(L, P - chunk·L) weights.
  const uint32_t start = uint32_t{u.chunk} * chunk_len_;
  const uint32_t slice = std::min(chunk_len_, num_params_ - start);
  const size_t ack_len = w::ack_datagram_len(slice);
  w::AckHeader a;
  a.num_weights = static_cast<uint16_t>(slice);
  a.chunk = u.chunk;
  a.num_chunks = u.num_chunks;
  a.cluster_id = u.cluster_id;
  a.worker_id = u.worker_id;
  a.seq = u.seq;
  a.count = u.count;
  a.global_reward = std::numeric_limits<int32_t>::min();
  a.gen_ts = u.gen_ts;
  w::write_ipv4_udp(ack_.data(), ip_, c.src_ip, k::UPDATE_PORT, k::ACK_PORT,
                    ack_len - w::kOlafOffset);
  w::write_ack_header(ack_.data(), a);
  g_packets_sent++;
  if (dev_->Send(ns3::Create<ns3::Packet>(ack_.data(), ack_len), broadcast_, 0x0800))
    counters_.acks_sent++;
  else
    counters_.ack_errors++;
  return true;
}

}  // namespace olaf::sim
