// Chunk fate ledger — see fate_ledger.hpp.

#include "fate_ledger.hpp"

#include "ns3/abort.h"

namespace olaf::sim {

ns3::TypeId BundleTag::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("olaf::sim::BundleTag")
                               .SetParent<ns3::Tag>()
                               .SetGroupName("Olaf")
                               .AddConstructor<BundleTag>();
  return tid;
}

ns3::TypeId BundleTag::GetInstanceTypeId() const { return GetTypeId(); }

uint64_t FateLedger::NewUpdate(int64_t worker, uint32_t seq, uint64_t gen_ts, int32_t reward_sum) {
  if (!enabled_) return 0;
  updates_.push_back(LedgerUpdate{worker, seq, static_cast<int64_t>(gen_ts), reward_sum});
  for (uint32_t i = 0; i < k_; i++)
    chunks_.push_back(LedgerChunk{static_cast<int64_t>(ChunkFate::kNotSent), -1, -1});
  return updates_.size() - 1;
}

int64_t FateLedger::NewBundle(uint64_t chunk_id) {
  uint32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    b = static_cast<uint32_t>(bundles_.size());
    bundles_.emplace_back();
  }
  bundles_[b].assign(1, chunk_id);
  return b;
}

void FateLedger::Release(int64_t bundle) {
  bundles_[bundle].clear();
  free_.push_back(static_cast<uint32_t>(bundle));
}

void FateLedger::Tag(uint64_t update, uint32_t chunk, ns3::Packet &p) {
  if (!enabled_) return;
  const uint64_t id = update * k_ + chunk;
  NS_ABORT_MSG_UNLESS(id < chunks_.size(), "FateLedger: no such chunk");
  chunks_[id].fate = static_cast<int64_t>(ChunkFate::kInFlight);
  SetBundle(p, NewBundle(id));
}

void FateLedger::Refused(const ns3::Packet &p) {
  const int64_t b = BundleOf(p);
  if (b < 0) return;
  chunks_[bundles_[b][0]].fate = static_cast<int64_t>(ChunkFate::kNotSent);
  Release(b);
}

int64_t FateLedger::BundleOf(const ns3::Packet &p) {
  BundleTag t;
  return p.PeekPacketTag(t) ? static_cast<int64_t>(t.id) : -1;
}

void FateLedger::SetBundle(ns3::Packet &p, int64_t bundle) {
  if (bundle < 0) return;
  BundleTag t;
  t.id = static_cast<uint32_t>(bundle);
  p.ReplacePacketTag(t);
}

void FateLedger::SetOwnFate(int64_t bundle, ChunkFate f) {
  LedgerChunk &c = chunks_[bundles_[bundle][0]];
  NS_ABORT_MSG_UNLESS(c.fate == static_cast<int64_t>(ChunkFate::kInFlight),
                      "FateLedger: a chunk's packet met two fates");
  c.fate = static_cast<int64_t>(f);
}

void FateLedger::Folded(int64_t bundle, int64_t into) {
  if (bundle < 0) return;
  SetOwnFate(bundle, ChunkFate::kFolded);
  if (into >= 0) {
    auto &dst = bundles_[into];
    dst.insert(dst.end(), bundles_[bundle].begin(), bundles_[bundle].end());
  }
  Release(bundle);
}

void FateLedger::Dropped(int64_t bundle) {
  if (bundle < 0) return;
  SetOwnFate(bundle, ChunkFate::kDropped);
  Release(bundle);
}

void FateLedger::Lost(int64_t bundle) {
  if (bundle < 0) return;
  SetOwnFate(bundle, ChunkFate::kLost);
  Release(bundle);
}

void FateLedger::Delivered(int64_t bundle, int64_t t_ns, int64_t reception) {
  if (bundle < 0) return;
  SetOwnFate(bundle, ChunkFate::kDelivered);
  for (uint64_t id : bundles_[bundle]) {
    chunks_[id].t_content_ns = t_ns;
    chunks_[id].reception = reception;
  }
  Release(bundle);
}

}  // namespace olaf::sim
