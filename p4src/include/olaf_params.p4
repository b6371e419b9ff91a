// Runtime parameters of the OlafQueue and of the Olaf path, as the default action
// of a keyless table so the controller sets them over P4Runtime (P4Info does not
// describe user externs). Controller: olaf.controller.olaf_params.OlafParams.
#ifndef OLAF_PARAMS_P4_
#define OLAF_PARAMS_P4_

control OlafParams(inout metadata_t meta) {
    // queue_size: segments (num_chunks..SEGMENTS); flags: PARAM_REWARD_FILTER | PARAM_FIFO;
    // reward_threshold: Q15.16; activity_window_ns: ns; num_grads: elements per update
    // (per chunk); num_chunks: K, chunks per update (1..MAX_CHUNKS; docs/protocol.md "Chunks");
    // ps_addr / ps_port: the PS and this switch's port toward it (0.0.0.0 until set:
    // no update is queued and no ACK accepted); max_sojourn_ns: longest wait of a
    // token in the PS port's traffic-manager queue (0: tokens never expire).
    action set_params(bit<32> queue_size, bit<8> flags, bit<32> reward_threshold,
                      bit<64> activity_window_ns, bit<16> num_grads, ip4Addr_t ps_addr,
                      egressSpec_t ps_port, bit<64> max_sojourn_ns, bit<16> num_chunks) {
        meta.params.queue_size = queue_size;
        meta.params.flags = flags;
        meta.params.reward_threshold = reward_threshold;
        meta.params.activity_window_ns = activity_window_ns;
        meta.params.num_grads = num_grads;
        meta.params.ps_addr = ps_addr;
        meta.params.ps_port = ps_port;
        meta.params.max_sojourn_ns = max_sojourn_ns;
        meta.params.num_chunks = num_chunks;
    }
    table olaf_params {
        key = { }
        actions = { set_params; }
        default_action = set_params(DEFAULT_QUEUE_SIZE, 0, 0, DEFAULT_ACTIVITY_WINDOW_NS,
                                    DEFAULT_NUM_GRADS, 0, 0, 0, DEFAULT_NUM_CHUNKS);
    }
    apply {
        olaf_params.apply();
    }
}

#endif
