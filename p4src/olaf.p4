// Olaf data plane for BMv2 v1model (paper §4, §7; docs/protocol.md).
//
// Ingress: parse -> validate Olaf messages (malformed: count by reason, drop)
//   update  from a known worker: stamp ids, route to the PS, OlafQueue.enqueue;
//           APPEND keeps the packet (it carries its segment through the traffic
//           manager's PS-port queue: the departure order), every other decision
//           folds it into the queue and drops the packet;
//   update  INIT / unknown source: forwarded without queueing;
//   ACK     embed queue status, multicast to the cluster's group;
//   other   IPv4 forwarding.
// Egress: a departing token takes the head segment's content (OlafQueue.dequeue);
//   ACK replicas get their worker's destination.
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
OlafQueue(SEGMENTS, MAX_CLUSTERS) olaf_queue;

control OlafIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(DECISION_SLOTS, CounterType.packets) decisions;                      // index: DECISION_*
    counter(MAX_CLUSTERS * DECISION_SLOTS, CounterType.packets) cluster_decisions; // cluster * DECISION_SLOTS + decision
    counter(NUM_MALFORMED, CounterType.packets) malformed;                       // index: MALFORMED_*
    counter(NUM_TRAFFIC, CounterType.packets) traffic;                           // index: TRAFFIC_*

    ValidateOlaf() validate;
    OlafParams() params;
    Ipv4Forwarding() forwarding;
    UpdateIdentifier() identifier;
    AckMulticast() ack_multicast;

    action configure_queue() {
        olaf_queue.configure(meta.params.queue_size, meta.params.flags,
                             meta.params.reward_threshold, meta.params.activity_window_ns,
                             meta.params.num_grads);
    }

    apply {
        meta.is_token = 0;
        meta.ack_grouped = 0;
        if (!hdr.ipv4.isValid()) {
            traffic.count(TRAFFIC_NON_IPV4);
            mark_to_drop(standard_metadata);
            return;
        }
        validate.apply(hdr, meta, standard_metadata);
        params.apply(meta);
        if (meta.malformed == 0 && hdr.olaf_update.isValid()
                && hdr.olaf_update.num_grads != meta.params.num_grads) {
            meta.malformed = 1;
            meta.malformed_reason = MALFORMED_NUM_GRADS;
        }
        if (meta.malformed == 1) {
            malformed.count(meta.malformed_reason);
            mark_to_drop(standard_metadata);
            return;
        }

        // Classify; every packet that is not multicast is forwarded exactly once below
        // (BMv2 allows one application of a table per packet path).
        meta.to_queue = 0;
        if (hdr.olaf_update.isValid()) {
            if ((hdr.olaf_update.flags & UPDATE_FLAG_INIT) != 0) {
                traffic.count(TRAFFIC_INIT);
            } else {
                identifier.apply(hdr, meta);
                if (meta.worker_known == 1) {
                    meta.to_queue = 1;
                } else {
                    traffic.count(TRAFFIC_UNKNOWN_SOURCE);
                }
            }
        } else if (hdr.olaf_ack.isValid()) {
            configure_queue();
            olaf_queue.status(meta.queue_util, meta.active_clusters, meta.queue_size);
            // Multi-hop: keep the tightest bottleneck (smallest Q_max/N), docs/protocol.md.
            bit<48> own = (bit<48>)meta.queue_size * (bit<48>)hdr.olaf_ack.active_clusters;
            bit<48> carried = (bit<48>)hdr.olaf_ack.queue_size * (bit<48>)meta.active_clusters;
            if ((hdr.olaf_ack.flags & ACK_FLAG_STATUS_VALID) == 0 || own < carried) {
                hdr.olaf_ack.queue_util = meta.queue_util;
                hdr.olaf_ack.active_clusters = meta.active_clusters;
                hdr.olaf_ack.queue_size = meta.queue_size;
                hdr.olaf_ack.flags = hdr.olaf_ack.flags | ACK_FLAG_STATUS_VALID;
            }
            ack_multicast.apply(hdr, meta, standard_metadata);
            if (meta.ack_grouped == 1) {
                traffic.count(TRAFFIC_ACK_MULTICAST);
            } else {
                traffic.count(TRAFFIC_ACK_UNICAST);
            }
        } else {
            traffic.count(TRAFFIC_BYPASS);
        }

        if (meta.ack_grouped == 0) {
            forwarding.apply(hdr, meta, standard_metadata);  // updates: toward the PS
            if (meta.routed == 0) {
                traffic.count(TRAFFIC_NO_ROUTE);
                return;
            }
        }

        if (meta.to_queue == 1) {
            configure_queue();
            olaf_queue.enqueue(hdr.olaf_update.cluster_id, hdr.olaf_update.worker_id,
                               hdr.olaf_update.seq, hdr.olaf_update.count,
                               hdr.olaf_update.reward_sum, hdr.olaf_update.gen_ts,
                               hdr.ipv4.srcAddr, hdr.udp.srcPort,
                               meta.decision, meta.segment);
            if (meta.decision == DECISION_ERROR) {
                malformed.count(MALFORMED_EXTERN);
                mark_to_drop(standard_metadata);
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
    counter(NUM_EGRESS_ERROR, CounterType.packets) egress_errors;  // index: EGRESS_ERROR_*
    AckReplicaRewrite() ack_rewrite;

    apply {
        if (meta.is_token == 1) {
            bit<8> ok;
            olaf_queue.dequeue(meta.segment, ok,
                               hdr.olaf_update.cluster_id, hdr.olaf_update.worker_id,
                               hdr.olaf_update.seq, hdr.olaf_update.count,
                               hdr.olaf_update.reward_sum, hdr.olaf_update.gen_ts,
                               hdr.ipv4.srcAddr, hdr.udp.srcPort);
            if (ok == 1) {
                hdr.udp.checksum = 0;
                cluster_departures.count((bit<32>)hdr.olaf_update.cluster_id);
            } else {
                egress_errors.count(EGRESS_ERROR_DEQUEUE_EMPTY);
                mark_to_drop(standard_metadata);
            }
        } else if (hdr.olaf_ack.isValid() && standard_metadata.egress_rid != 0) {
            ack_rewrite.apply(hdr, meta, standard_metadata);
        }
    }
}

V1Switch(OlafParser(), OlafVerifyChecksum(), OlafIngress(), OlafEgress(),
         OlafComputeChecksum(), OlafDeparser()) main;
