// ACK path (paper §7 "Downlink"): the ACK's cluster selects a PRE multicast
// group with one replica per worker (egress_rid = worker_id) or per next-hop
// switch (egress_rid = 0); egress rewrites each worker replica's destination
// (MAC, IPv4 and the worker's own UDP port: workers may share an address).
// Controller: olaf.controller.clusters.AckMulticast.
#ifndef OLAF_ACK_MULTICAST_P4_
#define OLAF_ACK_MULTICAST_P4_

control AckMulticast(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action set_mcast_grp(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
        meta.ack_grouped = 1;
    }
    action no_group() { }
    table cluster_mcast {
        key = { hdr.olaf_ack.cluster_id: exact; }
        actions = { set_mcast_grp; no_group; }
        size = MAX_CLUSTERS;
        default_action = no_group();
    }
    apply {
        meta.ack_grouped = 0;
        cluster_mcast.apply();
    }
}

// Per-replica rewrite, keyed by egress_rid (the worker_id of the replica).
// Replicas toward another Olaf switch use egress_rid 0 and are not rewritten.
control AckReplicaRewrite(inout headers_t hdr, inout metadata_t meta,
                          inout standard_metadata_t standard_metadata) {
    action rewrite_dst(macAddr_t src_mac, macAddr_t dst_mac, ip4Addr_t dst_ip, bit<16> dst_port) {
        hdr.ethernet.srcAddr = src_mac;
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ipv4.dstAddr = dst_ip;
        hdr.udp.dstPort = dst_port;
        hdr.udp.checksum = 0;
    }
    action no_rewrite() { }
    table ack_rewrite {
        key = { standard_metadata.egress_rid: exact; }
        actions = { rewrite_dst; no_rewrite; }
        size = MAX_WORKERS;
        default_action = no_rewrite();
    }
    apply {
        ack_rewrite.apply();
    }
}

#endif
