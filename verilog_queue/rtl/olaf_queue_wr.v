/*
 * Olaf: OlafQueue input pipeline (AXI4-Stream slave, segment writes, merge).
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Takes one beat per clock from the AXI4-Stream slave and writes it into the
 * segment that olaf_queue_ctrl chose for its frame, adding it lane by lane to
 * the stored beat when the frame is aggregated. Five stages, no stalls:
 *
 *   A  input register; a first beat's tuser and its Olaf chunk and
 *      num_chunks (frame bytes OLAF_OFFSET+CHUNK_OFFSET .. +3, big-endian)
 *      go to olaf_queue_ctrl
 *   B  (olaf_queue_ctrl looks up the key)
 *   C  the frame's decision is known (from olaf_queue_ctrl for the first
 *      beat, from the frame context after it); the stored beat of the
 *      waiting segment is read for a merge
 *   D  saturating lane-wise add (olaf_sat_add) of the gradient lanes
 *   E  write to the segment memory
 *
 * A merge read at stage C can meet the write at stage E of the same word
 * (two back-to-back two-beat frames of one key); the written word is then
 * forwarded. s_axis_tready is high except during reset and for one cycle
 * after a one-beat Olaf update (malformed: the header alone needs two beats),
 * which keeps update frames two cycles apart for olaf_queue_ctrl.
 *
 * Frames are stored from beat 0; beats beyond BEATS_PER_SEGMENT are not
 * stored (the frame is cut and status_oversize pulses). tkeep must be all
 * ones on every beat but the last (contiguous packet data). An aggregated
 * frame keeps the waiting frame's length: beats and lanes that the arriving
 * frame does not cover are left as they are.
 *
 * seg_busy flags every segment a decided frame may still write; the
 * departure engine starts reading a locked segment only when its bit is clear.
 */
module olaf_queue_wr #
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
    // Gradient element width in bits
    parameter GRAD_WIDTH = 32,
    // Frame byte offset of the Olaf update header
    parameter OLAF_OFFSET = 42,
    // Bytes of the Olaf update header (olaf.constants.UPDATE_HEADER_LEN)
    parameter UPDATE_HEADER_LEN = 30,
    // Offset of chunk (uint16) and num_chunks (uint16) in the Olaf header (olaf.constants.CHUNK_OFFSET)
    parameter CHUNK_OFFSET = 4,
    // Width of timestamps (ns)
    parameter TIME_WIDTH = 64,
    // Segment address width
    parameter SEG_WIDTH = SEGMENTS > 1 ? $clog2(SEGMENTS) : 1,
    // Width of a frame length in beats (0 .. BEATS_PER_SEGMENT)
    parameter LEN_WIDTH = $clog2(BEATS_PER_SEGMENT + 1)
)
(
    input  wire                  clk,
    input  wire                  rst,

    /*
     * AXI4-Stream input
     */
    input  wire [DATA_WIDTH-1:0] s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0] s_axis_tkeep,
    input  wire                  s_axis_tvalid,
    output reg                   s_axis_tready,
    input  wire                  s_axis_tlast,
    input  wire [USER_WIDTH-1:0] s_axis_tuser,

    // Current time (ns), recorded as the arrival time of a first beat
    input  wire [TIME_WIDTH-1:0] now,

    /*
     * Stage A: first beat and its metadata, to olaf_queue_ctrl
     */
    output wire                  a_first_valid,
    output wire [USER_WIDTH-1:0] a_user,
    output reg  [TIME_WIDTH-1:0] a_time,
    output wire [15:0]           a_chunk,          // Olaf header chunk, big-endian at frame byte OLAF_OFFSET+CHUNK_OFFSET
    output wire [15:0]           a_num_chunks,     // Olaf header num_chunks, the two bytes after chunk
    output wire                  a_chunk_present,  // the first beat's tkeep covers both fields

    /*
     * Stage C: decision for the first beat at stage C, from olaf_queue_ctrl
     */
    input  wire                  dec_write,
    input  wire                  dec_merge,
    input  wire [SEG_WIDTH-1:0]  dec_seg,
    input  wire [LEN_WIDTH-1:0]  dec_owner_len,
    input  wire [SEG_WIDTH-1:0]  dec_q_seg,
    input  wire                  dec_q_hit,

    /*
     * Frame length report to olaf_queue_ctrl (APPEND/REPLACE frames)
     */
    output wire                  len_valid,
    output wire [SEG_WIDTH-1:0]  len_seg,
    output wire [LEN_WIDTH-1:0]  len_beats,
    output wire [KEEP_WIDTH-1:0] len_keep,

    // Segments that a decided frame may still write
    output reg  [SEGMENTS-1:0]   seg_busy,

    /*
     * Segment memory: write port and merge read port
     */
    output reg                   mem_wr_en,
    output reg  [SEG_WIDTH-1:0]  mem_wr_seg,
    output reg  [LEN_WIDTH-1:0]  mem_wr_beat,
    output reg  [DATA_WIDTH-1:0] mem_wr_data,
    output wire                  mem_rd_en,
    output wire [SEG_WIDTH-1:0]  mem_rd_seg,
    output wire [LEN_WIDTH-1:0]  mem_rd_beat,
    input  wire [DATA_WIDTH-1:0] mem_rd_data,

    // A stored frame was longer than a segment and was cut (one-cycle pulse)
    output reg                   status_oversize
);

localparam LANES = DATA_WIDTH / GRAD_WIDTH;
localparam LANE_BYTES = GRAD_WIDTH / 8;
// first gradient byte of a frame and its beat / lane
localparam GRAD_OFFSET = OLAF_OFFSET + UPDATE_HEADER_LEN;
// chunk and num_chunks: frame bytes CHUNK_BYTE .. CHUNK_BYTE+3 of the first beat
localparam CHUNK_BYTE = OLAF_OFFSET + CHUNK_OFFSET;
localparam GRAD_BEAT = GRAD_OFFSET / KEEP_WIDTH;
localparam GRAD_LANE = (GRAD_OFFSET % KEEP_WIDTH) / LANE_BYTES;
// beat index width: 0 .. BEATS_PER_SEGMENT, the top value meaning "beyond the segment"
localparam BEAT_WIDTH = LEN_WIDTH;
localparam [31:0] BEAT_OVER_W = BEATS_PER_SEGMENT;
localparam [BEAT_WIDTH-1:0] BEAT_OVER = BEAT_OVER_W[BEAT_WIDTH-1:0];

// check configuration
initial begin
    if (GRAD_OFFSET % LANE_BYTES != 0) begin
        $error("Error: the gradients (frame byte OLAF_OFFSET+UPDATE_HEADER_LEN) must be aligned to GRAD_WIDTH (instance %m)");
        $finish;
    end

    if (CHUNK_BYTE + 4 > KEEP_WIDTH) begin
        $error("Error: chunk and num_chunks (frame bytes OLAF_OFFSET+CHUNK_OFFSET .. +3) must be in the first beat (instance %m)");
        $finish;
    end
end

/*
 * Stage A: input register
 */
wire s_fire = s_axis_tvalid && s_axis_tready;

reg                  in_frame;
reg [BEAT_WIDTH-1:0] in_beat;

reg                  a_valid;
reg                  a_first;
reg                  a_last;
reg [BEAT_WIDTH-1:0] a_beat;
reg [DATA_WIDTH-1:0] a_data;
reg [KEEP_WIDTH-1:0] a_keep;
reg [USER_WIDTH-1:0] a_user_reg;

always @(posedge clk) begin
    a_valid <= s_fire;
    // one idle cycle after a one-beat update frame
    s_axis_tready <= !(s_fire && !in_frame && s_axis_tlast && s_axis_tuser[0]);

    if (s_fire) begin
        in_frame <= !s_axis_tlast;
        in_beat <= s_axis_tlast ? {BEAT_WIDTH{1'b0}} : (in_beat == BEAT_OVER ? BEAT_OVER : in_beat + 1'b1);
        a_first <= !in_frame;
        a_last <= s_axis_tlast;
        a_beat <= in_beat;
        a_data <= s_axis_tdata;
        a_keep <= s_axis_tkeep;
        if (!in_frame) begin
            a_user_reg <= s_axis_tuser;
            a_time <= now;
        end
    end

    if (rst) begin
        s_axis_tready <= 1'b0;
        in_frame <= 1'b0;
        in_beat <= {BEAT_WIDTH{1'b0}};
        a_valid <= 1'b0;
    end
end

assign a_first_valid = a_valid && a_first;
assign a_user = a_user_reg;
assign a_chunk = {a_data[CHUNK_BYTE*8 +: 8], a_data[(CHUNK_BYTE+1)*8 +: 8]};
assign a_num_chunks = {a_data[(CHUNK_BYTE+2)*8 +: 8], a_data[(CHUNK_BYTE+3)*8 +: 8]};
assign a_chunk_present = a_keep[CHUNK_BYTE+3];

/*
 * Stages B and C: the beat waits for its frame's decision
 */
localparam BEAT_BITS = 2 + BEAT_WIDTH + KEEP_WIDTH + DATA_WIDTH;

reg                 b_valid;
reg [BEAT_BITS-1:0] b_beat_bus;
reg                 c_valid;
reg [BEAT_BITS-1:0] c_beat_bus;

always @(posedge clk) begin
    b_valid <= a_valid;
    b_beat_bus <= {a_first, a_last, a_beat, a_keep, a_data};
    c_valid <= b_valid;
    c_beat_bus <= b_beat_bus;

    if (rst) begin
        b_valid <= 1'b0;
        c_valid <= 1'b0;
    end
end

/*
 * Stage C: apply the frame's decision, read for the merge
 */
wire                  c_first;
wire                  c_last;
wire [BEAT_WIDTH-1:0] c_beat;
wire [KEEP_WIDTH-1:0] c_keep;
wire [DATA_WIDTH-1:0] c_data;

assign {c_first, c_last, c_beat, c_keep, c_data} = c_beat_bus;

// frame context, set by the first beat's decision
reg                 ctx_active;   // a decided frame has beats still to pass stage C
reg                 ctx_write;
reg                 ctx_merge;
reg [SEG_WIDTH-1:0] ctx_seg;
reg [LEN_WIDTH-1:0] ctx_owner_len;

wire                 f_write = c_first ? dec_write : ctx_write;
wire                 f_merge = c_first ? dec_merge : ctx_merge;
wire [SEG_WIDTH-1:0] f_seg = c_first ? dec_seg : ctx_seg;
wire [LEN_WIDTH-1:0] f_owner_len = c_first ? dec_owner_len : ctx_owner_len;
wire                 beat_in_seg = c_beat != BEAT_OVER;
wire                 c_wr_en = c_valid && f_write && beat_in_seg && (!f_merge || c_beat < f_owner_len);

// the merge read: at the first beat the decision is not known yet, so the
// waiting segment of the frame's key is read speculatively
assign mem_rd_en = c_valid && beat_in_seg;
assign mem_rd_seg = c_first ? dec_q_seg : ctx_seg;
assign mem_rd_beat = c_beat;

always @(posedge clk) begin
    if (c_valid && c_first) begin
        ctx_active <= !c_last && dec_write;
        ctx_write <= dec_write;
        ctx_merge <= dec_merge;
        ctx_seg <= dec_seg;
        ctx_owner_len <= dec_owner_len;
    end else if (c_valid && c_last) begin
        ctx_active <= 1'b0;
    end

    if (rst) begin
        ctx_active <= 1'b0;
        ctx_write <= 1'b0;
        ctx_merge <= 1'b0;
    end
end

assign len_valid = c_valid && c_last && f_write && !f_merge;
assign len_seg = f_seg;
assign len_beats = beat_in_seg ? c_beat + 1'b1 : BEAT_OVER;
assign len_keep = beat_in_seg ? c_keep : {KEEP_WIDTH{1'b1}};

always @(posedge clk) begin
    status_oversize <= c_valid && c_last && f_write && !beat_in_seg;

    if (rst) begin
        status_oversize <= 1'b0;
    end
end

/*
 * Stage D: saturating add
 */
reg                  d_valid;
reg                  d_wr_en;
reg                  d_merge;
reg [SEG_WIDTH-1:0]  d_seg;
reg [BEAT_WIDTH-1:0] d_beat;
reg [DATA_WIDTH-1:0] d_data;
reg [KEEP_WIDTH-1:0] d_keep;
reg                  d_fwd;
reg [DATA_WIDTH-1:0] d_fwd_data;

always @(posedge clk) begin
    d_valid <= c_valid;
    d_wr_en <= c_wr_en;
    d_merge <= f_merge;
    d_seg <= f_seg;
    d_beat <= c_beat;
    d_data <= c_data;
    d_keep <= c_keep;
    // the word read now is being written by stage E in this same cycle
    d_fwd <= mem_wr_en && mem_wr_seg == mem_rd_seg && mem_wr_beat == mem_rd_beat;
    d_fwd_data <= mem_wr_data;

    if (rst) begin
        d_valid <= 1'b0;
        d_wr_en <= 1'b0;
    end
end

wire [DATA_WIDTH-1:0] stored = d_fwd ? d_fwd_data : mem_rd_data;
wire [LANES-1:0]      lane_en;
wire [31:0]           d_beat_w = {{32-BEAT_WIDTH{1'b0}}, d_beat};
wire [DATA_WIDTH-1:0] sum_data;

genvar j;

generate
for (j = 0; j < LANES; j = j + 1) begin : lane
    // a gradient element: at or after frame byte GRAD_OFFSET, all bytes present
    wire is_grad = d_beat_w > GRAD_BEAT || (d_beat_w == GRAD_BEAT && j >= GRAD_LANE);
    assign lane_en[j] = d_merge && is_grad && (&d_keep[j*LANE_BYTES +: LANE_BYTES]);
end
endgenerate

olaf_sat_add #(
    .DATA_WIDTH(DATA_WIDTH),
    .GRAD_WIDTH(GRAD_WIDTH)
)
sat_add_inst (
    .a_data(stored),
    .b_data(d_data),
    .lane_en(lane_en),
    .sum_data(sum_data)
);

/*
 * Stage E: write
 */
always @(posedge clk) begin
    mem_wr_en <= d_valid && d_wr_en;
    mem_wr_seg <= d_seg;
    mem_wr_beat <= d_beat;
    mem_wr_data <= d_merge ? sum_data : d_data;

    if (rst) begin
        mem_wr_en <= 1'b0;
    end
end

/*
 * Segments still to be written by decided frames
 */
integer s;

always @* begin
    for (s = 0; s < SEGMENTS; s = s + 1) begin
        seg_busy[s] = (ctx_active && ctx_write && ctx_seg == s[SEG_WIDTH-1:0])
            // may REPLACE or AGGREGATE now
            || (c_valid && c_first && dec_q_hit && dec_q_seg == s[SEG_WIDTH-1:0])
            || (d_valid && d_wr_en && d_seg == s[SEG_WIDTH-1:0])
            || (mem_wr_en && mem_wr_seg == s[SEG_WIDTH-1:0]);
    end
end

`ifndef SYNTHESIS
always @(posedge clk) begin
    if (!rst && s_fire && !s_axis_tlast && s_axis_tkeep != {KEEP_WIDTH{1'b1}}) begin
        $error("olaf_queue_wr: tkeep must be all ones on beats other than the last");
    end
end
`endif

endmodule

`resetall
