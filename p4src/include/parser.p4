// Parser, checksum controls and deparser. Olaf is recognised only on IPv4
// without options (docs/protocol.md "Transport"); gradients and weights stay
// in the payload, where the OlafQueue extern reads and writes them.
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
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (IPV4_IHL_NO_OPTIONS, IPPROTO_UDP, 0): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            UPDATE_PORT: parse_olaf_update;
            ACK_PORT: parse_olaf_ack;
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

control OlafVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control OlafComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control OlafDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.olaf_update);
        packet.emit(hdr.olaf_ack);
    }
}

#endif
