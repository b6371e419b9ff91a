/*
 * Olaf: the OlafQueue (paper §4, §7 "Olaf Packet Processing Pipeline", §12.1).
 *
 * Part of the OlafQueue RTL (verilog_queue/). docs/rtl.md describes the design.
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * OlafQueue: an AXI4-Stream queue that keeps at most one waiting update per
 * key of reinforcement-learning workers: key (cluster, chunk), where a model
 * travels in K chunks (NUM_CHUNKS register, 1..MAX_CHUNKS; K = 1 is the
 * paper's queue, one key per cluster). It sits between two P4 blocks
 * (paper Fig. 4: VNP4_1 -> OlafQueue -> VNP4_2): the ingress P4 block
 * identifies an update and hands its metadata over on tuser; the egress P4
 * block gets the departing frames and embeds the queue status (status_*)
 * into ACKs.
 *
 * Each frame goes into a segment of BEATS_PER_SEGMENT beats. The key of an
 * Olaf update is read from its first beat: chunk and num_chunks (uint16
 * each, big-endian) at frame bytes OLAF_OFFSET+4 .. +7 (46..49, protocol
 * version 2, docs/protocol.md "Chunks"). For an Olaf
 * update n of key u from worker k (olaf/queue_model.py is the normative
 * specification; the decision codes are those of m_decision):
 *
 *   0 APPEND          no unlocked update of u is waiting and occupancy <
 *                     QUEUE_SIZE: n takes the next free segment at the tail
 *   5 DROP_FULL       no unlocked update of u is waiting and the queue is full
 *   4 DROP_REWARD     reward filter on, n's mean reward lower than the waiting
 *                     update q's by more than T
 *   3 REPLACE_REWARD  ... higher by more than T: n overwrites q's segment
 *   2 REPLACE_WORKER  q is replaceable by k and n.count == 1: n overwrites q
 *   1 AGGREGATE       otherwise: n is added into q in place (saturating int32
 *                     lanes and reward_sum, saturating count, gen_ts = max;
 *                     the frame stays q's)
 *
 * REPLACE and AGGREGATE keep q's place in the departure order. Frames depart
 * in segment order; the head is locked when it starts to leave, after which
 * a new update of its key APPENDs a second segment. Other traffic
 * (tuser update_valid = 0, a cluster id >= NUM_CLUSTERS, or an update whose
 * num_chunks is not K or whose chunk is not below K: a chunk error, flagged
 * on m_decision_chunk_error and counted in the CHUNK_ERRORS register) and
 * every frame in FIFO mode is APPENDed or dropped as in a tail-drop FIFO and
 * leaves unchanged.
 *
 * Status (paper §5) in updates: status_queue_util = ceil(occupied segments
 * / K), status_queue_size = floor(QUEUE_SIZE / K); activity is per cluster.
 *
 * s_axis_tready stays high: every decision, including an aggregation, is
 * taken at one beat per clock (a malformed one-beat update costs one idle
 * cycle).
 *
 * tuser layout (s_axis_tuser on the first beat; m_axis_tuser for the whole
 * departing frame, with the departing update's values):
 *
 *   [0]       update_valid  1: an Olaf update identified by the P4 block
 *   [16:1]    cluster_id
 *   [32:17]   worker_id
 *   [48:33]   count         updates folded in (uint16)
 *   [80:49]   reward_sum    Q15.16 int32
 *   [144:81]  gen_ts        ns (uint64)
 */
module olaf_queue #
(
    // Width of AXI4-Stream tdata in bits (512 in the paper's OpenNIC shell)
    parameter DATA_WIDTH = 512,
    // tkeep width (bytes per beat)
    parameter KEEP_WIDTH = DATA_WIDTH / 8,
    // tuser width: must be 145 (the layout above)
    parameter USER_WIDTH = 145,
    // Physical segments, each holding one frame (paper: 8)
    parameter SEGMENTS = 8,
    // Beats per segment: 24 for 1500 B frames, 142 for a 9036 B jumbo frame at 512 bit
    parameter BEATS_PER_SEGMENT = 24,
    // Number of clusters tracked (cluster ids 0 .. NUM_CLUSTERS-1; paper: 9)
    parameter NUM_CLUSTERS = 9,
    // Most chunks per update K (the NUM_CHUNKS register is 1..MAX_CHUNKS);
    // the key table holds NUM_CLUSTERS * 2^clog2(MAX_CHUNKS) keys
    parameter MAX_CHUNKS = 1,
    // Gradient element width in bits (docs/protocol.md: 32, Q7.24)
    parameter GRAD_WIDTH = 32,
    // Frame byte offset of the Olaf update header (Ethernet + IPv4 + UDP = 42)
    parameter OLAF_OFFSET = 42,
    // Width of `now` and of the activity window (ns)
    parameter TIME_WIDTH = 64,
    // AXI4-Lite address width (at least 8)
    parameter AXIL_ADDR_WIDTH = 8,
    // Activity window after reset (ns)
    parameter [63:0] ACTIVITY_WINDOW_RESET = 64'd1000000000,
    // AMD/Xilinx RAM_STYLE of the segment memory
    parameter XILINX_RAM_STYLE = "block",
    // AMD/Xilinx RAM_STYLE of the key table (cluster_status, replace_status)
    parameter XILINX_KEY_RAM_STYLE = "block",
    // Segment address width (derived)
    parameter SEG_WIDTH = SEGMENTS > 1 ? $clog2(SEGMENTS) : 1
)
(
    input  wire                       clk,
    input  wire                       rst,   // synchronous, active high

    /*
     * AXI4-Stream input: frames from the ingress P4 block
     */
    input  wire [DATA_WIDTH-1:0]      s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]      s_axis_tkeep,   // all ones except on the last beat
    input  wire                       s_axis_tvalid,
    output wire                       s_axis_tready,
    input  wire                       s_axis_tlast,
    input  wire [USER_WIDTH-1:0]      s_axis_tuser,   // Olaf metadata, read on the first beat

    /*
     * AXI4-Stream output: departing frames, to the egress P4 block
     */
    output wire [DATA_WIDTH-1:0]      m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]      m_axis_tkeep,
    output wire                       m_axis_tvalid,
    input  wire                       m_axis_tready,
    output wire                       m_axis_tlast,
    output wire [USER_WIDTH-1:0]      m_axis_tuser,   // metadata of the departing frame

    // High: the queue may lock its head and send it; low: no new head is
    // locked (a frame already locked is still sent). Tie high, or drive it
    // from a pacer to shape the departure rate.
    input  wire                       departure_enable,

    // Current time in ns (the clock of the vectors' t_ns); non-decreasing
    input  wire [TIME_WIDTH-1:0]      now,

    /*
     * AXI4-Lite configuration (olaf_queue_regs.v has the register map)
     */
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axil_awaddr,
    input  wire [2:0]                 s_axil_awprot,
    input  wire                       s_axil_awvalid,
    output wire                       s_axil_awready,
    input  wire [31:0]                s_axil_wdata,
    input  wire [3:0]                 s_axil_wstrb,
    input  wire                       s_axil_wvalid,
    output wire                       s_axil_wready,
    output wire [1:0]                 s_axil_bresp,
    output wire                       s_axil_bvalid,
    input  wire                       s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axil_araddr,
    input  wire [2:0]                 s_axil_arprot,
    input  wire                       s_axil_arvalid,
    output wire                       s_axil_arready,
    output wire [31:0]                s_axil_rdata,
    output wire [1:0]                 s_axil_rresp,
    output wire                       s_axil_rvalid,
    input  wire                       s_axil_rready,

    /*
     * Queue status for the egress P4 block (paper §5; ACK fields)
     */
    output wire [23:0]                status_queue_util,       // Q_n: ceil(occupied segments / K), a departing head included
    output wire [15:0]                status_active_clusters,  // clusters with an update within the window (2 cycles late)
    output wire [23:0]                status_queue_size,       // Q_max: floor(QUEUE_SIZE / K)
    output wire                       status_oversize,         // pulse: a frame longer than a segment was cut

    /*
     * Event side band, one cycle after the event (for counters and tests)
     */
    output wire                       m_decision_valid,        // a frame was decided (3 cycles after its first beat)
    output wire [2:0]                 m_decision,              // decision code (see above)
    output wire [SEG_WIDTH-1:0]       m_decision_segment,      // segment written; 0 for a drop
    output wire [15:0]                m_decision_cluster_id,   // the frame's tuser cluster_id
    output wire [15:0]                m_decision_chunk,        // the frame's Olaf chunk field (frame bytes 46..47)
    output wire                       m_decision_update,       // the frame's tuser update_valid
    output wire                       m_decision_chunk_error,  // an update with num_chunks != K or chunk >= K (queued as plain traffic)
    output wire                       m_lock_valid,            // the head was locked for departure
    output wire [SEG_WIDTH-1:0]       m_lock_segment,          // the locked segment
    output wire                       m_release_valid,         // the head's last beat left; its segment is free
    output wire [SEG_WIDTH-1:0]       m_release_segment,       // the freed segment (to the tail of available_mem_addrs)
    output wire [15:0]                m_release_cluster_id     // cluster_id of the departed frame
);

localparam LEN_WIDTH = $clog2(BEATS_PER_SEGMENT + 1);
localparam QS_WIDTH = $clog2(SEGMENTS + 1);
localparam CL_WIDTH = NUM_CLUSTERS > 1 ? $clog2(NUM_CLUSTERS) : 1;
localparam CK_WIDTH = $clog2(MAX_CHUNKS + 1);

// Olaf update header, protocol version 2 (olaf.constants; drift-checked by
// verilog_queue/tb/olaf_queue/test_rtl_constants.py)
localparam UPDATE_HEADER_LEN = 30;  // bytes before the first gradient element
localparam CHUNK_OFFSET = 4;        // chunk (uint16), then num_chunks (uint16)
localparam COUNT_OFFSET = 16;       // count (uint16), reward_sum (int32), gen_ts (uint64)

// check configuration
initial begin
    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: DATA_WIDTH must be 8 * KEEP_WIDTH (instance %m)");
        $finish;
    end

    if (USER_WIDTH != 145) begin
        $error("Error: USER_WIDTH must be 145, the Olaf tuser layout (instance %m)");
        $finish;
    end

    if (GRAD_WIDTH % 8 != 0 || DATA_WIDTH % GRAD_WIDTH != 0) begin
        $error("Error: GRAD_WIDTH must be a multiple of 8 that divides DATA_WIDTH (instance %m)");
        $finish;
    end

    if ((OLAF_OFFSET + UPDATE_HEADER_LEN) % (GRAD_WIDTH / 8) != 0 || OLAF_OFFSET < 2) begin
        $error("Error: OLAF_OFFSET must align the gradients (byte OLAF_OFFSET+30) to GRAD_WIDTH (instance %m)");
        $finish;
    end

    if (OLAF_OFFSET + CHUNK_OFFSET + 4 > KEEP_WIDTH) begin
        $error("Error: chunk and num_chunks (frame bytes OLAF_OFFSET+4 .. +7) must be in the first beat (instance %m)");
        $finish;
    end

    if (MAX_CHUNKS < 1 || MAX_CHUNKS > 65535) begin
        $error("Error: MAX_CHUNKS must be in 1..65535 (instance %m)");
        $finish;
    end

    if (SEGMENTS < 1 || SEGMENTS >= (1 << 24)) begin
        $error("Error: SEGMENTS must be in 1 .. 2^24-1 (instance %m)");
        $finish;
    end

    if (BEATS_PER_SEGMENT < 2 || BEATS_PER_SEGMENT * KEEP_WIDTH < OLAF_OFFSET + UPDATE_HEADER_LEN) begin
        $error("Error: a segment must hold at least two beats and the Olaf header (instance %m)");
        $finish;
    end

    if (NUM_CLUSTERS < 1 || NUM_CLUSTERS > 65535) begin
        $error("Error: NUM_CLUSTERS must be in 1..65535 (instance %m)");
        $finish;
    end

    if (TIME_WIDTH < 1 || TIME_WIDTH > 64) begin
        $error("Error: TIME_WIDTH must be in 1..64 (instance %m)");
        $finish;
    end

    if (SEG_WIDTH != (SEGMENTS > 1 ? $clog2(SEGMENTS) : 1)) begin
        $error("Error: SEG_WIDTH is derived from SEGMENTS; do not set it (instance %m)");
        $finish;
    end
end

/*
 * Configuration registers
 */
wire                cfg_reward_filter_en;
wire                cfg_fifo_mode;
wire [30:0]         cfg_reward_threshold;
wire [QS_WIDTH-1:0] cfg_queue_size;
wire [63:0]         cfg_activity_window;
wire [CK_WIDTH-1:0] cfg_num_chunks;
wire [23:0]         status_occupancy;
wire                ctrl_idle;

olaf_queue_regs #(
    .SEGMENTS(SEGMENTS),
    .NUM_CLUSTERS(NUM_CLUSTERS),
    .BEATS_PER_SEGMENT(BEATS_PER_SEGMENT),
    .MAX_CHUNKS(MAX_CHUNKS),
    .AXIL_ADDR_WIDTH(AXIL_ADDR_WIDTH),
    .ACTIVITY_WINDOW_RESET(ACTIVITY_WINDOW_RESET),
    .QS_WIDTH(QS_WIDTH),
    .CK_WIDTH(CK_WIDTH)
)
regs_inst (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(s_axil_awaddr),
    .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata),
    .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid),
    .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid),
    .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata),
    .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .cfg_reward_filter_en(cfg_reward_filter_en),
    .cfg_fifo_mode(cfg_fifo_mode),
    .cfg_reward_threshold(cfg_reward_threshold),
    .cfg_queue_size(cfg_queue_size),
    .cfg_activity_window(cfg_activity_window),
    .cfg_num_chunks(cfg_num_chunks),
    .status_queue_size(status_queue_size),
    .status_queue_util(status_queue_util),
    .status_active_clusters(status_active_clusters),
    .status_occupancy(status_occupancy),
    .ctrl_idle(ctrl_idle),
    .chunk_error(m_decision_valid && m_decision_chunk_error)
);

/*
 * Input pipeline
 */
wire                  a_first_valid;
wire [USER_WIDTH-1:0] a_user;
wire [TIME_WIDTH-1:0] a_time;
wire [15:0]           a_chunk;
wire [15:0]           a_num_chunks;
wire                  a_chunk_present;

wire                  dec_write;
wire                  dec_merge;
wire [SEG_WIDTH-1:0]  dec_seg;
wire [LEN_WIDTH-1:0]  dec_owner_len;
wire [SEG_WIDTH-1:0]  dec_q_seg;
wire                  dec_q_hit;

wire                  len_valid;
wire [SEG_WIDTH-1:0]  len_seg;
wire [LEN_WIDTH-1:0]  len_beats;
wire [KEEP_WIDTH-1:0] len_keep;

wire [SEGMENTS-1:0]   seg_busy;

wire                  wr_en;
wire [SEG_WIDTH-1:0]  wr_seg;
wire [LEN_WIDTH-1:0]  wr_beat;
wire [DATA_WIDTH-1:0] wr_data;
wire                  merge_rd_en;
wire [SEG_WIDTH-1:0]  merge_rd_seg;
wire [LEN_WIDTH-1:0]  merge_rd_beat;
wire [DATA_WIDTH-1:0] merge_rd_data;

olaf_queue_wr #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .SEGMENTS(SEGMENTS),
    .BEATS_PER_SEGMENT(BEATS_PER_SEGMENT),
    .GRAD_WIDTH(GRAD_WIDTH),
    .OLAF_OFFSET(OLAF_OFFSET),
    .UPDATE_HEADER_LEN(UPDATE_HEADER_LEN),
    .CHUNK_OFFSET(CHUNK_OFFSET),
    .TIME_WIDTH(TIME_WIDTH),
    .SEG_WIDTH(SEG_WIDTH),
    .LEN_WIDTH(LEN_WIDTH)
)
wr_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(s_axis_tdata),
    .s_axis_tkeep(s_axis_tkeep),
    .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready),
    .s_axis_tlast(s_axis_tlast),
    .s_axis_tuser(s_axis_tuser),
    .now(now),
    .a_first_valid(a_first_valid),
    .a_user(a_user),
    .a_time(a_time),
    .a_chunk(a_chunk),
    .a_num_chunks(a_num_chunks),
    .a_chunk_present(a_chunk_present),
    .dec_write(dec_write),
    .dec_merge(dec_merge),
    .dec_seg(dec_seg),
    .dec_owner_len(dec_owner_len),
    .dec_q_seg(dec_q_seg),
    .dec_q_hit(dec_q_hit),
    .len_valid(len_valid),
    .len_seg(len_seg),
    .len_beats(len_beats),
    .len_keep(len_keep),
    .seg_busy(seg_busy),
    .mem_wr_en(wr_en),
    .mem_wr_seg(wr_seg),
    .mem_wr_beat(wr_beat),
    .mem_wr_data(wr_data),
    .mem_rd_en(merge_rd_en),
    .mem_rd_seg(merge_rd_seg),
    .mem_rd_beat(merge_rd_beat),
    .mem_rd_data(merge_rd_data),
    .status_oversize(status_oversize)
);

/*
 * Segment memory: the merge path and the departure path each have a read
 * port, so that neither waits for the other
 */
wire                  out_rd_en;
wire [SEG_WIDTH-1:0]  out_rd_seg;
wire [LEN_WIDTH-1:0]  out_rd_beat;
wire [DATA_WIDTH-1:0] out_rd_data;

olaf_queue_mem #(
    .DATA_WIDTH(DATA_WIDTH),
    .SEGMENTS(SEGMENTS),
    .BEATS_PER_SEGMENT(BEATS_PER_SEGMENT),
    .SEG_WIDTH(SEG_WIDTH),
    .BEAT_WIDTH(LEN_WIDTH),
    .XILINX_RAM_STYLE(XILINX_RAM_STYLE)
)
mem_inst (
    .clk(clk),
    .wr_en(wr_en),
    .wr_seg(wr_seg),
    .wr_beat(wr_beat),
    .wr_data(wr_data),
    .rd_a_en(merge_rd_en),
    .rd_a_seg(merge_rd_seg),
    .rd_a_beat(merge_rd_beat),
    .rd_a_data(merge_rd_data),
    .rd_b_en(out_rd_en),
    .rd_b_seg(out_rd_seg),
    .rd_b_beat(out_rd_beat),
    .rd_b_data(out_rd_data)
);

/*
 * Bookkeeping and decisions
 */
wire                  lock_fire;
wire [SEG_WIDTH-1:0]  head_seg;
wire [LEN_WIDTH-1:0]  head_len;
wire                  locked_update;
wire                  locked_merged;
wire [15:0]           locked_cluster_id;
wire [15:0]           locked_worker_id;
wire [15:0]           locked_count;
wire [31:0]           locked_reward_sum;
wire [63:0]           locked_gen_ts;
wire [KEEP_WIDTH-1:0] locked_keep;
wire                  release_head;

wire                  seen_valid;
wire [CL_WIDTH-1:0]   seen_cluster;
wire [TIME_WIDTH-1:0] seen_time;

olaf_queue_ctrl #(
    .SEGMENTS(SEGMENTS),
    .BEATS_PER_SEGMENT(BEATS_PER_SEGMENT),
    .NUM_CLUSTERS(NUM_CLUSTERS),
    .MAX_CHUNKS(MAX_CHUNKS),
    .KEEP_WIDTH(KEEP_WIDTH),
    .TIME_WIDTH(TIME_WIDTH),
    .SEG_WIDTH(SEG_WIDTH),
    .CL_WIDTH(CL_WIDTH),
    .LEN_WIDTH(LEN_WIDTH),
    .QS_WIDTH(QS_WIDTH),
    .CK_WIDTH(CK_WIDTH),
    .XILINX_KEY_RAM_STYLE(XILINX_KEY_RAM_STYLE)
)
ctrl_inst (
    .clk(clk),
    .rst(rst),
    .a_valid(a_first_valid),
    .a_update(a_user[0]),
    .a_cluster_id(a_user[16:1]),
    .a_worker_id(a_user[32:17]),
    .a_count(a_user[48:33]),
    .a_reward_sum(a_user[80:49]),
    .a_gen_ts(a_user[144:81]),
    .a_time(a_time),
    .a_chunk(a_chunk),
    .a_num_chunks(a_num_chunks),
    .a_chunk_present(a_chunk_present),
    .cfg_reward_filter_en(cfg_reward_filter_en),
    .cfg_reward_threshold(cfg_reward_threshold),
    .cfg_queue_size(cfg_queue_size),
    .cfg_fifo_mode(cfg_fifo_mode),
    .cfg_num_chunks(cfg_num_chunks),
    .c_write(dec_write),
    .c_merge(dec_merge),
    .c_seg(dec_seg),
    .c_owner_len(dec_owner_len),
    .c_q_seg(dec_q_seg),
    .c_q_hit(dec_q_hit),
    .len_valid(len_valid),
    .len_seg(len_seg),
    .len_beats(len_beats),
    .len_keep(len_keep),
    .departure_enable(departure_enable),
    .release_head(release_head),
    .lock_fire(lock_fire),
    .head_seg(head_seg),
    .head_len(head_len),
    .locked_update(locked_update),
    .locked_merged(locked_merged),
    .locked_cluster_id(locked_cluster_id),
    .locked_worker_id(locked_worker_id),
    .locked_count(locked_count),
    .locked_reward_sum(locked_reward_sum),
    .locked_gen_ts(locked_gen_ts),
    .locked_keep(locked_keep),
    .seen_valid(seen_valid),
    .seen_cluster(seen_cluster),
    .seen_time(seen_time),
    .status_queue_util(status_queue_util),
    .status_occupancy(status_occupancy),
    .ctrl_idle(ctrl_idle),
    .m_decision_valid(m_decision_valid),
    .m_decision(m_decision),
    .m_decision_segment(m_decision_segment),
    .m_decision_cluster_id(m_decision_cluster_id),
    .m_decision_chunk(m_decision_chunk),
    .m_decision_update(m_decision_update),
    .m_decision_chunk_error(m_decision_chunk_error),
    .m_lock_valid(m_lock_valid),
    .m_lock_segment(m_lock_segment),
    .m_release_valid(m_release_valid),
    .m_release_segment(m_release_segment),
    .m_release_cluster_id(m_release_cluster_id)
);

/*
 * Departure engine
 */
olaf_queue_rd #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .SEGMENTS(SEGMENTS),
    .BEATS_PER_SEGMENT(BEATS_PER_SEGMENT),
    .OLAF_OFFSET(OLAF_OFFSET),
    .COUNT_OFFSET(COUNT_OFFSET),
    .SEG_WIDTH(SEG_WIDTH),
    .LEN_WIDTH(LEN_WIDTH)
)
rd_inst (
    .clk(clk),
    .rst(rst),
    .lock_fire(lock_fire),
    .head_seg(head_seg),
    .head_len(head_len),
    .locked_update(locked_update),
    .locked_merged(locked_merged),
    .locked_cluster_id(locked_cluster_id),
    .locked_worker_id(locked_worker_id),
    .locked_count(locked_count),
    .locked_reward_sum(locked_reward_sum),
    .locked_gen_ts(locked_gen_ts),
    .locked_keep(locked_keep),
    .release_head(release_head),
    .seg_busy(seg_busy),
    .mem_rd_en(out_rd_en),
    .mem_rd_seg(out_rd_seg),
    .mem_rd_beat(out_rd_beat),
    .mem_rd_data(out_rd_data),
    .m_axis_tdata(m_axis_tdata),
    .m_axis_tkeep(m_axis_tkeep),
    .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready),
    .m_axis_tlast(m_axis_tlast),
    .m_axis_tuser(m_axis_tuser)
);

/*
 * Active clusters
 */
olaf_queue_activity #(
    .NUM_CLUSTERS(NUM_CLUSTERS),
    .TIME_WIDTH(TIME_WIDTH),
    .CL_WIDTH(CL_WIDTH)
)
activity_inst (
    .clk(clk),
    .rst(rst),
    .now(now),
    .window(cfg_activity_window[TIME_WIDTH-1:0]),
    .seen_valid(seen_valid),
    .seen_cluster(seen_cluster),
    .seen_time(seen_time),
    .status_active_clusters(status_active_clusters)
);

`ifndef SYNTHESIS
/*
 * Invariant (simulation only): no beat of a segment is written from the
 * departure engine's first read of it until its release
 */
reg                 dep_active;
reg [SEG_WIDTH-1:0] dep_seg;

always @(posedge clk) begin
    if (out_rd_en && out_rd_beat == 0) begin
        dep_active <= 1'b1;
        dep_seg <= out_rd_seg;
    end else if (release_head) begin
        dep_active <= 1'b0;
    end
    if (rst) begin
        dep_active <= 1'b0;
    end else if (wr_en && ((dep_active && wr_seg == dep_seg) || (out_rd_en && out_rd_beat == 0 && wr_seg == out_rd_seg))) begin
        $error("olaf_queue: segment %0d written while it departs", wr_seg);
    end
end
`endif

endmodule

`resetall
