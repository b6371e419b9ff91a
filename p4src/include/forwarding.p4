// IPv4 forwarding of everything that is not multicast: updates toward the PS,
// INIT updates, ACKs of clusters without a group, and non-Olaf traffic.
// Controller: olaf.controller.forwarding.Ipv4Forwarding.
#ifndef OLAF_FORWARDING_P4_
#define OLAF_FORWARDING_P4_

control Ipv4Forwarding(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    // Next hop: egress port and its MAC addresses.
    action ipv4_forward(macAddr_t src_mac, macAddr_t dst_mac, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = src_mac;
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.routed = 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; }
        size = MAX_ROUTES;
        default_action = drop();
    }
    apply {
        meta.routed = 0;
        ipv4_lpm.apply();
    }
}

#endif
