/*
 * Olaf: OlafQueue departure engine (AXI4-Stream master).
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Sends the locked head segment beat by beat. The read data register of the
 * segment memory is the output register: a beat is read when the output is
 * empty or being taken. When olaf_queue_ctrl locks a head, its first beat is
 * read in the same cycle unless a decided frame may still write that segment
 * (seg_busy); the start then waits until it may not. olaf_queue_ctrl locks the
 * next head in the cycle in which the last beat of the previous one is taken,
 * so frames leave back to back.
 *
 * On the way out the Olaf fields that aggregation changes are written into
 * an update's frame from the segment's metadata: count (frame byte
 * OLAF_OFFSET+COUNT_OFFSET = 58 in protocol version 2), reward_sum (+2)
 * and gen_ts (+6), 14 bytes big-endian (frame bytes 58..71). In a frame
 * into which an update was aggregated the UDP checksum (OLAF_OFFSET-2) is
 * set to 0 (docs/protocol.md: a switch that rewrites an Olaf message sets
 * it to 0). m_axis_tuser carries the departing update's metadata in the
 * layout of s_axis_tuser, held for the whole frame.
 */
module olaf_queue_rd #
(
    // Width of AXI4-Stream tdata in bits
    parameter DATA_WIDTH = 512,
    // tkeep width
    parameter KEEP_WIDTH = DATA_WIDTH / 8,
    // tuser width (Olaf metadata, see olaf_queue.v)
    parameter USER_WIDTH = 145,
    // Physical segments
    parameter SEGMENTS = 8,
    // Beats per segment
    parameter BEATS_PER_SEGMENT = 24,
    // Frame byte offset of the Olaf update header
    parameter OLAF_OFFSET = 42,
    // Offset of count (uint16, then reward_sum int32, gen_ts uint64) in the Olaf update header
    parameter COUNT_OFFSET = 16,
    // Segment address width
    parameter SEG_WIDTH = SEGMENTS > 1 ? $clog2(SEGMENTS) : 1,
    // Width of a frame length in beats (0 .. BEATS_PER_SEGMENT)
    parameter LEN_WIDTH = $clog2(BEATS_PER_SEGMENT + 1)
)
(
    input  wire                  clk,
    input  wire                  rst,

    /*
     * Head segment, from olaf_queue_ctrl
     */
    input  wire                  lock_fire,
    input  wire [SEG_WIDTH-1:0]  head_seg,
    input  wire [LEN_WIDTH-1:0]  head_len,
    input  wire                  locked_update,
    input  wire                  locked_merged,
    input  wire [15:0]           locked_cluster_id,
    input  wire [15:0]           locked_worker_id,
    input  wire [15:0]           locked_count,
    input  wire [31:0]           locked_reward_sum,
    input  wire [63:0]           locked_gen_ts,
    input  wire [KEEP_WIDTH-1:0] locked_keep,
    output wire                  release_head,   // the last beat of the head is taken this cycle

    // Segments that a decided frame may still write (olaf_queue_wr)
    input  wire [SEGMENTS-1:0]   seg_busy,

    /*
     * Segment memory read port
     */
    output wire                  mem_rd_en,
    output wire [SEG_WIDTH-1:0]  mem_rd_seg,
    output wire [LEN_WIDTH-1:0]  mem_rd_beat,
    input  wire [DATA_WIDTH-1:0] mem_rd_data,

    /*
     * AXI4-Stream output
     */
    output reg  [DATA_WIDTH-1:0] m_axis_tdata,
    output wire [KEEP_WIDTH-1:0] m_axis_tkeep,
    output wire                  m_axis_tvalid,
    input  wire                  m_axis_tready,
    output wire                  m_axis_tlast,
    output wire [USER_WIDTH-1:0] m_axis_tuser
);

// header fields written on the way out: count, reward_sum, gen_ts (14 bytes)
localparam FIELDS_OFFSET = OLAF_OFFSET + COUNT_OFFSET;
localparam CSUM_OFFSET = OLAF_OFFSET - 2;

// check configuration
initial begin
    if (OLAF_OFFSET < 2) begin
        $error("Error: OLAF_OFFSET must leave room for the UDP checksum (instance %m)");
        $finish;
    end
end

reg                 pending;    // locked, start waits for seg_busy
reg                 reading;    // beats after the first are still to be read
reg [LEN_WIDTH-1:0] rd_beat;
reg                 out_valid;
reg [LEN_WIDTH-1:0] out_beat;
reg                 out_last;

wire pipe_en = !out_valid || m_axis_tready;
wire start = pipe_en && (lock_fire || pending) && !seg_busy[head_seg];
wire issue = start || (pipe_en && reading);
wire [LEN_WIDTH-1:0] beat = start ? {LEN_WIDTH{1'b0}} : rd_beat;
wire beat_last = beat == head_len - 1'b1;

assign release_head = out_valid && m_axis_tready && out_last;
assign mem_rd_en = issue;
assign mem_rd_seg = head_seg;
assign mem_rd_beat = beat;

always @(posedge clk) begin
    if (pipe_en) begin
        out_valid <= issue;
    end

    if (issue) begin
        out_beat <= beat;
        out_last <= beat_last;
        rd_beat <= beat + 1'b1;
        reading <= !beat_last;
    end

    if (start) begin
        pending <= 1'b0;
    end else if (lock_fire) begin
        pending <= 1'b1;
    end

    if (rst) begin
        pending <= 1'b0;
        reading <= 1'b0;
        out_valid <= 1'b0;
        out_last <= 1'b0;
    end
end

/*
 * Output: header fields spliced into the stored frame
 */
wire [111:0] fields = {locked_count, locked_reward_sum, locked_gen_ts};
wire [31:0]  out_beat_w = {{32-LEN_WIDTH{1'b0}}, out_beat};

integer i;

always @* begin
    m_axis_tdata = mem_rd_data;
    if (locked_update) begin
        for (i = 0; i < 14; i = i + 1) begin
            if (out_beat_w == (FIELDS_OFFSET + i) / KEEP_WIDTH) begin
                m_axis_tdata[((FIELDS_OFFSET + i) % KEEP_WIDTH)*8 +: 8] = fields[111 - i*8 -: 8];
            end
        end
        if (locked_merged) begin
            for (i = 0; i < 2; i = i + 1) begin
                if (out_beat_w == (CSUM_OFFSET + i) / KEEP_WIDTH) begin
                    m_axis_tdata[((CSUM_OFFSET + i) % KEEP_WIDTH)*8 +: 8] = 8'h00;
                end
            end
        end
    end
end

assign m_axis_tvalid = out_valid;
assign m_axis_tlast = out_last;
assign m_axis_tkeep = out_last ? locked_keep : {KEEP_WIDTH{1'b1}};
assign m_axis_tuser = {locked_gen_ts, locked_reward_sum, locked_count, locked_worker_id, locked_cluster_id, locked_update};

`ifndef SYNTHESIS
always @(posedge clk) begin
    if (!rst && (reading || pending) && lock_fire) begin
        $error("olaf_queue_rd: lock while a head is being read");
    end
end
`endif

endmodule

`resetall
