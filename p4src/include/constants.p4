// Olaf constants (docs/protocol.md). Override at compile time with -D.
#ifndef OLAF_CONSTANTS_P4_
#define OLAF_CONSTANTS_P4_

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP    = 17;

const bit<16> OLAF_UPDATE_PORT = 50100;   // UDP dst port of updates (worker -> PS)
const bit<16> OLAF_ACK_PORT    = 50101;   // UDP dst port of ACKs (PS -> cluster)
const bit<4>  OLAF_VERSION     = 1;
const bit<4>  OLAF_MSG_UPDATE  = 1;
const bit<4>  OLAF_MSG_ACK     = 2;
const bit<8>  OLAF_FLAG_INIT          = 0x01;  // update: initial weights, bypass the queue
const bit<8>  OLAF_FLAG_STATUS_VALID  = 0x01;  // ACK: queue status written by a switch
const bit<16> OLAF_UPDATE_HDR_LEN = 26;
const bit<16> OLAF_ACK_HDR_LEN    = 34;

// Physical queue segments and the cluster id space of the OlafQueue extern.
#ifndef OLAF_SEGMENTS
#define OLAF_SEGMENTS 64
#endif
#ifndef OLAF_MAX_CLUSTERS
#define OLAF_MAX_CLUSTERS 1024
#endif

// Enqueue decisions (shared codes, docs/vectors.md).
const bit<8> DECISION_APPEND         = 0;
const bit<8> DECISION_AGGREGATE      = 1;
const bit<8> DECISION_REPLACE_WORKER = 2;
const bit<8> DECISION_REPLACE_REWARD = 3;
const bit<8> DECISION_DROP_REWARD    = 4;
const bit<8> DECISION_DROP_FULL      = 5;
const bit<8> DECISION_ERROR          = 255;  // extern rejected the update (bad cluster/length)

// olaf_params flags
const bit<8> PARAM_REWARD_FILTER = 0x01;
const bit<8> PARAM_FIFO          = 0x02;

// Index of the `malformed` counter (why an Olaf packet was dropped).
const bit<32> MALFORMED_VERSION   = 0;
const bit<32> MALFORMED_MSG_TYPE  = 1;
const bit<32> MALFORMED_LENGTH    = 2;
const bit<32> MALFORMED_NUM_GRADS = 3;
const bit<32> MALFORMED_COUNT     = 4;
const bit<32> MALFORMED_EXTERN    = 5;

// Index of the `traffic` counter.
const bit<32> TRAFFIC_BYPASS          = 0;  // non-Olaf IPv4, forwarded normally
const bit<32> TRAFFIC_UNKNOWN_SOURCE  = 1;  // Olaf update from a source not in worker_table
const bit<32> TRAFFIC_INIT            = 2;  // INIT update, forwarded without queueing
const bit<32> TRAFFIC_ACK_MULTICAST   = 3;  // ACK replicated to its cluster's group
const bit<32> TRAFFIC_ACK_UNICAST     = 4;  // ACK of a cluster without group, forwarded
const bit<32> TRAFFIC_NON_IPV4        = 5;  // dropped
const bit<32> TRAFFIC_DEQUEUE_ERROR   = 6;  // a token found the extern queue empty (dropped)
const bit<32> TRAFFIC_NO_ROUTE        = 7;  // no ipv4_lpm entry (dropped)

#endif
