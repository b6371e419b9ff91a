/*
 * Olaf: segment memory, one write port and one registered read port.
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * The queue's segments: one tdata beat per word, a beat addressed by its
 * segment and its index within the segment (word segment *
 * BEATS_PER_SEGMENT + beat). One write port and two independent read ports
 * (the merge path and the departure path), so that a synthesis tool builds
 * two block RAMs written alike. Each read data register holds its value
 * while its rd_en is low, so it can serve as an AXI4-Stream output register.
 *
 * A read and a write of the same word in the same cycle return the old
 * word; the queue never relies on the value returned in that case (the
 * merge path forwards the written word itself, the departure path never
 * reads a segment that is being written).
 */
module olaf_queue_mem #
(
    // Word width in bits (the AXI4-Stream tdata width)
    parameter DATA_WIDTH = 512,
    // Physical segments
    parameter SEGMENTS = 8,
    // Beats (words) per segment
    parameter BEATS_PER_SEGMENT = 24,
    // Segment address width
    parameter SEG_WIDTH = SEGMENTS > 1 ? $clog2(SEGMENTS) : 1,
    // Beat index width
    parameter BEAT_WIDTH = $clog2(BEATS_PER_SEGMENT + 1),
    // AMD/Xilinx RAM_STYLE attribute: "block", "distributed", "registers", "ultra", "auto"
    /* verilator lint_off UNUSEDPARAM */
    parameter XILINX_RAM_STYLE = "block"
    /* verilator lint_on UNUSEDPARAM */
)
(
    input  wire                  clk,

    // Write port
    input  wire                  wr_en,
    input  wire [SEG_WIDTH-1:0]  wr_seg,
    input  wire [BEAT_WIDTH-1:0] wr_beat,
    input  wire [DATA_WIDTH-1:0] wr_data,

    // Read port A (one cycle latency; rd_a_data holds while rd_a_en is low)
    input  wire                  rd_a_en,
    input  wire [SEG_WIDTH-1:0]  rd_a_seg,
    input  wire [BEAT_WIDTH-1:0] rd_a_beat,
    output reg  [DATA_WIDTH-1:0] rd_a_data,

    // Read port B (as port A)
    input  wire                  rd_b_en,
    input  wire [SEG_WIDTH-1:0]  rd_b_seg,
    input  wire [BEAT_WIDTH-1:0] rd_b_beat,
    output reg  [DATA_WIDTH-1:0] rd_b_data
);

localparam DEPTH = SEGMENTS * BEATS_PER_SEGMENT;
localparam ADDR_WIDTH = DEPTH > 1 ? $clog2(DEPTH) : 1;

// check configuration
initial begin
    if (SEGMENTS < 1 || BEATS_PER_SEGMENT < 1 || (1 << BEAT_WIDTH) < BEATS_PER_SEGMENT) begin
        $error("Error: bad SEGMENTS / BEATS_PER_SEGMENT / BEAT_WIDTH (instance %m)");
        $finish;
    end
end

function [ADDR_WIDTH-1:0] word_addr(input [SEG_WIDTH-1:0] seg, input [BEAT_WIDTH-1:0] beat);
    /* verilator lint_off UNUSEDSIGNAL */
    reg [31:0] w;
    /* verilator lint_on UNUSEDSIGNAL */
    begin
        w = {{32-SEG_WIDTH{1'b0}}, seg} * BEATS_PER_SEGMENT + {{32-BEAT_WIDTH{1'b0}}, beat};
        word_addr = w[ADDR_WIDTH-1:0];
    end
endfunction

(* ram_style = XILINX_RAM_STYLE *)
reg [DATA_WIDTH-1:0] mem [0:DEPTH-1];

always @(posedge clk) begin
    if (wr_en) begin
        mem[word_addr(wr_seg, wr_beat)] <= wr_data;
    end
end

always @(posedge clk) begin
    if (rd_a_en) begin
        rd_a_data <= mem[word_addr(rd_a_seg, rd_a_beat)];
    end
    if (rd_b_en) begin
        rd_b_data <= mem[word_addr(rd_b_seg, rd_b_beat)];
    end
end

endmodule

`resetall
