// Olaf wire format in C++ (docs/protocol.md) for shells that see whole
// datagrams: the ns-3 queue discipline and the simulated hosts and switches
// (olaf/sim/cpp/). No ns-3 or BMv2 dependency: plain byte buffers.
//
// A *datagram* here is an IPv4 packet without options (20 B) carrying UDP
// (8 B) and an Olaf message; the Olaf message starts at kOlafOffset. The
// Python codec (olaf/wire.py) is the reference; tests/test_sim_vectors.py
// feeds Python-built datagrams through this codec and parses what it writes.

#ifndef OLAF_WIRE_HPP_
#define OLAF_WIRE_HPP_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "olaf_constants.hpp"
#include "olaf_queue_core.hpp"

namespace olaf::wire {

namespace k = olaf::constants;

constexpr size_t kUdpOffset = k::IPV4_HEADER_LEN;
constexpr size_t kOlafOffset = k::IPV4_HEADER_LEN + k::UDP_HEADER_LEN;
constexpr size_t kUpdateGradsOffset = kOlafOffset + k::UPDATE_HEADER_LEN;
constexpr size_t kAckWeightsOffset = kOlafOffset + k::ACK_HEADER_LEN;
constexpr uint8_t kDefaultTtl = 64;

// Field offsets inside the Olaf message (docs/protocol.md tables).
namespace off {
constexpr size_t kVersionType = 0;
constexpr size_t kFlags = 1;
constexpr size_t kElements = 2;                     // num_grads / num_weights
constexpr size_t kChunk = k::CHUNK_OFFSET;          // chunk index, both messages
constexpr size_t kNumChunks = k::CHUNK_OFFSET + 2;  // K, both messages
constexpr size_t kClusterId = 8;
constexpr size_t kWorkerId = 10;
constexpr size_t kSeq = 12;
constexpr size_t kCount = 16;
constexpr size_t kReward = 18;  // reward_sum / global_reward
constexpr size_t kGenTs = 22;
constexpr size_t kQueueUtil = 30;  // ACK only
constexpr size_t kActiveClusters = 33;
constexpr size_t kQueueSize = 35;
static_assert(kGenTs + 8 == k::UPDATE_HEADER_LEN && kQueueSize + 3 == k::ACK_HEADER_LEN,
              "field offsets disagree with the generated header lengths");
}  // namespace off

inline uint16_t load16(const uint8_t *p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t load24(const uint8_t *p) {
  return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
inline uint32_t load32(const uint8_t *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t load64(const uint8_t *p) { return (uint64_t{load32(p)} << 32) | load32(p + 4); }
inline void store16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store24(uint8_t *p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
inline void store32(uint8_t *p, uint32_t v) {
  store16(p, static_cast<uint16_t>(v >> 16));
  store16(p + 2, static_cast<uint16_t>(v));
}
inline void store64(uint8_t *p, uint64_t v) {
  store32(p, static_cast<uint32_t>(v >> 32));
  store32(p + 4, static_cast<uint32_t>(v));
}

// Length of an update / ACK datagram with `elements` gradient / weight elements.
constexpr size_t update_datagram_len(size_t grads) {
  return kUpdateGradsOffset + k::ELEMENT_LEN * grads;
}
constexpr size_t ack_datagram_len(size_t weights) {
  return kAckWeightsOffset + k::ELEMENT_LEN * weights;
}

// IPv4 header checksum (RFC 791) over the 20 header bytes at p.
uint16_t ipv4_checksum(const uint8_t *p);

// Writes an IPv4 header (no options, DF clear, protocol UDP, checksum set)
// and a UDP header (checksum 0, RFC 768) for `payload_len` bytes of UDP payload.
void write_ipv4_udp(uint8_t *p, uint32_t src_ip, uint32_t dst_ip, uint16_t src_port,
                    uint16_t dst_port, size_t payload_len, uint8_t ttl = kDefaultTtl);

// Rewrites the IPv4 source and the UDP source port (checksum 0, IPv4 checksum recomputed).
void rewrite_source(uint8_t *p, uint32_t src_ip, uint16_t src_port);
// Rewrites the IPv4 destination (UDP checksum 0, IPv4 checksum recomputed).
void rewrite_destination(uint8_t *p, uint32_t dst_ip);

// What a datagram is, as the P4 parser and ValidateOlaf see it (p4src/include/).
enum class Kind : uint8_t { kOther, kUpdate, kAck, kMalformed };

struct Classified {
  Kind kind = Kind::kOther;
  uint32_t malformed_reason = 0;  // constants::MALFORMED_*, for kMalformed
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

// Classifies the datagram of `len` bytes at p (IPv4 with IHL 5, not
// fragmented, UDP to port 50100 / 50101; lengths, version, msg_type, chunk
// range (num_chunks >= 1, chunk < num_chunks: MALFORMED_CHUNK) and count
// checked as in docs/protocol.md "Versioning and malformed messages"). Whether
// num_chunks is the deployment's K is the switch's check, not this one.
// Needs the first min(len, kAckWeightsOffset) bytes.
Classified classify(const uint8_t *p, size_t len);

// Update header fields at datagram p (p must hold an update datagram).
struct UpdateHeader {
  uint8_t flags = 0;
  uint16_t num_grads = 0;
  uint16_t chunk = 0;       // slice index, 0 .. num_chunks - 1 (docs/protocol.md "Chunks")
  uint16_t num_chunks = 1;  // K
  uint16_t cluster_id = 0;
  uint16_t worker_id = 0;
  uint32_t seq = 0;
  uint16_t count = 1;
  int32_t reward_sum = 0;
  uint64_t gen_ts = 0;
};
UpdateHeader read_update_header(const uint8_t *p);
// Writes the whole update message (header + grads) at datagram offset kOlafOffset.
void write_update(uint8_t *p, const UpdateHeader &h, const int32_t *grads, size_t num_grads);
// The queue core's view of an update datagram (grads read from the payload;
// chunk and num_chunks as on the wire).
olaf::Update read_update(const uint8_t *p, size_t num_grads);
// Writes a departing update's fields and grads into an update datagram.
void write_departure(uint8_t *p, const olaf::Update &u);

struct AckHeader {
  uint8_t flags = 0;
  uint16_t num_weights = 0;  // the slice's length, unpadded
  uint16_t chunk = 0;        // chunk of the update answered
  uint16_t num_chunks = 1;   // K
  uint16_t cluster_id = 0;
  uint16_t worker_id = 0;
  uint32_t seq = 0;
  uint16_t count = 0;
  int32_t global_reward = 0;
  uint64_t gen_ts = 0;
  uint32_t queue_util = 0;
  uint16_t active_clusters = 0;
  uint32_t queue_size = 0;
};
AckHeader read_ack_header(const uint8_t *p);
// Writes the ACK header (h.num_weights included); the weights follow at kAckWeightsOffset.
void write_ack_header(uint8_t *p, const AckHeader &h);

// Multi-hop status rule (docs/protocol.md "Multi-hop status", p4src/olaf.p4):
// writes the switch's status into the ACK datagram at p if STATUS_VALID is
// clear or the switch is more congested (own.Q_max * carried.N < carried.Q_max
// * own.N); sets STATUS_VALID. Values are clipped to the field widths.
// Returns true if it wrote.
bool embed_status(uint8_t *p, const olaf::Status &own);

}  // namespace olaf::wire

#endif  // OLAF_WIRE_HPP_
