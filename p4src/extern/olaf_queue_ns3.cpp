// ns-3 shell of the OlafQueue — see olaf_queue_ns3.hpp.

#include "olaf_queue_ns3.hpp"

#include <stdexcept>

#include "ns3/abort.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/enum.h"
#include "ns3/integer.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"
#include "olaf_wire.hpp"

namespace ns3 {

NS_LOG_COMPONENT_DEFINE("OlafQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(OlafQueueDisc);

namespace k = olaf::constants;

OlafQueueDiscItem::OlafQueueDiscItem(Ptr<Packet> p) : QueueDiscItem(p, Address(), kProtocol) {}

TypeId OlafQueueDisc::GetTypeId() {
  static TypeId tid =
      TypeId("ns3::OlafQueueDisc")
          .SetParent<QueueDisc>()
          .SetGroupName("TrafficControl")
          .AddConstructor<OlafQueueDisc>()
          .AddAttribute(
              "Discipline", "olaf (the OlafQueue) or fifo (tail-drop FIFO baseline)",
              EnumValue(olaf::Discipline::kOlaf),
              MakeEnumAccessor<olaf::Discipline>(&OlafQueueDisc::discipline_),
              MakeEnumChecker(olaf::Discipline::kOlaf, "olaf", olaf::Discipline::kFifo, "fifo"))
          .AddAttribute("Segments", "Physical segments", UintegerValue(k::SEGMENTS),
                        MakeUintegerAccessor(&OlafQueueDisc::segments_),
                        MakeUintegerChecker<uint32_t>(1))
          .AddAttribute("NumClusters", "Cluster ids 0..NumClusters-1",
                        UintegerValue(k::MAX_CLUSTERS),
                        MakeUintegerAccessor(&OlafQueueDisc::num_clusters_),
                        MakeUintegerChecker<uint32_t>(1, 0xFFFF))
          .AddAttribute("NumGrads", "Gradient elements per update",
                        UintegerValue(k::DEFAULT_NUM_GRADS),
                        MakeUintegerAccessor(&OlafQueueDisc::num_grads_),
                        MakeUintegerChecker<uint32_t>(0, 0xFFFF))
          .AddAttribute("NumChunks", "K, chunks per update; the queue is keyed by (cluster, chunk)",
                        UintegerValue(k::DEFAULT_NUM_CHUNKS),
                        MakeUintegerAccessor(&OlafQueueDisc::num_chunks_),
                        MakeUintegerChecker<uint32_t>(1, 0xFFFF))
          .AddAttribute("QueueSize", "Q_max, segments (NumChunks..Segments)",
                        UintegerValue(k::DEFAULT_QUEUE_SIZE),
                        MakeUintegerAccessor(&OlafQueueDisc::queue_size_),
                        MakeUintegerChecker<uint32_t>(1))
          .AddAttribute("RewardThreshold", "Reward filter T, Q15.16; < 0 = off", IntegerValue(-1),
                        MakeIntegerAccessor(&OlafQueueDisc::reward_threshold_),
                        MakeIntegerChecker<int64_t>(-1, 0x7FFFFFFF))
          .AddAttribute("ActivityWindow", "Window of the active-cluster count",
                        TimeValue(NanoSeconds(k::DEFAULT_ACTIVITY_WINDOW_NS)),
                        MakeTimeAccessor(&OlafQueueDisc::activity_window_), MakeTimeChecker())
          .AddTraceSource("Decision", "Enqueue decision (code, segment, item); 255 = error",
                          MakeTraceSourceAccessor(&OlafQueueDisc::decision_trace_),
                          "ns3::OlafQueueDisc::DecisionTracedCallback");
  return tid;
}

OlafQueueDisc::OlafQueueDisc() : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE) {}

OlafQueueDisc::~OlafQueueDisc() = default;

bool OlafQueueDisc::CheckConfig() {
  if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0) {
    NS_LOG_ERROR("OlafQueueDisc has no classes and no packet filters");
    return false;
  }
  if (queue_size_ < num_chunks_ || queue_size_ > segments_) {
    NS_LOG_ERROR("OlafQueueDisc: QueueSize " << queue_size_ << " outside NumChunks (" << num_chunks_
                                             << ") .. Segments (" << segments_ << ")");
    return false;
  }
  if (GetNInternalQueues() == 0) {
    // Tokens in departure order; the core never holds more than `segments` of them.
    auto q = CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
        "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, segments_)));
    AddInternalQueue(q);
  }
  return GetNInternalQueues() == 1;
}

void OlafQueueDisc::InitializeParams() {
  olaf::Config c;
  c.segments = segments_;
  c.num_clusters = num_clusters_;
  c.num_grads = num_grads_;
  c.queue_size = queue_size_;
  c.num_chunks = num_chunks_;
  c.reward_filter = reward_threshold_ >= 0;
  c.reward_threshold = reward_threshold_ >= 0 ? reward_threshold_ : 0;
  c.activity_window_ns = static_cast<uint64_t>(activity_window_.GetNanoSeconds());
  try {
    core_ = std::make_unique<olaf::Queue>(c, discipline_);
  } catch (const std::invalid_argument &e) {
    NS_FATAL_ERROR("OlafQueueDisc: " << e.what());
  }
  owners_.assign(segments_, Owner{});
  buf_.resize(olaf::wire::update_datagram_len(num_grads_));
}

bool OlafQueueDisc::Configure(uint32_t queue_size, int64_t reward_threshold, Time activity_window) {
  NS_ABORT_MSG_UNLESS(core_, "OlafQueueDisc::Configure before Initialize");
  const bool filter = reward_threshold >= 0;
  return core_->configure(queue_size, filter, filter ? reward_threshold : 0,
                          static_cast<uint64_t>(activity_window.GetNanoSeconds()));
}

olaf::Status OlafQueueDisc::GetStatus() {
  return core_->status(static_cast<uint64_t>(Simulator::Now().GetNanoSeconds()));
}

bool OlafQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item) {
  Ptr<Packet> p = item->GetPacket();
  const size_t len = p->GetSize();
  last_ = olaf::EnqueueResult{};
  last_.error = olaf::Error::kBadLength;
  bool well_formed = false;
  if (len == buf_.size()) {
    p->CopyData(buf_.data(), buf_.size());
    const auto c = olaf::wire::classify(buf_.data(), len);
    if (c.kind == olaf::wire::Kind::kUpdate) {
      well_formed = true;
      last_ = core_->enqueue(olaf::wire::read_update(buf_.data(), num_grads_),
                             static_cast<uint64_t>(Simulator::Now().GetNanoSeconds()));
      if (last_.error == olaf::Error::kNone && (last_.decision == olaf::Decision::kAppend ||
                                                last_.decision == olaf::Decision::kReplaceWorker ||
                                                last_.decision == olaf::Decision::kReplaceReward)) {
        owners_[last_.segment] = Owner{c.src_ip, c.src_port};
      }
    } else if (c.kind == olaf::wire::Kind::kMalformed && c.malformed_reason == k::MALFORMED_CHUNK) {
      last_.error = olaf::Error::kBadChunk;
    }
  }
  if (last_.error != olaf::Error::kNone) {
    errors_++;
    if (!well_formed) malformed_++;
    if (last_.error == olaf::Error::kBadChunk) bad_chunk_++;
    decision_trace_(k::DECISION_ERROR, -1, item);
    DropBeforeEnqueue(item, olaf::error_text(last_.error));
    return false;
  }
  decision_trace_(static_cast<uint8_t>(last_.decision), last_.segment, item);
  if (last_.decision != olaf::Decision::kAppend) {
    DropBeforeEnqueue(item, olaf::decision_label(last_.decision));
    return false;
  }
  const bool ok = GetInternalQueue(0)->Enqueue(item);
  NS_ASSERT_MSG(ok, "OlafQueueDisc: token queue overflow (the core holds at most Segments)");
  return ok;
}

Ptr<QueueDiscItem> OlafQueueDisc::DoDequeue() {
  Ptr<QueueDiscItem> token = GetInternalQueue(0)->Dequeue();
  if (!token) return nullptr;
  auto dep = core_->dequeue();
  if (!dep) {
    dequeue_empty_++;
    DropAfterDequeue(token, "dequeue_empty");
    return nullptr;
  }
  last_departure_segment_ = dep->segment;
  Ptr<Packet> p = token->GetPacket();
  p->CopyData(buf_.data(), buf_.size());
  olaf::wire::write_departure(buf_.data(), dep->update);
  const Owner &o = owners_[dep->segment];
  olaf::wire::rewrite_source(buf_.data(), o.ip, o.port);
  return Create<OlafQueueDiscItem>(Create<Packet>(buf_.data(), buf_.size()));
}

Ptr<const QueueDiscItem> OlafQueueDisc::DoPeek() {
  // The head is committed to depart next: lock it (paper §12.1), so later updates of
  // its cluster append instead of folding into it, and its content is final.
  if (!core_->lock_head()) return nullptr;
  return GetInternalQueue(0)->Peek();
}

}  // namespace ns3
