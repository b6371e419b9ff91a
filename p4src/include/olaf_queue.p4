// The OlafQueue as a BMv2 user extern (implemented in p4src/extern/olaf_queue_bmv2.cpp
// around the plain C++ core olaf_queue_core.cpp). Compile with p4c-bm2-ss --emit-externs
// and start simple_switch_grpc with -- --load-modules <abs path>/olaf_queue.so.
// Methods return through `out` parameters.
//
// The token ledger (docs/dataplane.md "The token ledger"): an APPENDed packet is the
// token of its segment in the traffic manager's queue toward the PS, which may drop it.
// Every APPEND returns a token id (32-bit serial number, RFC 1982); dequeue takes the
// token that reached egress and releases exactly its own segment, reclaiming the older
// segments whose tokens were lost, or nothing for a stale token. Segments waiting
// longer than max_sojourn_ns are reclaimed at every call. The `expired` / `lost`
// outputs say how many segments a call reclaimed, so the program counts them.
#ifndef OLAF_QUEUE_P4_
#define OLAF_QUEUE_P4_

extern OlafQueue {
    // segments: physical segments; num_clusters: cluster ids 0..num_clusters-1;
    // max_chunks: the largest K (chunks per update) a configure may set. The queue keeps
    // per-key state for num_clusters * K keys, key = (cluster, chunk) (docs/dataplane.md
    // "Chunks").
    OlafQueue(bit<32> segments, bit<32> num_clusters, bit<32> max_chunks);

    // Runtime parameters from the control plane (table olaf_params). Applied
    // on every call; a change of num_grads, num_chunks or of the discipline takes
    // effect when the queue is next empty. max_sojourn_ns: 0 = segments never expire.
    // queue_size (segments) below num_chunks, or num_chunks outside 1..max_chunks, is
    // refused (logged; the previous values stay).
    void configure(in bit<32> queue_size, in bit<8> flags, in bit<32> reward_threshold,
                   in bit<64> activity_window_ns, in bit<16> num_grads,
                   in bit<64> max_sojourn_ns, in bit<16> num_chunks);

    // Offer the parsed update (one chunk); the gradients are read from the packet payload.
    // decision: DECISION_* (DECISION_ERROR for a chunk the queue is not configured for);
    // token: the new segment's token id (APPEND only); expired: segments reclaimed by
    // expiry before the decision.
    void enqueue(in bit<16> cluster_id, in bit<16> worker_id, in bit<32> seq,
                 in bit<16> count, in bit<32> reward_sum, in bit<64> gen_ts,
                 in bit<16> chunk, in bit<16> num_chunks,
                 in bit<32> src_ip, in bit<16> src_port,
                 out bit<8> decision, out bit<32> token, out bit<32> expired);

    // The packet of `token` reached egress. fate: TOKEN_FATE_*; lost: older segments
    // reclaimed because their tokens never came; expired: as for enqueue. Unless the
    // fate is TOKEN_FATE_STALE, the token's own segment departs in this packet: Olaf
    // fields out, the gradients written into the payload, and the segment owner's
    // source address.
    void dequeue(in bit<32> token, out bit<8> fate, out bit<32> lost, out bit<32> expired,
                 out bit<16> cluster_id, out bit<16> worker_id, out bit<32> seq,
                 out bit<16> count, out bit<32> reward_sum, out bit<64> gen_ts,
                 out bit<16> chunk, out bit<16> num_chunks,
                 out bit<32> src_ip, out bit<16> src_port);

    // Queue status for ACKs (paper §5), in updates: queue_util = ceil(occupied
    // segments / K), active clusters, queue_size = floor(Q_max segments / K);
    // expired: as for enqueue.
    void status(out bit<24> queue_util, out bit<16> active_clusters, out bit<24> queue_size,
                out bit<32> expired);
}

#endif
