// Where every chunk of every simulated update went (docs/simulation.md "Chunks").
//
// ns-3 knows each packet's fate; this ledger writes it down. Every chunk a
// synthetic worker hands to its access link gets a chunk id (update id · K +
// chunk) and travels in a *bundle*: the set of chunk ids whose content a packet
// carries. A packet carries its bundle's id in a BundleTag (an ns-3 packet tag,
// not on the wire); the switch copies the tag onto the packets it builds and
// keeps, per queue segment, the bundle of the waiting update.
//
// Own fate of a chunk (what happened to the packet it was sent in), exactly one
// per chunk handed to the link:
//   delivered  its packet reached the PS (alone or carrying folded chunks);
//   folded     a switch aggregated it into a waiting update of its key;
//   dropped    an OlafQueue dropped it (drop_full, drop_reward, an error) or a
//              replacement overwrote it while it waited;
//   lost       a device queue dropped its packet (lost_device) or it was still
//              in the network when the simulation stopped (in flight).
// Chunks the worker's own device refused are not_sent (never on the link).
// Content: a chunk's content reached the PS when the packet of the bundle that
// holds it did (t_content_ns, reception = the PS's reception serial).
//
// A disabled ledger (runs without records, scale runs) tags nothing and
// stores nothing: every call is then a no-op.

#ifndef OLAF_SIM_FATE_LEDGER_HPP_
#define OLAF_SIM_FATE_LEDGER_HPP_

#include <cstdint>
#include <ostream>
#include <vector>

#include "ns3/packet.h"
#include "ns3/tag.h"
#include "sim_api.hpp"

namespace olaf::sim {

class BundleTag : public ns3::Tag {
 public:
  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;
  uint32_t GetSerializedSize() const override { return 4; }
  void Serialize(ns3::TagBuffer b) const override { b.WriteU32(id); }
  void Deserialize(ns3::TagBuffer b) override { id = b.ReadU32(); }
  void Print(std::ostream &os) const override { os << "bundle=" << id; }
  uint32_t id = 0;
};

class FateLedger {
 public:
  FateLedger(uint32_t num_chunks, bool enabled) : k_(num_chunks), enabled_(enabled) {}

  // A worker update whose chunks are about to be sent; returns its update id.
  uint64_t NewUpdate(int64_t worker, uint32_t seq, uint64_t gen_ts, int32_t reward_sum);
  // Chunk `chunk` of `update` goes out in p: p gets a new bundle holding it.
  // Call Refused() if the device then refuses p.
  void Tag(uint64_t update, uint32_t chunk, ns3::Packet &p);
  void Refused(const ns3::Packet &p);

  // Whether this ledger tracks chunks (records on); disabled, no packet carries a bundle.
  bool enabled() const { return enabled_; }
  // Bundle carried by p, -1 if none.
  static int64_t BundleOf(const ns3::Packet &p);
  // BundleOf(p) when the ledger is enabled, else -1 without reading p's tags.
  int64_t Bundle(const ns3::Packet &p) const { return enabled_ ? BundleOf(p) : -1; }
  static void SetBundle(ns3::Packet &p, int64_t bundle);

  // Queue decisions and packet fates (bundle -1: untracked, ignored).
  void Folded(int64_t bundle, int64_t into);  // owner folded; its members join `into`
  void Dropped(int64_t bundle);               // owner dropped by a queue; content lost
  void Lost(int64_t bundle);                  // a device queue dropped the packet
  void Delivered(int64_t bundle, int64_t t_ns, int64_t reception);

  const std::vector<LedgerUpdate> &updates() const { return updates_; }
  const std::vector<LedgerChunk> &chunks() const { return chunks_; }

 private:
  int64_t NewBundle(uint64_t chunk_id);
  void Release(int64_t bundle);
  void SetOwnFate(int64_t bundle, ChunkFate f);

  uint32_t k_;
  bool enabled_;
  std::vector<LedgerUpdate> updates_;
  std::vector<LedgerChunk> chunks_;             // index: update id · K + chunk
  std::vector<std::vector<uint64_t>> bundles_;  // chunk ids; [0] is the owner
  std::vector<uint32_t> free_;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_FATE_LEDGER_HPP_
