// Generated from olaf/constants.py by `olaf codegen generate` (make generate). Do not edit.
#ifndef OLAF_CONSTANTS_P4_
#define OLAF_CONSTANTS_P4_

const bit<16> ETHERTYPE_IPV4 = 0x800;  // EtherType of IPv4
const bit<8> IPPROTO_UDP = 17;  // IPv4 protocol number of UDP
const bit<4> IPV4_IHL_NO_OPTIONS = 5;  // IHL of an IPv4 header without options
const bit<4> IPV4_IHL_MAX = 15;  // largest IHL, 32-bit words
const bit<32> IPV4_WORD_BITS = 32;  // bits per IHL word
const bit<3> IPV4_FLAG_MF = 0x01;  // IPv4 flags: more fragments
const bit<32> ETH_HEADER_LEN = 14;  // Ethernet II header, bytes
const bit<16> IPV4_HEADER_LEN = 20;  // IPv4 header without options, bytes
const bit<16> UDP_HEADER_LEN = 8;  // UDP header, bytes
const bit<16> UPDATE_PORT = 50100;  // UDP dst port of updates (worker -> PS)
const bit<16> ACK_PORT = 50101;  // UDP dst port of ACKs (PS -> cluster)
const bit<4> PROTOCOL_VERSION = 1;  // Olaf protocol version
const bit<4> MSG_UPDATE = 1;  // msg_type of an update
const bit<4> MSG_ACK = 2;  // msg_type of an ACK
const bit<8> UPDATE_FLAG_INIT = 0x01;  // update flag: initial weights, bypass the queue
const bit<8> ACK_FLAG_STATUS_VALID = 0x01;  // ACK flag: queue status written by a switch
const bit<16> UPDATE_HEADER_LEN = 26;  // update header, bytes
const bit<16> ACK_HEADER_LEN = 34;  // ACK header, bytes
const bit<16> ELEMENT_LEN = 4;  // bytes per gradient / weight element
const bit<32> SEGMENTS = 64;  // physical segments of the OlafQueue extern
const bit<32> MAX_CLUSTERS = 1024;  // cluster ids 0..MAX_CLUSTERS-1
const bit<32> MAX_WORKERS = 4096;  // worker_table / ack_rewrite entries
const bit<32> MAX_ROUTES = 1024;  // ipv4_lpm entries
const bit<32> DEFAULT_QUEUE_SIZE = 8;  // Q_max before the controller writes olaf_params
const bit<64> DEFAULT_ACTIVITY_WINDOW_NS = 1000000000;  // activity window default, ns
const bit<16> DEFAULT_NUM_GRADS = 16;  // gradient elements default
const bit<8> DECISION_ERROR = 255;  // the extern rejected the update
const bit<32> DECISION_SLOTS = 8;  // per-cluster decision counter stride
const bit<8> PARAM_REWARD_FILTER = 1;  // olaf_params flag: reward filtering
const bit<8> PARAM_FIFO = 2;  // olaf_params flag: FIFO baseline
const bit<8> DECISION_APPEND = 0;  // Decision.APPEND
const bit<8> DECISION_AGGREGATE = 1;  // Decision.AGGREGATE
const bit<8> DECISION_REPLACE_WORKER = 2;  // Decision.REPLACE_WORKER
const bit<8> DECISION_REPLACE_REWARD = 3;  // Decision.REPLACE_REWARD
const bit<8> DECISION_DROP_REWARD = 4;  // Decision.DROP_REWARD
const bit<8> DECISION_DROP_FULL = 5;  // Decision.DROP_FULL
const bit<32> NUM_DECISION = 6;  // number of Decision codes (counter size)
const bit<32> MALFORMED_VERSION = 0;  // Malformed.VERSION
const bit<32> MALFORMED_MSG_TYPE = 1;  // Malformed.MSG_TYPE
const bit<32> MALFORMED_LENGTH = 2;  // Malformed.LENGTH
const bit<32> MALFORMED_NUM_GRADS = 3;  // Malformed.NUM_GRADS
const bit<32> MALFORMED_COUNT = 4;  // Malformed.COUNT
const bit<32> MALFORMED_EXTERN = 5;  // Malformed.EXTERN
const bit<32> MALFORMED_IP_OPTIONS = 6;  // Malformed.IP_OPTIONS
const bit<32> MALFORMED_DESTINATION = 7;  // Malformed.DESTINATION
const bit<32> MALFORMED_FRAGMENT = 8;  // Malformed.FRAGMENT
const bit<32> NUM_MALFORMED = 9;  // number of Malformed codes (counter size)
const bit<32> TRAFFIC_BYPASS = 0;  // Traffic.BYPASS
const bit<32> TRAFFIC_UNKNOWN_SOURCE = 1;  // Traffic.UNKNOWN_SOURCE
const bit<32> TRAFFIC_INIT = 2;  // Traffic.INIT
const bit<32> TRAFFIC_ACK_MULTICAST = 3;  // Traffic.ACK_MULTICAST
const bit<32> TRAFFIC_ACK_UNICAST = 4;  // Traffic.ACK_UNICAST
const bit<32> TRAFFIC_NON_IPV4 = 5;  // Traffic.NON_IPV4
const bit<32> TRAFFIC_NO_ROUTE = 6;  // Traffic.NO_ROUTE
const bit<32> TRAFFIC_SPOOFED_SOURCE = 7;  // Traffic.SPOOFED_SOURCE
const bit<32> TRAFFIC_FORGED_ACK = 8;  // Traffic.FORGED_ACK
const bit<32> TRAFFIC_IPV4_CHECKSUM = 9;  // Traffic.IPV4_CHECKSUM
const bit<32> TRAFFIC_TTL_EXPIRED = 10;  // Traffic.TTL_EXPIRED
const bit<32> NUM_TRAFFIC = 11;  // number of Traffic codes (counter size)
const bit<32> EGRESS_ERROR_DEQUEUE_EMPTY = 0;  // EgressError.DEQUEUE_EMPTY
const bit<32> NUM_EGRESS_ERROR = 1;  // number of EgressError codes (counter size)

#endif
