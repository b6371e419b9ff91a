// Malformed Olaf messages (docs/protocol.md "Versioning and malformed
// messages") are flagged here; ingress counts them by reason and drops them.
// Needs meta.params (OlafParams applied first): an update of another K than the
// deployment's (params.num_chunks) is MALFORMED_CHUNK like a chunk >= num_chunks.
#ifndef OLAF_VALIDATE_P4_
#define OLAF_VALIDATE_P4_

control ValidateOlaf(in headers_t hdr, inout metadata_t meta,
                     in standard_metadata_t standard_metadata) {
    action malformed(bit<32> reason) {
        meta.malformed = 1;
        meta.malformed_reason = reason;
    }
    apply {
        meta.malformed = 0;
        // Length as the headers claim it, and as the frame has it (no FCS on BMv2 ports).
        bit<32> frame_len = ETH_HEADER_LEN + (bit<32>)IPV4_HEADER_LEN + (bit<32>)hdr.udp.length;
        if (hdr.olaf_update.isValid()) {
            bit<32> elems = (bit<32>)hdr.olaf_update.num_grads;
            if (hdr.olaf_update.version != PROTOCOL_VERSION) {
                malformed(MALFORMED_VERSION);
            } else if (hdr.olaf_update.msg_type != MSG_UPDATE) {
                malformed(MALFORMED_MSG_TYPE);
            } else if ((bit<32>)hdr.udp.length != (bit<32>)(UDP_HEADER_LEN + UPDATE_HEADER_LEN) + elems * (bit<32>)ELEMENT_LEN
                       || hdr.ipv4.totalLen != IPV4_HEADER_LEN + hdr.udp.length
                       || standard_metadata.packet_length != frame_len) {
                malformed(MALFORMED_LENGTH);
            } else if (hdr.olaf_update.count == 0) {
                malformed(MALFORMED_COUNT);
            } else if (hdr.olaf_update.num_chunks != meta.params.num_chunks
                       || hdr.olaf_update.chunk >= hdr.olaf_update.num_chunks) {
                malformed(MALFORMED_CHUNK);
            }
        } else if (hdr.olaf_ack.isValid()) {
            bit<32> elems = (bit<32>)hdr.olaf_ack.num_weights;
            if (hdr.olaf_ack.version != PROTOCOL_VERSION) {
                malformed(MALFORMED_VERSION);
            } else if (hdr.olaf_ack.msg_type != MSG_ACK) {
                malformed(MALFORMED_MSG_TYPE);
            } else if ((bit<32>)hdr.udp.length != (bit<32>)(UDP_HEADER_LEN + ACK_HEADER_LEN) + elems * (bit<32>)ELEMENT_LEN
                       || hdr.ipv4.totalLen != IPV4_HEADER_LEN + hdr.udp.length
                       || standard_metadata.packet_length != frame_len) {
                malformed(MALFORMED_LENGTH);
            } else if (hdr.olaf_ack.chunk >= hdr.olaf_ack.num_chunks) {
                malformed(MALFORMED_CHUNK);
            }
        } else if (hdr.udp.isValid()
                   && (hdr.udp.dstPort == UPDATE_PORT || hdr.udp.dstPort == ACK_PORT)) {
            // An Olaf port whose header was not extracted: behind IPv4 options, in a
            // first fragment, or too short for the header.
            if (hdr.ipv4_options.isValid()) {
                malformed(MALFORMED_IP_OPTIONS);
            } else if ((hdr.ipv4.flags & IPV4_FLAG_MF) != 0) {
                malformed(MALFORMED_FRAGMENT);
            } else {
                malformed(MALFORMED_LENGTH);
            }
        }
    }
}

#endif
