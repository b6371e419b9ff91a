// Olaf data plane for BMv2 v1model (paper §4, §7; docs/protocol.md).
//
// Ingress: parse -> checksum/TTL -> validate Olaf messages (malformed: count by
// reason, drop); every packet is counted exactly once (malformed, traffic or decision):
//   update  addressed to the PS from a known worker on its own port: stamp ids,
//           route to the PS, OlafQueue.enqueue; APPEND keeps the packet (it carries
//           its segment through the traffic manager's PS-port queue: the departure
//           order), every other decision folds it into the queue and drops the packet;
//   INIT    of a known worker: ids stamped, forwarded without queueing;
//   update / INIT from an unknown or spoofed source: dropped;
//   ACK     from the PS (address and port): embed queue status, multicast to the
//           cluster's group; any other ACK is forged: dropped;
//   other   IPv4 forwarding.
// A switch rewrites Olaf payloads (ids, status, aggregates), so every Olaf message it
// forwards leaves with UDP checksum 0 (RFC 768: none); the IPv4 checksum is recomputed.
// Egress: a token takes its own segment's content (OlafQueue.dequeue), after the
//   extern reclaimed the older segments whose tokens the traffic manager dropped; a
//   stale token (its segment already reclaimed) is dropped (docs/dataplane.md "The
//   token ledger"). ACK replicas get their worker's destination.
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/olaf_queue.p4"
#include "include/parser.p4"
#include "include/validate.p4"
#include "include/olaf_params.p4"
#include "include/forwarding.p4"
#include "include/update_identifier.p4"
#include "include/ack_multicast.p4"

// One queue shared by ingress (enqueue, status) and egress (dequeue).
OlafQueue(SEGMENTS, MAX_CLUSTERS, MAX_CHUNKS) olaf_queue;

control OlafIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(DECISION_SLOTS, CounterType.packets) decisions;                      // index: DECISION_*
    counter(MAX_CLUSTERS * DECISION_SLOTS, CounterType.packets) cluster_decisions; // cluster * DECISION_SLOTS + decision
    counter(NUM_MALFORMED, CounterType.packets) malformed;                       // index: MALFORMED_*
    counter(NUM_TRAFFIC, CounterType.packets) traffic;                           // index: TRAFFIC_*
    counter(NUM_RECLAIM * RECLAIM_SLOTS, CounterType.packets) reclaimed;         // RECLAIM_* * RECLAIM_SLOTS + n

    ValidateOlaf() validate;
    OlafParams() params;
    Ipv4Forwarding() forwarding;
    UpdateIdentifier() identifier;
    AckMulticast() ack_multicast;

    action configure_queue() {
        olaf_queue.configure(meta.params.queue_size, meta.params.flags,
                             meta.params.reward_threshold, meta.params.activity_window_ns,
                             meta.params.num_grads, meta.params.max_sojourn_ns,
                             meta.params.num_chunks);
    }

    // Every packet ends in exactly one of these counters (docs/dataplane.md "Counters").
    action count_traffic(bit<32> kind) {
        traffic.count(kind);
    }
    action drop_traffic(bit<32> kind) {
        traffic.count(kind);
        mark_to_drop(standard_metadata);
    }
    action drop_malformed(bit<32> reason) {
        malformed.count(reason);
        mark_to_drop(standard_metadata);
    }

    // The ACK's queue status: this switch's, unless the ACK already carries a tighter
    // bottleneck (smallest Q_max/N, compared by cross-multiplication; docs/protocol.md).
    action embed_status() {
        bit<48> own = (bit<48>)meta.queue_size * (bit<48>)hdr.olaf_ack.active_clusters;
        bit<48> carried = (bit<48>)hdr.olaf_ack.queue_size * (bit<48>)meta.active_clusters;
        if ((hdr.olaf_ack.flags & ACK_FLAG_STATUS_VALID) == 0 || own < carried) {
            hdr.olaf_ack.queue_util = meta.queue_util;
            hdr.olaf_ack.active_clusters = meta.active_clusters;
            hdr.olaf_ack.queue_size = meta.queue_size;
            hdr.olaf_ack.flags = hdr.olaf_ack.flags | ACK_FLAG_STATUS_VALID;
        }
        hdr.udp.checksum = 0;
    }

    apply {
        meta.is_token = 0;
        meta.ack_grouped = 0;
        meta.to_queue = 0;
        meta.routed = 0;
        if (!hdr.ipv4.isValid() || hdr.ipv4.ihl < IPV4_IHL_NO_OPTIONS) {
            drop_traffic(TRAFFIC_NON_IPV4);
            return;
        }
        if (standard_metadata.checksum_error == 1) {
            drop_traffic(TRAFFIC_IPV4_CHECKSUM);
            return;
        }
        params.apply(meta);
        validate.apply(hdr, meta, standard_metadata);
        if (meta.malformed == 0 && hdr.olaf_update.isValid()) {
            if (hdr.olaf_update.num_grads != meta.params.num_grads) {
                meta.malformed = 1;
                meta.malformed_reason = MALFORMED_NUM_GRADS;
            } else if (hdr.ipv4.dstAddr != meta.params.ps_addr) {
                meta.malformed = 1;
                meta.malformed_reason = MALFORMED_DESTINATION;
            }
        }
        if (meta.malformed == 1) {
            drop_malformed(meta.malformed_reason);
            return;
        }

        if (hdr.olaf_update.isValid()) {
            identifier.apply(hdr, meta, standard_metadata);
            if (meta.worker_spoofed == 1) {
                drop_traffic(TRAFFIC_SPOOFED_SOURCE);
                return;
            }
            if (meta.worker_known == 0) {
                drop_traffic(TRAFFIC_UNKNOWN_SOURCE);
                return;
            }
            hdr.udp.checksum = 0;  // ids stamped
            if ((hdr.olaf_update.flags & UPDATE_FLAG_INIT) != 0) {
                meta.forward_kind = TRAFFIC_INIT;
            } else {
                meta.to_queue = 1;
            }
        } else if (hdr.olaf_ack.isValid()) {
            if (hdr.ipv4.srcAddr != meta.params.ps_addr
                    || standard_metadata.ingress_port != meta.params.ps_port) {
                drop_traffic(TRAFFIC_FORGED_ACK);
                return;
            }
            configure_queue();
            bit<32> expired;
            olaf_queue.status(meta.queue_util, meta.active_clusters, meta.queue_size, expired);
            if (expired != 0) {
                reclaimed.count(RECLAIM_EXPIRED * RECLAIM_SLOTS + expired);
            }
            embed_status();
            ack_multicast.apply(hdr, meta, standard_metadata);
            if (meta.ack_grouped == 1) {
                count_traffic(TRAFFIC_ACK_MULTICAST);
            } else {
                meta.forward_kind = TRAFFIC_ACK_UNICAST;
            }
        } else {
            meta.forward_kind = TRAFFIC_BYPASS;
        }

        if (meta.ack_grouped == 0) {  // everything but multicast ACKs is routed once
            if (hdr.ipv4.ttl <= 1) {
                drop_traffic(TRAFFIC_TTL_EXPIRED);
                return;
            }
            forwarding.apply(hdr, meta, standard_metadata);  // updates: toward the PS
            if (meta.routed == 0) {
                drop_traffic(TRAFFIC_NO_ROUTE);
                return;
            }
            if (meta.to_queue == 0) {
                count_traffic(meta.forward_kind);  // INIT, unicast ACK or bypass, forwarded
            }
        }

        if (meta.to_queue == 1) {
            if (standard_metadata.egress_spec != meta.params.ps_port) {
                // the route to the PS address does not leave by the PS port: a misconfiguration
                drop_malformed(MALFORMED_DESTINATION);
                return;
            }
            configure_queue();
            bit<32> expired;
            olaf_queue.enqueue(hdr.olaf_update.cluster_id, hdr.olaf_update.worker_id,
                               hdr.olaf_update.seq, hdr.olaf_update.count,
                               hdr.olaf_update.reward_sum, hdr.olaf_update.gen_ts,
                               hdr.olaf_update.chunk, hdr.olaf_update.num_chunks,
                               hdr.ipv4.srcAddr, hdr.udp.srcPort,
                               meta.decision, meta.token, expired);
            if (expired != 0) {
                reclaimed.count(RECLAIM_EXPIRED * RECLAIM_SLOTS + expired);
            }
            if (meta.decision == DECISION_ERROR) {
                drop_malformed(MALFORMED_EXTERN);
                return;
            }
            decisions.count((bit<32>)meta.decision);
            cluster_decisions.count((bit<32>)hdr.olaf_update.cluster_id * DECISION_SLOTS + (bit<32>)meta.decision);
            if (meta.decision == DECISION_APPEND) {
                meta.is_token = 1;
            } else {
                mark_to_drop(standard_metadata);
            }
        }
    }
}

control OlafEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(MAX_CLUSTERS, CounterType.packets) cluster_departures;
    counter(NUM_TOKEN_FATE, CounterType.packets) token_fates;                    // index: TOKEN_FATE_*
    counter(NUM_RECLAIM * RECLAIM_SLOTS, CounterType.packets) reclaimed;         // RECLAIM_* * RECLAIM_SLOTS + n
    AckReplicaRewrite() ack_rewrite;

    apply {
        if (meta.is_token == 1) {
            // Every token ends in exactly one token_fates entry; the reclaimed histogram
            // counts the segments this call reclaimed (docs/dataplane.md "The token ledger").
            bit<8> fate;
            bit<32> lost;
            bit<32> expired;
            olaf_queue.dequeue(meta.token, fate, lost, expired,
                               hdr.olaf_update.cluster_id, hdr.olaf_update.worker_id,
                               hdr.olaf_update.seq, hdr.olaf_update.count,
                               hdr.olaf_update.reward_sum, hdr.olaf_update.gen_ts,
                               hdr.olaf_update.chunk, hdr.olaf_update.num_chunks,
                               hdr.ipv4.srcAddr, hdr.udp.srcPort);
            token_fates.count((bit<32>)fate);
            if (lost != 0) {
                reclaimed.count(RECLAIM_LOST * RECLAIM_SLOTS + lost);
            }
            if (expired != 0) {
                reclaimed.count(RECLAIM_EXPIRED * RECLAIM_SLOTS + expired);
            }
            if (fate == TOKEN_FATE_STALE) {
                mark_to_drop(standard_metadata);
            } else {
                hdr.udp.checksum = 0;
                cluster_departures.count((bit<32>)hdr.olaf_update.cluster_id);
            }
        } else if (hdr.olaf_ack.isValid() && standard_metadata.egress_rid != 0) {
            ack_rewrite.apply(hdr, meta, standard_metadata);
        }
    }
}

V1Switch(OlafParser(), OlafVerifyChecksum(), OlafIngress(), OlafEgress(),
         OlafComputeChecksum(), OlafDeparser()) main;
