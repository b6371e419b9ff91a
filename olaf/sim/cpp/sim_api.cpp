// Simulation behind sim_api.hpp: ns-3 nodes, point-to-point links (olaf_link.hpp), the Olaf
// switches and hosts, one run.

#include "sim_api.hpp"

#include <chrono>
#include <stdexcept>

#include "fate_ledger.hpp"
#include "ns3/core-module.h"
#include "ns3/mac48-address.h"
#include "ns3/network-module.h"
#include "olaf_hosts.hpp"
#include "olaf_link.hpp"
#include "olaf_switch.hpp"

namespace olaf::sim {

using ns3::Ptr;

struct Simulation::Impl {
  enum class Kind { kSwitch, kWorker, kPs };
  struct NodeEntry {
    Kind kind;
    std::string name;
    Ptr<ns3::Node> node;
    Ptr<OlafSwitch> sw;
    Ptr<OlafWorker> worker;
    Ptr<OlafPs> ps;
  };

  uint32_t num_params, chunk_len, num_chunks;
  bool keep_records;
  std::unique_ptr<FateLedger> ledger;
  std::vector<NodeEntry> nodes;
  std::string scheduler = "ns3::MapScheduler";
  bool ran = false;

  NodeEntry &at(int i, Kind kind, const char *what) {
    if (i < 0 || static_cast<size_t>(i) >= nodes.size() || nodes[i].kind != kind)
      throw std::invalid_argument(std::string("node ") + std::to_string(i) + " is not a " + what);
    return nodes[i];
  }
  const NodeEntry &at(int i, Kind kind, const char *what) const {
    return const_cast<Impl *>(this)->at(i, kind, what);
  }

  Ptr<OlafLinkDevice> Device(NodeEntry &n, double rate_bps, uint32_t queue_packets) {
    auto dev = ns3::CreateObject<OlafLinkDevice>();
    dev->SetAddress(ns3::Mac48Address::Allocate());
    dev->Configure(ns3::DataRate(static_cast<uint64_t>(rate_bps)), queue_packets);
    n.node->AddDevice(dev);
    return dev;
  }

  void Attach(NodeEntry &n, Ptr<OlafLinkDevice> dev) {
    switch (n.kind) {
      case Kind::kSwitch:
        n.sw->AttachPort(dev);
        break;
      case Kind::kWorker:
        if (n.node->GetNDevices() > 1)
          throw std::invalid_argument(n.name + ": a host has one link");
        n.worker->SetDevice(dev);
        break;
      case Kind::kPs:
        if (n.node->GetNDevices() > 1)
          throw std::invalid_argument(n.name + ": a host has one link");
        n.ps->SetDevice(dev);
        break;
    }
  }
};

Simulation::Simulation(uint64_t seed, uint32_t num_params, uint32_t chunk_len, uint32_t num_chunks,
                       bool keep_records)
    : impl_(std::make_unique<Impl>()) {
  if (num_params < 1 || chunk_len < 1 || chunk_len > 0xFFFF || num_chunks < 1 ||
      num_chunks > 0xFFFF || num_chunks != (uint64_t{num_params} + chunk_len - 1) / chunk_len)
    throw std::invalid_argument(
        "Simulation: need P >= 1, 1 <= L <= 65535, K = ceil(P / L) <= 65535; got P=" +
        std::to_string(num_params) + " L=" + std::to_string(chunk_len) +
        " K=" + std::to_string(num_chunks));
  impl_->num_params = num_params;
  impl_->chunk_len = chunk_len;
  impl_->num_chunks = num_chunks;
  impl_->keep_records = keep_records;
  impl_->ledger = std::make_unique<FateLedger>(num_chunks, keep_records);
  ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(seed % 0xFFFFFFFFu) + 1);
}

Simulation::~Simulation() = default;

int Simulation::AddSwitch(const std::string &name, const QueueParams &q) {
  if (q.discipline != "olaf" && q.discipline != "fifo")
    throw std::invalid_argument(name + ": discipline must be olaf or fifo, got " + q.discipline);
  if (q.queue_size < impl_->num_chunks || q.queue_size > q.segments)
    throw std::invalid_argument(name + ": queue_size must be in K.." + "segments (" +
                                std::to_string(impl_->num_chunks) + ".." +
                                std::to_string(q.segments) + ")");
  Impl::NodeEntry n{Impl::Kind::kSwitch, name, ns3::CreateObject<ns3::Node>(), {}, {}, {}};
  n.sw =
      ns3::Create<OlafSwitch>(n.node, q, impl_->chunk_len, impl_->num_chunks, impl_->ledger.get());
  impl_->nodes.push_back(n);
  return static_cast<int>(impl_->nodes.size() - 1);
}

int Simulation::AddWorker(const std::string &name, const WorkerParams &w) {
  if (w.period_ns <= 0 || w.jitter_ns < 0 || w.jitter_ns > w.period_ns)
    throw std::invalid_argument(name + ": need period > 0 and 0 <= jitter <= period");
  if (w.grad_frac_bits <= 0 || w.reward_frac_bits <= 0)
    throw std::invalid_argument(name + ": fixed-point formats not set");
  Impl::NodeEntry n{Impl::Kind::kWorker, name, ns3::CreateObject<ns3::Node>(), {}, {}, {}};
  n.worker = ns3::CreateObject<OlafWorker>(
      w, impl_->num_params, impl_->chunk_len, impl_->num_chunks, impl_->ledger.get(),
      static_cast<int>(impl_->nodes.size()), impl_->keep_records);
  n.node->AddApplication(n.worker);
  n.worker->SetStartTime(ns3::Seconds(0));
  impl_->nodes.push_back(n);
  return static_cast<int>(impl_->nodes.size() - 1);
}

int Simulation::AddPs(const std::string &name, uint32_t ip) {
  Impl::NodeEntry n{Impl::Kind::kPs, name, ns3::CreateObject<ns3::Node>(), {}, {}, {}};
  n.ps = ns3::CreateObject<OlafPs>(ip, impl_->num_params, impl_->chunk_len, impl_->num_chunks,
                                   impl_->ledger.get(), impl_->keep_records);
  n.node->AddApplication(n.ps);
  impl_->nodes.push_back(n);
  return static_cast<int>(impl_->nodes.size() - 1);
}

uint32_t Simulation::Connect(int a, int b, const LinkParams &l) {
  if (a < 0 || b < 0 || static_cast<size_t>(a) >= impl_->nodes.size() ||
      static_cast<size_t>(b) >= impl_->nodes.size() || a == b)
    throw std::invalid_argument("Connect: bad node indices");
  if (!(l.up_bps > 0) || !(l.down_bps > 0) || l.delay_ns < 0 || l.device_queue_packets < 1)
    throw std::invalid_argument("Connect: rates must be > 0, delay >= 0, device queue >= 1");
  Impl::NodeEntry &na = impl_->nodes[a];
  Impl::NodeEntry &nb = impl_->nodes[b];
  auto da = impl_->Device(na, l.up_bps, l.device_queue_packets);
  auto db = impl_->Device(nb, l.down_bps, l.device_queue_packets);
  auto ch = ns3::CreateObject<OlafLinkChannel>(ns3::NanoSeconds(l.delay_ns));
  da->Attach(ch);
  db->Attach(ch);
  impl_->Attach(na, da);
  impl_->Attach(nb, db);
  return da->GetIfIndex() | (db->GetIfIndex() << 16);
}

void Simulation::SetQueuePort(int sw, int port) {
  impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->SetQueuePort(port);
}

void Simulation::AddRoute(int sw, uint32_t prefix, int prefix_len, int port) {
  impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->AddRoute(prefix, prefix_len, port);
}

void Simulation::AddWorkerEntry(int sw, uint32_t ip, uint16_t worker_id, uint16_t cluster_id) {
  impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->AddWorker(ip, worker_id, cluster_id);
}

void Simulation::AddReplica(int sw, uint16_t cluster_id, int port, uint32_t rewrite_ip) {
  impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->AddReplica(cluster_id, port, rewrite_ip);
}

void Simulation::SetScheduler(const std::string &type_name) {
  ns3::TypeId tid;
  if (!ns3::TypeId::LookupByNameFailSafe(type_name, &tid))
    throw std::invalid_argument("unknown ns-3 scheduler " + type_name);
  impl_->scheduler = type_name;
}

RunStats Simulation::Run(int64_t stop_ns) {
  if (impl_->ran) throw std::logic_error("Simulation::Run may be called once");
  impl_->ran = true;
  ns3::ObjectFactory sched;
  sched.SetTypeId(impl_->scheduler);
  ns3::Simulator::SetScheduler(sched);
  const uint64_t events0 = ns3::Simulator::GetEventCount();
  const uint64_t packets0 = g_packets_sent;
  const auto t0 = std::chrono::steady_clock::now();
  ns3::Simulator::Stop(ns3::NanoSeconds(stop_ns));
  ns3::Simulator::Run();
  RunStats s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.events = ns3::Simulator::GetEventCount() - events0;
  s.packets = g_packets_sent - packets0;
  s.sim_end_ns = ns3::Simulator::Now().GetNanoSeconds();
  ns3::Simulator::Destroy();
  return s;
}

const std::vector<GenRecord> &Simulation::Gens(int worker) const {
  return impl_->at(worker, Impl::Kind::kWorker, "worker").worker->gens();
}
const std::vector<AckRecord> &Simulation::Acks(int worker) const {
  return impl_->at(worker, Impl::Kind::kWorker, "worker").worker->acks();
}
const std::vector<PsRecord> &Simulation::PsUpdates(int ps) const {
  return impl_->at(ps, Impl::Kind::kPs, "PS").ps->updates();
}
WorkerCounters Simulation::GetWorkerCounters(int worker) const {
  return impl_->at(worker, Impl::Kind::kWorker, "worker").worker->counters();
}
PsCounters Simulation::GetPsCounters(int ps) const {
  return impl_->at(ps, Impl::Kind::kPs, "PS").ps->counters();
}
SwitchCounters Simulation::GetSwitchCounters(int sw) const {
  return impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->Counters();
}
const std::vector<LedgerUpdate> &Simulation::LedgerUpdates() const {
  return impl_->ledger->updates();
}
const std::vector<LedgerChunk> &Simulation::LedgerChunks() const { return impl_->ledger->chunks(); }
std::vector<uint32_t> Simulation::GetSwitchStatus(int sw) const {
  const olaf::Status s = impl_->at(sw, Impl::Kind::kSwitch, "switch").sw->Status();
  return {s.queue_util, s.active_clusters, s.queue_size};
}

}  // namespace olaf::sim
