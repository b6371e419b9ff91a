// ns-3 shell of the OlafQueue: a QueueDisc around the C++ core
// (olaf_queue_core.hpp), as olaf_queue_bmv2.cpp is the BMv2 shell. Used by the
// simulated Olaf switch (olaf/sim/cpp/olaf_switch.cpp) on its port toward the
// PS; docs/simulation.md describes the mapping.
//
// Items are whole IPv4 datagrams carrying an Olaf update whose cluster_id and
// worker_id the switch has already stamped (the P4 worker table's job).
// Enqueue hands the update to the core at Simulator::Now(): an APPEND keeps the
// item as the segment's *token* in an internal FIFO (the departure order);
// every other decision consumes the item (DropBeforeEnqueue with the
// decision's label as the reason — its content now lives in the segment, or it
// was dropped). Dequeue pops the head token and writes the head segment's
// content into it: Olaf fields and grads, and the source IPv4 address and UDP
// port of the segment's owner (the packet that appended or last replaced it),
// UDP checksum 0 — what the BMv2 egress does.
//
// Peek locks the head (the hardware's readout start): the simulated switch never
// peeks, it dequeues when the link is idle, so lock and departure coincide there.
//
// The FIFO baseline is the same class with Discipline "fifo" (the core's
// tail-drop FIFO of the same size, like the P4 switch's PARAM_FIFO flag).
//
// Chunks (docs/protocol.md "Chunks"): NumChunks is the deployment's K; the core
// keys its state by (cluster, chunk), QueueSize is in segments (at least K) and
// the status is in updates (ceil(occupancy / K), floor(QueueSize / K)). An item
// that is not an update datagram of NumGrads elements, or whose chunk fields
// are malformed (chunk >= num_chunks) or name another K, is counted
// (GetErrors, and by reason GetMalformed / GetBadChunk) and dropped.

#ifndef OLAF_QUEUE_NS3_HPP_
#define OLAF_QUEUE_NS3_HPP_

#include <cstdint>
#include <memory>
#include <vector>

#include "ns3/nstime.h"
#include "ns3/queue-disc.h"
#include "ns3/traced-callback.h"
#include "olaf_queue_core.hpp"

namespace ns3 {

// A queue-disc item whose packet is a whole IPv4 datagram (header included).
class OlafQueueDiscItem : public QueueDiscItem {
 public:
  static constexpr uint16_t kProtocol = 0x0800;  // IPv4 EtherType / PPP-mapped
  explicit OlafQueueDiscItem(Ptr<Packet> p);
  void AddHeader() override {}  // the packet already holds its IPv4 header
  bool Mark() override { return false; }
};

class OlafQueueDisc : public QueueDisc {
 public:
  static TypeId GetTypeId();
  OlafQueueDisc();
  ~OlafQueueDisc() override;

  // Runtime write (the controller's olaf_params): queue size K..segments,
  // reward threshold in Q15.16 (< 0: filtering off), activity window. Waiting
  // updates are kept. Returns false and changes nothing for a bad queue size.
  bool Configure(uint32_t queue_size, int64_t reward_threshold, Time activity_window);

  // Queue status for ACKs (paper §5) at Simulator::Now().
  olaf::Status GetStatus();
  // Decision, segment and error of the last Enqueue call.
  const olaf::EnqueueResult &GetLastEnqueue() const { return last_; }
  // Segment of the last departure (-1 before the first one).
  int GetLastDepartureSegment() const { return last_departure_segment_; }
  // Updates handed to the core that it rejected, plus items that were not an
  // update datagram of the configured size (every dropped item counts once).
  uint64_t GetErrors() const { return errors_; }
  // Of those: items that were not a well-formed update datagram of NumGrads
  // elements (olaf::wire::classify failed, a wrong length included) ...
  uint64_t GetMalformed() const { return malformed_; }
  // ... and updates the core refused for their chunk fields (Error::kBadChunk:
  // num_chunks other than NumChunks).
  uint64_t GetBadChunk() const { return bad_chunk_; }
  // Tokens whose dequeue found the core empty (egress_errors[dequeue_empty]).
  uint64_t GetDequeueEmpty() const { return dequeue_empty_; }
  const olaf::Queue &GetCore() const { return *core_; }

 private:
  bool DoEnqueue(Ptr<QueueDiscItem> item) override;
  Ptr<QueueDiscItem> DoDequeue() override;
  // Locks the head segment (the core's lock_head: it departs next and takes no more
  // updates) and returns its token; the token's bytes are written at Dequeue.
  Ptr<const QueueDiscItem> DoPeek() override;
  bool CheckConfig() override;
  void InitializeParams() override;

  struct Owner {
    uint32_t ip = 0;
    uint16_t port = 0;
  };

  // Attributes
  olaf::Discipline discipline_ = olaf::Discipline::kOlaf;
  uint32_t segments_ = 0;
  uint32_t num_clusters_ = 0;
  uint32_t num_grads_ = 0;
  uint32_t num_chunks_ = 1;
  uint32_t queue_size_ = 0;
  int64_t reward_threshold_ = -1;
  Time activity_window_;

  std::unique_ptr<olaf::Queue> core_;
  std::vector<Owner> owners_;
  std::vector<uint8_t> buf_;
  olaf::EnqueueResult last_;
  int last_departure_segment_ = -1;
  uint64_t errors_ = 0;
  uint64_t malformed_ = 0;
  uint64_t bad_chunk_ = 0;
  uint64_t dequeue_empty_ = 0;
  // (decision code, segment, item) of every enqueue; decision 255 = error.
  TracedCallback<uint8_t, int, Ptr<const QueueDiscItem>> decision_trace_;
};

}  // namespace ns3

#endif  // OLAF_QUEUE_NS3_HPP_
