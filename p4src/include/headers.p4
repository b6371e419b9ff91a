// Headers and metadata. The Olaf layouts are docs/protocol.md, field by field.
#ifndef OLAF_HEADERS_P4_
#define OLAF_HEADERS_P4_

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

// IPv4 options (IHL > 5): parsed only so that an Olaf message behind them is recognised
// (and refused, docs/protocol.md "Transport") and other traffic is forwarded intact.
// Width: IPV4_MAX_OPTIONS_BITS of constants.p4 (a varbit bound must be a literal).
header ipv4_options_t {
    varbit<320> options;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

// Model update (one chunk of it), worker -> PS (UPDATE_HEADER_LEN = 30 bytes; the
// Q7.24 grads follow as payload).
header olaf_update_t {
    bit<4>  version;
    bit<4>  msg_type;
    bit<8>  flags;
    bit<16> num_grads;    // elements of this chunk (the deployment's chunk length)
    bit<16> chunk;        // slice index, 0..num_chunks-1 (offset CHUNK_OFFSET)
    bit<16> num_chunks;   // K, chunks per update
    bit<16> cluster_id;   // stamped by the switch
    bit<16> worker_id;    // stamped by the switch
    bit<32> seq;
    bit<16> count;
    bit<32> reward_sum;   // Q15.16, two's complement
    bit<64> gen_ts;       // ns
}

// ACK, PS -> cluster (ACK_HEADER_LEN = 38 bytes; the Q7.24 weights follow as payload).
header olaf_ack_t {
    bit<4>  version;
    bit<4>  msg_type;
    bit<8>  flags;
    bit<16> num_weights;
    bit<16> chunk;            // chunk of the update answered
    bit<16> num_chunks;       // K
    bit<16> cluster_id;
    bit<16> worker_id;
    bit<32> seq;
    bit<16> count;
    bit<32> global_reward;
    bit<64> gen_ts;
    bit<24> queue_util;       // written by the switch: ceil(occupied segments / K), updates
    bit<16> active_clusters;  // written by the switch
    bit<24> queue_size;       // written by the switch: floor(segments / K), updates
}

struct headers_t {
    ethernet_t    ethernet;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    udp_t          udp;
    olaf_update_t olaf_update;
    olaf_ack_t    olaf_ack;
}

struct olaf_params_t {
    bit<32> queue_size;          // occupancy limit, segments (num_chunks..SEGMENTS)
    bit<8>  flags;               // PARAM_REWARD_FILTER | PARAM_FIFO
    bit<32> reward_threshold;    // Q15.16
    bit<64> activity_window_ns;
    bit<16> num_grads;           // gradient elements per update in this deployment
    ip4Addr_t ps_addr;           // the PS: updates must be addressed to it, ACKs come from it
    egressSpec_t ps_port;        // this switch's port toward the PS
    bit<64> max_sojourn_ns;      // longest time a token can wait in the PS port's TM queue
    bit<16> num_chunks;          // K, chunks per update in this deployment (1..MAX_CHUNKS)
}

struct metadata_t {
    olaf_params_t params;
    bit<8>  decision;
    bit<32> token;               // APPEND: its segment's token id (OlafQueue.dequeue)
    bit<1>  is_token;            // APPENDed update: carries a queue segment to egress
    bit<1>  worker_known;        // worker_table hit (address, UDP port) from the worker's own switch port
    bit<1>  worker_spoofed;      // worker_table hit, but from another switch port
    bit<1>  to_queue;            // a known worker's update: offer it to the OlafQueue
    bit<32> forward_kind;        // TRAFFIC_* of a packet that is forwarded (counted once routed)
    bit<1>  routed;              // ipv4_lpm forwarded the packet
    bit<1>  ack_grouped;         // cluster_mcast hit
    bit<32> malformed_reason;
    bit<1>  malformed;
    bit<24> queue_util;          // status from OlafQueue.status, in updates
    bit<16> active_clusters;
    bit<24> queue_size;
}

#endif
