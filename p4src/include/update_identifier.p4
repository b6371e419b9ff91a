// Update identifier (paper §7 "Uplink", Fig. 4a): the worker table maps an
// update's source to Worker_ID and Cluster_ID, which the switch stamps into the
// header (never trusted from the worker). The key is the source address and,
// for the paper's five-tuple Worker_ID, the UDP source port (ternary: a
// wildcard entry binds every port of an address), so several workers may share
// one address and one switch port. A worker is bound to the port its packets
// arrive on: a known source from another port is spoofed; an address or UDP
// port with no entry is an unknown source.
// Controller: olaf.controller.update_identifier.
#ifndef OLAF_UPDATE_IDENTIFIER_P4_
#define OLAF_UPDATE_IDENTIFIER_P4_

control UpdateIdentifier(inout headers_t hdr, inout metadata_t meta,
                         in standard_metadata_t standard_metadata) {
    action set_worker(bit<16> worker_id, bit<16> cluster_id, egressSpec_t ingress_port) {
        if (standard_metadata.ingress_port == ingress_port) {
            hdr.olaf_update.worker_id = worker_id;
            hdr.olaf_update.cluster_id = cluster_id;
            meta.worker_known = 1;
        } else {
            meta.worker_spoofed = 1;
        }
    }
    action unknown_source() { }
    table worker_table {
        key = { hdr.ipv4.srcAddr: exact; hdr.udp.srcPort: ternary; }
        actions = { set_worker; unknown_source; }
        size = MAX_WORKERS;
        default_action = unknown_source();
    }
    apply {
        meta.worker_known = 0;
        meta.worker_spoofed = 0;
        worker_table.apply();
    }
}

#endif
