// QueueHarness — see queue_harness.hpp.

#include "queue_harness.hpp"

#include <stdexcept>

#include "ns3/core-module.h"
#include "ns3/packet.h"
#include "olaf_queue_ns3.hpp"

namespace olaf::sim {

struct QueueHarness::Impl {
  ns3::Ptr<ns3::OlafQueueDisc> q;

  void AdvanceTo(int64_t t_ns) {
    const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    if (t_ns <= now) return;
    ns3::Simulator::Stop(ns3::NanoSeconds(t_ns - now));
    ns3::Simulator::Run();
  }
};

QueueHarness::QueueHarness(const std::string &discipline, uint32_t segments, uint32_t num_clusters,
                           uint32_t num_grads, uint32_t queue_size, int64_t reward_threshold,
                           int64_t activity_window_ns, uint32_t num_chunks)
    : impl_(std::make_unique<Impl>()) {
  if (discipline != "olaf" && discipline != "fifo")
    throw std::invalid_argument("discipline must be olaf or fifo, got " + discipline);
  if (num_chunks < 1 || num_chunks > 0xFFFF)
    throw std::invalid_argument("num_chunks must be in 1..65535");
  if (queue_size < num_chunks || queue_size > segments)
    throw std::invalid_argument("queue_size must be in num_chunks..segments");
  ns3::Simulator::Destroy();  // a fresh clock at 0
  impl_->q = ns3::CreateObjectWithAttributes<ns3::OlafQueueDisc>(
      "Discipline",
      ns3::EnumValue(discipline == "fifo" ? olaf::Discipline::kFifo : olaf::Discipline::kOlaf),
      "Segments", ns3::UintegerValue(segments), "NumClusters", ns3::UintegerValue(num_clusters),
      "NumGrads", ns3::UintegerValue(num_grads), "NumChunks", ns3::UintegerValue(num_chunks),
      "QueueSize", ns3::UintegerValue(queue_size), "RewardThreshold",
      ns3::IntegerValue(reward_threshold), "ActivityWindow",
      ns3::TimeValue(ns3::NanoSeconds(activity_window_ns)));
  impl_->q->Initialize();
}

QueueHarness::~QueueHarness() {
  impl_->q->Dispose();
  ns3::Simulator::Destroy();
}

HarnessEnqueue QueueHarness::Enqueue(const std::string &datagram, int64_t t_ns) {
  impl_->AdvanceTo(t_ns);
  auto p =
      ns3::Create<ns3::Packet>(reinterpret_cast<const uint8_t *>(datagram.data()), datagram.size());
  impl_->q->Enqueue(ns3::Create<ns3::OlafQueueDiscItem>(p));
  const olaf::EnqueueResult &r = impl_->q->GetLastEnqueue();
  HarnessEnqueue out;
  if (r.error != olaf::Error::kNone) {
    out.decision = olaf::constants::DECISION_ERROR;
    out.error = olaf::error_text(r.error);
  } else {
    out.decision = static_cast<int>(r.decision);
    out.segment = r.segment;
  }
  return out;
}

HarnessDeparture QueueHarness::Dequeue() {
  HarnessDeparture d;
  ns3::Ptr<ns3::QueueDiscItem> item = impl_->q->Dequeue();
  if (!item) return d;
  d.ok = true;
  d.segment = impl_->q->GetLastDepartureSegment();
  std::vector<uint8_t> bytes(item->GetPacket()->GetSize());
  item->GetPacket()->CopyData(bytes.data(), bytes.size());
  d.datagram.assign(bytes.begin(), bytes.end());
  return d;
}

int QueueHarness::Lock() {
  if (!impl_->q->Peek()) return -1;
  return impl_->q->GetCore().head();
}

std::vector<uint32_t> QueueHarness::Status(int64_t t_ns) {
  impl_->AdvanceTo(t_ns);
  const olaf::Status s = impl_->q->GetStatus();
  return {s.queue_util, s.active_clusters, s.queue_size};
}

bool QueueHarness::Configure(uint32_t queue_size, int64_t reward_threshold,
                             int64_t activity_window_ns) {
  return impl_->q->Configure(queue_size, reward_threshold, ns3::NanoSeconds(activity_window_ns));
}

std::vector<uint64_t> QueueHarness::Decisions() const {
  const auto &d = impl_->q->GetCore().counters().decisions;
  return {d.begin(), d.end()};
}

std::vector<uint64_t> QueueHarness::ClusterDecisions() const {
  std::vector<uint64_t> out;
  for (const auto &row : impl_->q->GetCore().counters().per_cluster)
    out.insert(out.end(), row.begin(), row.end());
  return out;
}

std::vector<uint64_t> QueueHarness::Departures() const {
  return impl_->q->GetCore().counters().departures;
}

std::vector<uint64_t> QueueHarness::Errors() const {
  return {impl_->q->GetErrors(), impl_->q->GetMalformed(), impl_->q->GetBadChunk()};
}

int64_t QueueHarness::Now() const { return ns3::Simulator::Now().GetNanoSeconds(); }

}  // namespace olaf::sim
