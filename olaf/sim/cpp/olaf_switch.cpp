// Simulated Olaf switch — see olaf_switch.hpp.

#include "olaf_switch.hpp"

#include <algorithm>

#include "ns3/abort.h"
#include "ns3/enum.h"
#include "ns3/integer.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"
#include "olaf_wire.hpp"

namespace olaf::sim {

namespace k = olaf::constants;
namespace w = olaf::wire;
using ns3::Ptr;

OlafSwitch::OlafSwitch(Ptr<ns3::Node> node, const QueueParams &q, uint32_t num_grads,
                       uint32_t num_chunks, FateLedger *ledger)
    : node_(node),
      num_grads_(num_grads),
      ledger_(ledger),
      segment_bundle_(q.segments, -1),
      malformed_(k::NUM_MALFORMED, 0),
      traffic_(k::NUM_TRAFFIC, 0) {
  NS_ABORT_MSG_UNLESS(q.discipline == "olaf" || q.discipline == "fifo",
                      "discipline must be olaf or fifo, got " << q.discipline);
  queue_ = ns3::CreateObjectWithAttributes<ns3::OlafQueueDisc>(
      "Discipline",
      ns3::EnumValue(q.discipline == "fifo" ? olaf::Discipline::kFifo : olaf::Discipline::kOlaf),
      "Segments", ns3::UintegerValue(q.segments), "NumClusters", ns3::UintegerValue(q.num_clusters),
      "NumGrads", ns3::UintegerValue(num_grads), "NumChunks", ns3::UintegerValue(num_chunks),
      "QueueSize", ns3::UintegerValue(q.queue_size), "RewardThreshold",
      ns3::IntegerValue(q.reward_threshold), "ActivityWindow",
      ns3::TimeValue(ns3::NanoSeconds(q.activity_window_ns)));
  queue_->Initialize();
  buf_.resize(std::max(w::update_datagram_len(num_grads), w::ack_datagram_len(num_grads)) + 64);
}

void OlafSwitch::AttachPort(Ptr<OlafLinkDevice> dev) {
  NS_ABORT_MSG_UNLESS(static_cast<size_t>(dev->GetIfIndex()) == ports_.size(),
                      "ports must be attached in device order");
  ports_.push_back(dev);
  broadcast_.push_back(dev->GetBroadcast());
  dev->SetReceiveCallback(ns3::MakeCallback(&OlafSwitch::Receive, this));
  dev->SetTxDropCallback(ns3::MakeCallback(&OlafSwitch::OnTxDrop, this));
}

void OlafSwitch::SetQueuePort(int port) {
  NS_ABORT_MSG_UNLESS(port >= 0 && static_cast<size_t>(port) < ports_.size(), "no port " << port);
  NS_ABORT_MSG_UNLESS(queue_port_ < 0, "the queue port is set once");
  queue_port_ = port;
  ports_[port]->SetTxBeginCallback(ns3::MakeCallback(&OlafSwitch::OnTxBegin, this));
  ports_[port]->SetTxEndCallback(ns3::MakeCallback(&OlafSwitch::OnTxEnd, this));
}

void OlafSwitch::AddRoute(uint32_t prefix, int prefix_len, int port) {
  NS_ABORT_MSG_UNLESS(prefix_len >= 0 && prefix_len <= 32, "prefix length " << prefix_len);
  const uint32_t mask = prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
  routes_[prefix_len][prefix & mask] = port;
  if (std::find(route_lengths_.begin(), route_lengths_.end(), prefix_len) == route_lengths_.end()) {
    route_lengths_.push_back(prefix_len);
    std::sort(route_lengths_.rbegin(), route_lengths_.rend());
  }
}

void OlafSwitch::AddWorker(uint32_t ip, uint16_t worker_id, uint16_t cluster_id) {
  workers_[ip] = WorkerEntry{worker_id, cluster_id};
}

void OlafSwitch::AddReplica(uint16_t cluster_id, int port, uint32_t rewrite_ip) {
  groups_[cluster_id].push_back(Replica{port, rewrite_ip});
}

int OlafSwitch::Route(uint32_t dst) const {
  for (int len : route_lengths_) {
    const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
    const auto &table = routes_[len];
    auto it = table.find(dst & mask);
    if (it != table.end()) return it->second;
  }
  return -1;
}

Ptr<ns3::Packet> OlafSwitch::Build(const uint8_t *b, size_t len, const ns3::Packet &from) const {
  auto p = ns3::Create<ns3::Packet>(b, len);
  FateLedger::SetBundle(*p, ledger_->Bundle(from));
  return p;
}

void OlafSwitch::Send(int port, Ptr<ns3::Packet> p) {
  g_packets_sent++;
  ports_[port]->Send(p, broadcast_[port], ns3::OlafQueueDiscItem::kProtocol);
}

bool OlafSwitch::Receive(Ptr<ns3::NetDevice>, Ptr<const ns3::Packet> p, uint16_t protocol,
                         const ns3::Address &) {
  if (protocol != ns3::OlafQueueDiscItem::kProtocol) {
    traffic_[k::TRAFFIC_NON_IPV4]++;
    return true;
  }
  const size_t len = p->GetSize();
  if (len > buf_.size()) buf_.resize(len);
  p->CopyData(buf_.data(), len);
  uint8_t *b = buf_.data();
  const w::Classified c = w::classify(b, len);
  if (c.kind == w::Kind::kMalformed) {
    malformed_[c.malformed_reason]++;
    ledger_->Dropped(ledger_->Bundle(*p));
    return true;
  }
  if (c.kind == w::Kind::kAck) {
    w::embed_status(b, queue_->GetStatus());
    const uint16_t cluster = w::load16(b + w::kOlafOffset + w::off::kClusterId);
    auto g = groups_.find(cluster);
    if (g != groups_.end()) {
      traffic_[k::TRAFFIC_ACK_MULTICAST]++;
      // Replicas toward another switch share the unchanged bytes (copy-on-write).
      Ptr<ns3::Packet> unchanged;
      for (const Replica &r : g->second)
        if (r.rewrite_ip == 0 && !unchanged) unchanged = ns3::Create<ns3::Packet>(b, len);
      for (const Replica &r : g->second) {
        if (r.rewrite_ip == 0) {
          Send(r.port, unchanged->Copy());
        } else {
          w::rewrite_destination(b, r.rewrite_ip);
          Send(r.port, ns3::Create<ns3::Packet>(b, len));
        }
      }
      return true;
    }
    traffic_[k::TRAFFIC_ACK_UNICAST]++;
  }
  const int port = Route(c.dst_ip);
  if (port < 0) {
    traffic_[k::TRAFFIC_NO_ROUTE]++;
    ledger_->Dropped(ledger_->Bundle(*p));
    return true;
  }
  if (c.kind == w::Kind::kUpdate) {
    const uint8_t flags = b[w::kOlafOffset + w::off::kFlags];
    auto wk = workers_.find(c.src_ip);
    if (flags & k::UPDATE_FLAG_INIT) {
      traffic_[k::TRAFFIC_INIT]++;
    } else if (wk == workers_.end()) {
      traffic_[k::TRAFFIC_UNKNOWN_SOURCE]++;
    } else if (port == queue_port_) {
      w::store16(b + w::kOlafOffset + w::off::kWorkerId, wk->second.worker_id);
      w::store16(b + w::kOlafOffset + w::off::kClusterId, wk->second.cluster_id);
      const int64_t bundle = ledger_->Bundle(*p);
      const bool queued = queue_->Enqueue(ns3::Create<ns3::OlafQueueDiscItem>(Build(b, len, *p)));
      const olaf::EnqueueResult &r = queue_->GetLastEnqueue();
      if (r.error != olaf::Error::kNone) {
        // num_chunks other than this switch's K: malformed[chunk]; else the extern refused it.
        malformed_[r.error == olaf::Error::kBadChunk ? k::MALFORMED_CHUNK : k::MALFORMED_EXTERN]++;
        ledger_->Dropped(bundle);
      } else {
        switch (r.decision) {
          case olaf::Decision::kAppend:
            segment_bundle_[r.segment] = bundle;
            break;
          case olaf::Decision::kAggregate:
            ledger_->Folded(bundle, segment_bundle_[r.segment]);
            break;
          case olaf::Decision::kReplaceWorker:
          case olaf::Decision::kReplaceReward:
            ledger_->Dropped(segment_bundle_[r.segment]);  // the overwritten update
            segment_bundle_[r.segment] = bundle;
            break;
          case olaf::Decision::kDropReward:
          case olaf::Decision::kDropFull:
            ledger_->Dropped(bundle);
            break;
        }
      }
      if (queued) Pump();
      return true;
    } else {
      traffic_[k::TRAFFIC_BYPASS]++;  // a known worker's update not headed for the queue port
    }
  } else if (c.kind == w::Kind::kOther) {
    traffic_[k::TRAFFIC_BYPASS]++;
  }
  Send(port, Build(b, len, *p));
  return true;
}

void OlafSwitch::OnTxBegin() { queue_port_busy_ = true; }

void OlafSwitch::OnTxEnd() {
  queue_port_busy_ = false;
  // After the device has taken the next packet of its own queue, if any.
  ns3::Simulator::ScheduleNow(&OlafSwitch::Pump, this);
}

void OlafSwitch::OnTxDrop(Ptr<const ns3::Packet> p) {
  tx_drops_++;
  ledger_->Lost(ledger_->Bundle(*p));
}

void OlafSwitch::Pump() {
  if (queue_port_busy_ || queue_->GetNPackets() == 0) return;
  Ptr<ns3::QueueDiscItem> item = queue_->Dequeue();
  if (!item) return;
  const int seg = queue_->GetLastDepartureSegment();
  FateLedger::SetBundle(*item->GetPacket(), segment_bundle_[seg]);
  segment_bundle_[seg] = -1;
  Send(queue_port_, item->GetPacket());
}

SwitchCounters OlafSwitch::Counters() const {
  const olaf::Counters &c = queue_->GetCore().counters();
  SwitchCounters s;
  s.decisions.assign(c.decisions.begin(), c.decisions.end());
  for (size_t cl = 0; cl < c.per_cluster.size(); cl++) {
    s.cluster_decisions.insert(s.cluster_decisions.end(), c.per_cluster[cl].begin(),
                               c.per_cluster[cl].end());
  }
  s.cluster_departures = c.departures;
  s.malformed = malformed_;
  s.traffic = traffic_;
  s.egress_errors = {queue_->GetDequeueEmpty()};
  s.tx_drops = tx_drops_;
  return s;
}

olaf::Status OlafSwitch::Status() const { return queue_->GetStatus(); }

}  // namespace olaf::sim
