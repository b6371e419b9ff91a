// Olaf wire format in C++ — see olaf_wire.hpp and docs/protocol.md.

#include "olaf_wire.hpp"

#include <algorithm>

namespace olaf::wire {

uint16_t ipv4_checksum(const uint8_t *p) {
  uint32_t sum = 0;
  for (size_t i = 0; i < k::IPV4_HEADER_LEN; i += 2) {
    if (i == 10) continue;  // the checksum field itself
    sum += load16(p + i);
  }
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void write_ipv4_udp(uint8_t *p, uint32_t src_ip, uint32_t dst_ip, uint16_t src_port,
                    uint16_t dst_port, size_t payload_len, uint8_t ttl) {
  const auto udp_len = static_cast<uint16_t>(k::UDP_HEADER_LEN + payload_len);
  p[0] = static_cast<uint8_t>((4 << 4) | k::IPV4_IHL_NO_OPTIONS);
  p[1] = 0;
  store16(p + 2, static_cast<uint16_t>(k::IPV4_HEADER_LEN + udp_len));
  store16(p + 4, 0);  // identification
  store16(p + 6, 0);  // flags, fragment offset
  p[8] = ttl;
  p[9] = k::IPPROTO_UDP;
  store32(p + 12, src_ip);
  store32(p + 16, dst_ip);
  store16(p + 10, ipv4_checksum(p));
  uint8_t *u = p + kUdpOffset;
  store16(u, src_port);
  store16(u + 2, dst_port);
  store16(u + 4, udp_len);
  store16(u + 6, 0);
}

void rewrite_source(uint8_t *p, uint32_t src_ip, uint16_t src_port) {
  store32(p + 12, src_ip);
  store16(p + 10, ipv4_checksum(p));
  store16(p + kUdpOffset, src_port);
  store16(p + kUdpOffset + 6, 0);
}

void rewrite_destination(uint8_t *p, uint32_t dst_ip) {
  store32(p + 16, dst_ip);
  store16(p + 10, ipv4_checksum(p));
  store16(p + kUdpOffset + 6, 0);
}

Classified classify(const uint8_t *p, size_t len) {
  Classified c;
  if (len < k::IPV4_HEADER_LEN || (p[0] >> 4) != 4) return c;
  // Parser: IHL 5, UDP, not fragmented (p4src/include/parser.p4).
  const uint16_t frag = load16(p + 6) & 0x3FFF;
  if ((p[0] & 0x0F) != k::IPV4_IHL_NO_OPTIONS || p[9] != k::IPPROTO_UDP || frag != 0) return c;
  c.src_ip = load32(p + 12);
  c.dst_ip = load32(p + 16);
  if (len < kOlafOffset) return c;
  const uint8_t *u = p + kUdpOffset;
  c.src_port = load16(u);
  c.dst_port = load16(u + 2);
  const bool update = c.dst_port == k::UPDATE_PORT;
  if (!update && c.dst_port != k::ACK_PORT) return c;
  const size_t hdr = update ? k::UPDATE_HEADER_LEN : k::ACK_HEADER_LEN;
  c.kind = Kind::kMalformed;
  c.malformed_reason = k::MALFORMED_LENGTH;
  if (len < kOlafOffset + hdr) return c;  // header cannot be extracted
  const uint8_t *o = p + kOlafOffset;
  const uint16_t udp_len = load16(u + 4);
  const size_t elems = load16(o + off::kElements);
  if ((o[0] >> 4) != k::PROTOCOL_VERSION) {
    c.malformed_reason = k::MALFORMED_VERSION;
  } else if ((o[0] & 0x0F) != (update ? k::MSG_UPDATE : k::MSG_ACK)) {
    c.malformed_reason = k::MALFORMED_MSG_TYPE;
  } else if (udp_len != k::UDP_HEADER_LEN + hdr + k::ELEMENT_LEN * elems ||
             load16(p + 2) != k::IPV4_HEADER_LEN + udp_len || len != k::IPV4_HEADER_LEN + udp_len) {
    c.malformed_reason = k::MALFORMED_LENGTH;
  } else if (load16(o + off::kNumChunks) == 0 ||
             load16(o + off::kChunk) >= load16(o + off::kNumChunks)) {
    c.malformed_reason = k::MALFORMED_CHUNK;
  } else if (update && load16(o + off::kCount) == 0) {
    c.malformed_reason = k::MALFORMED_COUNT;
  } else {
    c.kind = update ? Kind::kUpdate : Kind::kAck;
  }
  return c;
}

UpdateHeader read_update_header(const uint8_t *p) {
  const uint8_t *o = p + kOlafOffset;
  UpdateHeader h;
  h.flags = o[off::kFlags];
  h.num_grads = load16(o + off::kElements);
  h.chunk = load16(o + off::kChunk);
  h.num_chunks = load16(o + off::kNumChunks);
  h.cluster_id = load16(o + off::kClusterId);
  h.worker_id = load16(o + off::kWorkerId);
  h.seq = load32(o + off::kSeq);
  h.count = load16(o + off::kCount);
  h.reward_sum = static_cast<int32_t>(load32(o + off::kReward));
  h.gen_ts = load64(o + off::kGenTs);
  return h;
}

void write_update(uint8_t *p, const UpdateHeader &h, const int32_t *grads, size_t num_grads) {
  uint8_t *o = p + kOlafOffset;
  o[off::kVersionType] = static_cast<uint8_t>((k::PROTOCOL_VERSION << 4) | k::MSG_UPDATE);
  o[off::kFlags] = h.flags;
  store16(o + off::kElements, static_cast<uint16_t>(num_grads));
  store16(o + off::kChunk, h.chunk);
  store16(o + off::kNumChunks, h.num_chunks);
  store16(o + off::kClusterId, h.cluster_id);
  store16(o + off::kWorkerId, h.worker_id);
  store32(o + off::kSeq, h.seq);
  store16(o + off::kCount, h.count);
  store32(o + off::kReward, static_cast<uint32_t>(h.reward_sum));
  store64(o + off::kGenTs, h.gen_ts);
  for (size_t i = 0; i < num_grads; i++)
    store32(p + kUpdateGradsOffset + k::ELEMENT_LEN * i, static_cast<uint32_t>(grads[i]));
}

olaf::Update read_update(const uint8_t *p, size_t num_grads) {
  const UpdateHeader h = read_update_header(p);
  olaf::Update u;
  u.cluster_id = h.cluster_id;
  u.worker_id = h.worker_id;
  u.seq = h.seq;
  u.count = h.count;
  u.reward_sum = h.reward_sum;
  u.gen_ts = h.gen_ts;
  u.chunk = h.chunk;
  u.num_chunks = h.num_chunks;
  u.grads.resize(num_grads);
  for (size_t i = 0; i < num_grads; i++)
    u.grads[i] = static_cast<int32_t>(load32(p + kUpdateGradsOffset + k::ELEMENT_LEN * i));
  return u;
}

void write_departure(uint8_t *p, const olaf::Update &u) {
  UpdateHeader h = read_update_header(p);
  h.cluster_id = u.cluster_id;
  h.worker_id = u.worker_id;
  h.seq = u.seq;
  h.count = u.count;
  h.reward_sum = u.reward_sum;
  h.gen_ts = u.gen_ts;
  h.chunk = u.chunk;
  h.num_chunks = u.num_chunks;
  write_update(p, h, u.grads.data(), u.grads.size());
}

AckHeader read_ack_header(const uint8_t *p) {
  const uint8_t *o = p + kOlafOffset;
  AckHeader h;
  h.flags = o[off::kFlags];
  h.num_weights = load16(o + off::kElements);
  h.chunk = load16(o + off::kChunk);
  h.num_chunks = load16(o + off::kNumChunks);
  h.cluster_id = load16(o + off::kClusterId);
  h.worker_id = load16(o + off::kWorkerId);
  h.seq = load32(o + off::kSeq);
  h.count = load16(o + off::kCount);
  h.global_reward = static_cast<int32_t>(load32(o + off::kReward));
  h.gen_ts = load64(o + off::kGenTs);
  h.queue_util = load24(o + off::kQueueUtil);
  h.active_clusters = load16(o + off::kActiveClusters);
  h.queue_size = load24(o + off::kQueueSize);
  return h;
}

void write_ack_header(uint8_t *p, const AckHeader &h) {
  uint8_t *o = p + kOlafOffset;
  o[off::kVersionType] = static_cast<uint8_t>((k::PROTOCOL_VERSION << 4) | k::MSG_ACK);
  o[off::kFlags] = h.flags;
  store16(o + off::kElements, h.num_weights);
  store16(o + off::kChunk, h.chunk);
  store16(o + off::kNumChunks, h.num_chunks);
  store16(o + off::kClusterId, h.cluster_id);
  store16(o + off::kWorkerId, h.worker_id);
  store32(o + off::kSeq, h.seq);
  store16(o + off::kCount, h.count);
  store32(o + off::kReward, static_cast<uint32_t>(h.global_reward));
  store64(o + off::kGenTs, h.gen_ts);
  store24(o + off::kQueueUtil, h.queue_util);
  store16(o + off::kActiveClusters, h.active_clusters);
  store24(o + off::kQueueSize, h.queue_size);
}

bool embed_status(uint8_t *p, const olaf::Status &own) {
  uint8_t *o = p + kOlafOffset;
  const uint64_t util = std::min<uint32_t>(own.queue_util, 0xFFFFFF);
  const uint64_t active = std::min<uint32_t>(own.active_clusters, 0xFFFF);
  const uint64_t qsize = std::min<uint32_t>(own.queue_size, 0xFFFFFF);
  const bool valid = (o[off::kFlags] & k::ACK_FLAG_STATUS_VALID) != 0;
  const uint64_t own_side = qsize * load16(o + off::kActiveClusters);
  const uint64_t carried_side = uint64_t{load24(o + off::kQueueSize)} * active;
  if (valid && !(own_side < carried_side)) return false;
  store24(o + off::kQueueUtil, static_cast<uint32_t>(util));
  store16(o + off::kActiveClusters, static_cast<uint16_t>(active));
  store24(o + off::kQueueSize, static_cast<uint32_t>(qsize));
  o[off::kFlags] = static_cast<uint8_t>(o[off::kFlags] | k::ACK_FLAG_STATUS_VALID);
  return true;
}

}  // namespace olaf::wire
