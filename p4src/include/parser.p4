// Parser, checksum controls and deparser. Olaf messages are recognised only in
// unfragmented IPv4 without options (docs/protocol.md "Transport"); an Olaf port
// behind options or in a first fragment is parsed far enough to be refused.
// Gradients and weights stay in the payload, where the OlafQueue extern reads and
// writes them.
#ifndef OLAF_PARSER_P4_
#define OLAF_PARSER_P4_

parser OlafParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            IPV4_IHL_NO_OPTIONS: parse_l4;
            (IPV4_IHL_NO_OPTIONS + 1) .. IPV4_IHL_MAX: parse_ipv4_options;
            default: accept;  // IHL < 5 is no IPv4 header: ingress drops it (traffic non_ipv4)
        }
    }
    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options,
                       ((bit<32>)hdr.ipv4.ihl - (bit<32>)IPV4_IHL_NO_OPTIONS) * IPV4_WORD_BITS);
        transition parse_l4;
    }
    // Only a datagram's first fragment (offset 0) holds the UDP header.
    state parse_l4 {
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (IPPROTO_UDP, 0): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags & IPV4_FLAG_MF, hdr.udp.dstPort) {
            (IPV4_IHL_NO_OPTIONS, 0, UPDATE_PORT): parse_olaf_update;
            (IPV4_IHL_NO_OPTIONS, 0, ACK_PORT): parse_olaf_ack;
            default: accept;
        }
    }
    // A datagram too short for the Olaf header fails extraction (PacketTooShort):
    // v1model then hands the packet to ingress with parser_error set; ingress
    // counts it as malformed and drops it.
    state parse_olaf_update {
        packet.extract(hdr.olaf_update);
        transition accept;
    }
    state parse_olaf_ack {
        packet.extract(hdr.olaf_ack);
        transition accept;
    }
}

// The IPv4 header checksum is verified (standard_metadata.checksum_error) and
// recomputed after the header changed (TTL, destination of ACK replicas).
control OlafVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4_options.options },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control OlafComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4_options.options },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control OlafDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.udp);
        packet.emit(hdr.olaf_update);
        packet.emit(hdr.olaf_ack);
    }
}

#endif
