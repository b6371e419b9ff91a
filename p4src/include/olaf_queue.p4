// The OlafQueue as a BMv2 user extern (implemented in p4src/extern/olaf_queue_bmv2.cpp
// around the plain C++ core olaf_queue_core.cpp). Compile with p4c-bm2-ss --emit-externs
// and start simple_switch_grpc with -- --load-modules <abs path>/olaf_queue.so.
// Methods return through `out` parameters.
#ifndef OLAF_QUEUE_P4_
#define OLAF_QUEUE_P4_

extern OlafQueue {
    // segments: physical segments; num_clusters: cluster ids 0..num_clusters-1.
    OlafQueue(bit<32> segments, bit<32> num_clusters);

    // Runtime parameters from the control plane (table olaf_params). Applied
    // on every call; a change of num_grads or of the discipline takes effect
    // when the queue is next empty.
    void configure(in bit<32> queue_size, in bit<8> flags, in bit<32> reward_threshold,
                   in bit<64> activity_window_ns, in bit<16> num_grads);

    // Offer the parsed update; the gradients are read from the packet payload.
    // decision: DECISION_*; segment: the segment written (APPEND: new one).
    void enqueue(in bit<16> cluster_id, in bit<16> worker_id, in bit<32> seq,
                 in bit<16> count, in bit<32> reward_sum, in bit<64> gen_ts,
                 in bit<32> src_ip, in bit<16> src_port,
                 out bit<8> decision, out bit<32> segment);

    // Pop the head segment into the departing token: Olaf fields out, the
    // gradients written into the payload, and the segment owner's source
    // address. ok = 0 if the queue was empty.
    void dequeue(in bit<32> segment, out bit<8> ok,
                 out bit<16> cluster_id, out bit<16> worker_id, out bit<32> seq,
                 out bit<16> count, out bit<32> reward_sum, out bit<64> gen_ts,
                 out bit<32> src_ip, out bit<16> src_port);

    // Queue status for ACKs (paper §5): occupied segments, active clusters, Q_max.
    void status(out bit<24> queue_util, out bit<16> active_clusters, out bit<24> queue_size);
}

#endif
