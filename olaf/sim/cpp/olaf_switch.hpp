// A simulated Olaf switch: the P4 pipeline of p4src/olaf.p4 over point-to-point
// devices (olaf_link.hpp), with the OlafQueueDisc (p4src/extern/olaf_queue_ns3.hpp)
// on the port toward the PS. Tables are written by olaf/sim (the controller's
// role); counters mirror the P4 counters (docs/dataplane.md).
//
// Ingress, as in p4src/olaf.p4: malformed Olaf messages are counted and
// dropped; INIT updates and updates from unknown sources are forwarded
// without queueing; an update from a worker in the worker table gets its
// worker_id/cluster_id stamped and is offered to the queue if its route leads
// to the queue port (else forwarded); an ACK gets the queue status (multi-hop
// rule, olaf::wire::embed_status) and is replicated to its cluster's
// multicast group (replicas toward a worker rewritten to its address, toward
// another switch unchanged), or routed if the cluster has no group; anything
// else is routed (ipv4_lpm). Egress of the queue port: the head of the queue
// departs when the link is idle (no device buffering between the queue and
// the wire, like the BMv2 traffic manager releasing a token).
//
// Chunks: the queue holds K·Q_max segments keyed by (cluster, chunk); an
// update whose chunk fields are malformed or name another K is counted in
// malformed[chunk] and dropped. Every update packet's chunk bundle
// (fate_ledger.hpp) follows it: copied onto forwarded packets, kept per
// segment while it waits, reported to the ledger on aggregate, replace, drop
// and device-queue drops.

#ifndef OLAF_SIM_OLAF_SWITCH_HPP_
#define OLAF_SIM_OLAF_SWITCH_HPP_

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fate_ledger.hpp"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/simple-ref-count.h"
#include "olaf_link.hpp"
#include "olaf_queue_ns3.hpp"
#include "sim_api.hpp"

namespace olaf::sim {

class OlafSwitch : public ns3::SimpleRefCount<OlafSwitch> {
 public:
  // q.queue_size in segments (K per update); num_grads = L, num_chunks = K.
  OlafSwitch(ns3::Ptr<ns3::Node> node, const QueueParams &q, uint32_t num_grads,
             uint32_t num_chunks, FateLedger *ledger);

  // Registers a device of this switch's node as the next port (index = ifIndex).
  void AttachPort(ns3::Ptr<OlafLinkDevice> dev);
  void SetQueuePort(int port);
  void AddRoute(uint32_t prefix, int prefix_len, int port);
  void AddWorker(uint32_t ip, uint16_t worker_id, uint16_t cluster_id);
  void AddReplica(uint16_t cluster_id, int port, uint32_t rewrite_ip);

  SwitchCounters Counters() const;
  olaf::Status Status() const;

 private:
  struct Replica {
    int port;
    uint32_t rewrite_ip;  // 0: forward unchanged (toward another Olaf switch)
  };
  struct WorkerEntry {
    uint16_t worker_id;
    uint16_t cluster_id;
  };

  bool Receive(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<const ns3::Packet> p, uint16_t protocol,
               const ns3::Address &from);
  int Route(uint32_t dst) const;  // -1: no route
  void Send(int port, ns3::Ptr<ns3::Packet> p);
  // A packet of the len bytes at b carrying the bundle of `from` (if any).
  ns3::Ptr<ns3::Packet> Build(const uint8_t *b, size_t len, const ns3::Packet &from) const;
  void OnTxBegin();
  void OnTxEnd();
  void OnTxDrop(ns3::Ptr<const ns3::Packet> p);
  void Pump();

  ns3::Ptr<ns3::Node> node_;
  ns3::Ptr<ns3::OlafQueueDisc> queue_;
  uint32_t num_grads_;
  FateLedger *ledger_;
  std::vector<int64_t> segment_bundle_;  // bundle of each segment's waiting update, -1: none
  std::vector<ns3::Ptr<OlafLinkDevice>> ports_;
  std::vector<ns3::Address> broadcast_;  // each port's broadcast address (the frames' destination)
  int queue_port_ = -1;
  bool queue_port_busy_ = false;
  std::array<std::unordered_map<uint32_t, int>, 33> routes_;  // by prefix length
  std::vector<int> route_lengths_;                            // non-empty lengths, longest first
  std::unordered_map<uint32_t, WorkerEntry> workers_;
  std::unordered_map<uint16_t, std::vector<Replica>> groups_;
  std::vector<uint8_t> buf_;
  // Counters (P4 indices: olaf_constants.hpp)
  std::vector<uint64_t> malformed_, traffic_;
  uint64_t tx_drops_ = 0;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_OLAF_SWITCH_HPP_
