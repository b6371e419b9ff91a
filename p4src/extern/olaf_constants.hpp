// Generated from olaf/constants.py by `olaf codegen generate` (make generate). Do not edit.
#ifndef OLAF_CONSTANTS_HPP_
#define OLAF_CONSTANTS_HPP_

#include <cstdint>

namespace olaf::constants {

constexpr uint16_t ETHERTYPE_IPV4 = 0x800;  // EtherType of IPv4
constexpr uint8_t IPPROTO_UDP = 17;  // IPv4 protocol number of UDP
constexpr uint8_t IPV4_IHL_NO_OPTIONS = 5;  // IHL of an IPv4 header without options
constexpr uint8_t IPV4_IHL_MAX = 15;  // largest IHL, 32-bit words
constexpr uint32_t IPV4_WORD_BITS = 32;  // bits per IHL word
constexpr uint8_t IPV4_FLAG_MF = 0x01;  // IPv4 flags: more fragments
constexpr uint32_t ETH_HEADER_LEN = 14;  // Ethernet II header, bytes
constexpr uint16_t IPV4_HEADER_LEN = 20;  // IPv4 header without options, bytes
constexpr uint16_t UDP_HEADER_LEN = 8;  // UDP header, bytes
constexpr uint16_t UPDATE_PORT = 50100;  // UDP dst port of updates (worker -> PS)
constexpr uint16_t ACK_PORT = 50101;  // UDP dst port of ACKs (PS -> cluster)
constexpr uint8_t PROTOCOL_VERSION = 2;  // Olaf protocol version
constexpr uint8_t MSG_UPDATE = 1;  // msg_type of an update
constexpr uint8_t MSG_ACK = 2;  // msg_type of an ACK
constexpr uint8_t UPDATE_FLAG_INIT = 0x01;  // update flag: initial weights, bypass the queue
constexpr uint8_t ACK_FLAG_STATUS_VALID = 0x01;  // ACK flag: queue status written by a switch
constexpr uint16_t UPDATE_HEADER_LEN = 30;  // update header, bytes
constexpr uint16_t CHUNK_OFFSET = 4;  // offset of chunk / num_chunks in both messages, bytes
constexpr uint16_t ACK_HEADER_LEN = 38;  // ACK header, bytes
constexpr uint16_t ELEMENT_LEN = 4;  // bytes per gradient / weight element
constexpr uint32_t SEGMENTS = 256;  // physical segments of the OlafQueue extern
constexpr uint32_t MAX_CLUSTERS = 1024;  // cluster ids 0..MAX_CLUSTERS-1
constexpr uint32_t MAX_CHUNKS = 64;  // chunks per update K the OlafQueue extern keeps state for
constexpr uint32_t MAX_WORKERS = 4096;  // worker_table / ack_rewrite entries
constexpr uint32_t MAX_ROUTES = 1024;  // ipv4_lpm entries
constexpr uint32_t DEFAULT_QUEUE_SIZE = 8;  // Q_max before the controller writes olaf_params
constexpr uint64_t DEFAULT_ACTIVITY_WINDOW_NS = 1000000000;  // activity window default, ns
constexpr uint16_t DEFAULT_NUM_GRADS = 16;  // gradient elements default
constexpr uint16_t DEFAULT_NUM_CHUNKS = 1;  // chunks per update default
constexpr uint8_t DECISION_ERROR = 255;  // the extern rejected the update
constexpr uint32_t DECISION_SLOTS = 8;  // per-cluster decision counter stride
constexpr uint8_t PARAM_REWARD_FILTER = 1;  // olaf_params flag: reward filtering
constexpr uint8_t PARAM_FIFO = 2;  // olaf_params flag: FIFO baseline
constexpr uint32_t RECLAIM_SLOTS = 257;  // reclaimed counter stride: kind * RECLAIM_SLOTS + n
constexpr uint8_t DECISION_APPEND = 0;  // Decision.APPEND
constexpr uint8_t DECISION_AGGREGATE = 1;  // Decision.AGGREGATE
constexpr uint8_t DECISION_REPLACE_WORKER = 2;  // Decision.REPLACE_WORKER
constexpr uint8_t DECISION_REPLACE_REWARD = 3;  // Decision.REPLACE_REWARD
constexpr uint8_t DECISION_DROP_REWARD = 4;  // Decision.DROP_REWARD
constexpr uint8_t DECISION_DROP_FULL = 5;  // Decision.DROP_FULL
constexpr uint32_t NUM_DECISION = 6;  // number of Decision codes (counter size)
constexpr uint32_t MALFORMED_VERSION = 0;  // Malformed.VERSION
constexpr uint32_t MALFORMED_MSG_TYPE = 1;  // Malformed.MSG_TYPE
constexpr uint32_t MALFORMED_LENGTH = 2;  // Malformed.LENGTH
constexpr uint32_t MALFORMED_NUM_GRADS = 3;  // Malformed.NUM_GRADS
constexpr uint32_t MALFORMED_COUNT = 4;  // Malformed.COUNT
constexpr uint32_t MALFORMED_EXTERN = 5;  // Malformed.EXTERN
constexpr uint32_t MALFORMED_IP_OPTIONS = 6;  // Malformed.IP_OPTIONS
constexpr uint32_t MALFORMED_DESTINATION = 7;  // Malformed.DESTINATION
constexpr uint32_t MALFORMED_FRAGMENT = 8;  // Malformed.FRAGMENT
constexpr uint32_t MALFORMED_CHUNK = 9;  // Malformed.CHUNK
constexpr uint32_t NUM_MALFORMED = 10;  // number of Malformed codes (counter size)
constexpr uint32_t TRAFFIC_BYPASS = 0;  // Traffic.BYPASS
constexpr uint32_t TRAFFIC_UNKNOWN_SOURCE = 1;  // Traffic.UNKNOWN_SOURCE
constexpr uint32_t TRAFFIC_INIT = 2;  // Traffic.INIT
constexpr uint32_t TRAFFIC_ACK_MULTICAST = 3;  // Traffic.ACK_MULTICAST
constexpr uint32_t TRAFFIC_ACK_UNICAST = 4;  // Traffic.ACK_UNICAST
constexpr uint32_t TRAFFIC_NON_IPV4 = 5;  // Traffic.NON_IPV4
constexpr uint32_t TRAFFIC_NO_ROUTE = 6;  // Traffic.NO_ROUTE
constexpr uint32_t TRAFFIC_SPOOFED_SOURCE = 7;  // Traffic.SPOOFED_SOURCE
constexpr uint32_t TRAFFIC_FORGED_ACK = 8;  // Traffic.FORGED_ACK
constexpr uint32_t TRAFFIC_IPV4_CHECKSUM = 9;  // Traffic.IPV4_CHECKSUM
constexpr uint32_t TRAFFIC_TTL_EXPIRED = 10;  // Traffic.TTL_EXPIRED
constexpr uint32_t NUM_TRAFFIC = 11;  // number of Traffic codes (counter size)
constexpr uint32_t EGRESS_ERROR_DEQUEUE_EMPTY = 0;  // EgressError.DEQUEUE_EMPTY
constexpr uint32_t NUM_EGRESS_ERROR = 1;  // number of EgressError codes (counter size)
constexpr uint8_t TOKEN_FATE_DEPARTED = 0;  // TokenFate.DEPARTED
constexpr uint8_t TOKEN_FATE_DEPARTED_AFTER_LOSS = 1;  // TokenFate.DEPARTED_AFTER_LOSS
constexpr uint8_t TOKEN_FATE_STALE = 2;  // TokenFate.STALE
constexpr uint32_t NUM_TOKEN_FATE = 3;  // number of TokenFate codes (counter size)
constexpr uint32_t RECLAIM_LOST = 0;  // Reclaim.LOST
constexpr uint32_t RECLAIM_EXPIRED = 1;  // Reclaim.EXPIRED
constexpr uint32_t NUM_RECLAIM = 2;  // number of Reclaim codes (counter size)
constexpr uint8_t TX_READING_PROBABILISTIC = 0;  // TxReading.PROBABILISTIC
constexpr uint8_t TX_READING_BACKOFF = 1;  // TxReading.BACKOFF
constexpr uint32_t NUM_TX_READING = 2;  // number of TxReading codes
constexpr uint8_t TX_REASON_TC_OFF = 0;  // TxReason.TC_OFF
constexpr uint8_t TX_REASON_NO_STATUS = 1;  // TxReason.NO_STATUS
constexpr uint8_t TX_REASON_NO_QMAX = 2;  // TxReason.NO_QMAX
constexpr uint8_t TX_REASON_UNCONGESTED = 3;  // TxReason.UNCONGESTED
constexpr uint8_t TX_REASON_DRAW = 4;  // TxReason.DRAW
constexpr uint8_t TX_REASON_BACKOFF = 5;  // TxReason.BACKOFF
constexpr uint32_t NUM_TX_REASON = 6;  // number of TxReason codes

// Labels of DECISION_* by code (counters, vectors, reports).
constexpr const char *DECISION_LABELS[NUM_DECISION] = {"append", "aggregate", "replace_worker", "replace_reward", "drop_reward", "drop_full"};
// Labels of MALFORMED_* by code (counters, vectors, reports).
constexpr const char *MALFORMED_LABELS[NUM_MALFORMED] = {"version", "msg_type", "length", "num_grads", "count", "extern", "ip_options", "destination", "fragment", "chunk"};
// Labels of TRAFFIC_* by code (counters, vectors, reports).
constexpr const char *TRAFFIC_LABELS[NUM_TRAFFIC] = {"bypass", "unknown_source", "init", "ack_multicast", "ack_unicast", "non_ipv4", "no_route", "spoofed_source", "forged_ack", "ipv4_checksum", "ttl_expired"};
// Labels of EGRESS_ERROR_* by code (counters, vectors, reports).
constexpr const char *EGRESS_ERROR_LABELS[NUM_EGRESS_ERROR] = {"dequeue_empty"};
// Labels of TOKEN_FATE_* by code (counters, vectors, reports).
constexpr const char *TOKEN_FATE_LABELS[NUM_TOKEN_FATE] = {"departed", "departed_after_loss", "stale"};
// Labels of RECLAIM_* by code (counters, vectors, reports).
constexpr const char *RECLAIM_LABELS[NUM_RECLAIM] = {"lost", "expired"};
// Labels of TX_READING_* by code (counters, vectors, reports).
constexpr const char *TX_READING_LABELS[NUM_TX_READING] = {"probabilistic", "backoff"};
// Labels of TX_REASON_* by code (counters, vectors, reports).
constexpr const char *TX_REASON_LABELS[NUM_TX_REASON] = {"tc_off", "no_status", "no_qmax", "uncongested", "draw", "backoff"};

}  // namespace olaf::constants

#endif  // OLAF_CONSTANTS_HPP_
