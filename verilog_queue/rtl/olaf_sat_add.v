/*
 * Olaf: lane-wise saturating addition of big-endian signed elements.
 *
 * Part of the OlafQueue RTL (verilog_queue/). Combinational.
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Adds two AXI4-Stream beats element by element, where an element is a
 * GRAD_WIDTH-bit two's-complement integer stored big-endian (network byte
 * order, docs/protocol.md): byte 0 of an element sits in the lowest tdata
 * byte lane, as an AXI4-Stream carries the first byte of a frame in
 * tdata[7:0]. The sum saturates at the signed limits instead of wrapping
 * (the switch's aggregation operator, olaf.fixedpoint.sat_add32).
 *
 * Lanes whose lane_en bit is clear pass a_data through unchanged.
 */
module olaf_sat_add #
(
    // Width of the beats in bits (a multiple of GRAD_WIDTH)
    parameter DATA_WIDTH = 512,
    // Width of one element in bits (a multiple of 8)
    parameter GRAD_WIDTH = 32
)
(
    // Waiting (stored) beat; passed through in disabled lanes
    input  wire [DATA_WIDTH-1:0]            a_data,
    // Arriving beat
    input  wire [DATA_WIDTH-1:0]            b_data,
    // One bit per element lane: 1 = output the saturated sum, 0 = a_data
    input  wire [DATA_WIDTH/GRAD_WIDTH-1:0] lane_en,
    // Result beat
    output wire [DATA_WIDTH-1:0]            sum_data
);

localparam LANES = DATA_WIDTH / GRAD_WIDTH;
localparam LANE_BYTES = GRAD_WIDTH / 8;

// check configuration
initial begin
    if (GRAD_WIDTH % 8 != 0 || GRAD_WIDTH < 8) begin
        $error("Error: GRAD_WIDTH must be a positive multiple of 8 (instance %m)");
        $finish;
    end

    if (DATA_WIDTH % GRAD_WIDTH != 0) begin
        $error("Error: DATA_WIDTH must be a multiple of GRAD_WIDTH (instance %m)");
        $finish;
    end
end

genvar i, k;

generate
for (i = 0; i < LANES; i = i + 1) begin : lane
    wire [GRAD_WIDTH-1:0] a_le;
    wire [GRAD_WIDTH-1:0] b_le;
    wire [GRAD_WIDTH-1:0] s_le;
    wire [GRAD_WIDTH-1:0] s_be;

    // byte-swap big-endian lane bytes into an integer and back
    for (k = 0; k < LANE_BYTES; k = k + 1) begin : swap
        assign a_le[k*8 +: 8] = a_data[i*GRAD_WIDTH + (LANE_BYTES-1-k)*8 +: 8];
        assign b_le[k*8 +: 8] = b_data[i*GRAD_WIDTH + (LANE_BYTES-1-k)*8 +: 8];
        assign s_be[(LANE_BYTES-1-k)*8 +: 8] = s_le[k*8 +: 8];
    end

    wire [GRAD_WIDTH-1:0] raw = a_le + b_le;
    // overflow: both operands have the same sign and the sum's sign differs
    wire ovf = (a_le[GRAD_WIDTH-1] == b_le[GRAD_WIDTH-1]) && (raw[GRAD_WIDTH-1] != a_le[GRAD_WIDTH-1]);
    // saturate towards the operands' sign: 0111..1 or 1000..0
    assign s_le = ovf ? {a_le[GRAD_WIDTH-1], {GRAD_WIDTH-1{!a_le[GRAD_WIDTH-1]}}} : raw;

    assign sum_data[i*GRAD_WIDTH +: GRAD_WIDTH] = lane_en[i] ? s_be : a_data[i*GRAD_WIDTH +: GRAD_WIDTH];
end
endgenerate

endmodule

`resetall
