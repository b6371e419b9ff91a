// Update identifier (paper §7 "Uplink", Fig. 4a): the worker table maps an
// update's source to Worker_ID and Cluster_ID, which the switch stamps into the
// header (never trusted from the worker). Controller: olaf.controller.workers.
#ifndef OLAF_UPDATE_IDENTIFIER_P4_
#define OLAF_UPDATE_IDENTIFIER_P4_

control UpdateIdentifier(inout headers_t hdr, inout metadata_t meta) {
    action set_worker(bit<16> worker_id, bit<16> cluster_id) {
        hdr.olaf_update.worker_id = worker_id;
        hdr.olaf_update.cluster_id = cluster_id;
        meta.worker_known = 1;
    }
    action unknown_source() { }
    table worker_table {
        key = { hdr.ipv4.srcAddr: exact; }
        actions = { set_worker; unknown_source; }
        size = MAX_WORKERS;
        default_action = unknown_source();
    }
    apply {
        meta.worker_known = 0;
        worker_table.apply();
    }
}

#endif
