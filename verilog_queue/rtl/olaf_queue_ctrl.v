/*
 * Olaf: OlafQueue bookkeeping and enqueue decision (paper §4, Alg. 1, §12.1).
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * The queue's control state and its enqueue decision, one frame per cycle
 * at most. Data beats never pass through here: olaf_queue_wr writes them to
 * the segment memory as this module decides, olaf_queue_rd sends them.
 *
 * Structures (paper §4 "Memory Organization", §12.1; olaf/queue_model.py):
 *
 *   available_mem_addrs  ring of free segment addresses; write_ptr takes the
 *                        next one for an APPEND, append_available_addr puts a
 *                        departed segment at its tail. Starts as 0..SEGMENTS-1.
 *   out_mem_addrs        ring of occupied segments in departure order;
 *                        append_out_addr adds an APPENDed segment at the tail,
 *                        read_ptr names the head.
 *   cluster_status       per cluster: valid bit and the segment of its waiting,
 *                        unlocked update.
 *   replace_status       per cluster: replace flag and Worker_ID.
 *   locked / locked_seg  the head segment locked for departure. It is not in
 *                        cluster_status any more, so a cluster can hold two
 *                        segments: the locked head and a newer one (§12.1
 *                        "Handling concurrency"; the paper's cluster_head is
 *                        our locked head, its cluster_tail our cluster_status).
 *   segment metadata     per segment: cluster, Worker_ID, count, reward_sum,
 *                        gen_ts, frame length; updated in place by
 *                        AGGREGATE/REPLACE (position inheritance).
 *
 * Decision pipeline for a frame whose first beat is at stage A (the write
 * pipeline's input register), no stalls:
 *
 *   A  snapshot of the configuration; T * n.count
 *   B  look up cluster_status, the waiting update's count and reward;
 *      reward-filter products
 *   C  decide (codes as olaf.queue_model.Decision) and update the state
 *
 * Update frames are at least two beats long (the Olaf header ends at frame
 * byte 68), so a frame's stage B never meets the stage C of the previous
 * update frame; olaf_queue_wr enforces the spacing for a malformed one-beat
 * update.
 *
 * Per cycle the events take effect in this order: the stage C decision (E),
 * then a release of the departing head (R), then a lock of the next head (L).
 * The decision sees the state before R and L of the same cycle; L sees the
 * occupancy before E. Each event is reported one cycle later on the
 * m_decision_*, m_release_* and m_lock_* side band.
 */
module olaf_queue_ctrl #
(
    // Physical segments
    parameter SEGMENTS = 8,
    // Beats per segment
    parameter BEATS_PER_SEGMENT = 24,
    // Number of clusters (cluster ids 0 .. NUM_CLUSTERS-1)
    parameter NUM_CLUSTERS = 9,
    // tkeep width of the data path
    parameter KEEP_WIDTH = 64,
    // Width of timestamps (ns)
    parameter TIME_WIDTH = 64,
    // Segment address width
    parameter SEG_WIDTH = SEGMENTS > 1 ? $clog2(SEGMENTS) : 1,
    // Cluster index width
    parameter CL_WIDTH = NUM_CLUSTERS > 1 ? $clog2(NUM_CLUSTERS) : 1,
    // Width of a frame length in beats (0 .. BEATS_PER_SEGMENT)
    parameter LEN_WIDTH = $clog2(BEATS_PER_SEGMENT + 1),
    // Width of the queue size (0 .. SEGMENTS)
    parameter QS_WIDTH = $clog2(SEGMENTS + 1)
)
(
    input  wire                  clk,
    input  wire                  rst,

    /*
     * Stage A: first beat of a frame (from the write pipeline's input register)
     */
    input  wire                  a_valid,        // a first beat is at stage A
    input  wire                  a_update,       // tuser update_valid
    input  wire [15:0]           a_cluster_id,
    input  wire [15:0]           a_worker_id,
    input  wire [15:0]           a_count,
    input  wire [31:0]           a_reward_sum,
    input  wire [63:0]           a_gen_ts,
    input  wire [TIME_WIDTH-1:0] a_time,         // arrival time (now when the beat was accepted)

    /*
     * Configuration (sampled at stage A for each frame)
     */
    input  wire                  cfg_reward_filter_en,
    input  wire [30:0]           cfg_reward_threshold,
    input  wire [QS_WIDTH-1:0]   cfg_queue_size,
    input  wire                  cfg_fifo_mode,  // every frame APPENDs or is dropped (FIFO baseline)

    /*
     * Stage C decision, for the write pipeline (valid while the frame's
     * first beat is at its stage C)
     */
    output wire                  c_write,        // the frame's beats are written (APPEND, REPLACE, AGGREGATE)
    output wire                  c_merge,        // AGGREGATE: beats are added to the waiting segment
    output wire [SEG_WIDTH-1:0]  c_seg,          // segment written
    output wire [LEN_WIDTH-1:0]  c_owner_len,    // AGGREGATE: length of the waiting frame in beats
    output reg  [SEG_WIDTH-1:0]  c_q_seg,        // waiting segment of the frame's cluster as seen at stage B
    output reg                   c_q_hit,        // c_q_seg is valid (the frame may write it)

    /*
     * Frame length report from the write pipeline (APPEND/REPLACE frames)
     */
    input  wire                  len_valid,
    input  wire [SEG_WIDTH-1:0]  len_seg,
    input  wire [LEN_WIDTH-1:0]  len_beats,
    input  wire [KEEP_WIDTH-1:0] len_keep,       // tkeep of the last beat

    /*
     * Departure engine
     */
    input  wire                  departure_enable, // may lock a new head
    input  wire                  release_head,     // the locked head's last beat leaves this cycle
    output wire                  lock_fire,        // a head is locked this cycle
    output wire [SEG_WIDTH-1:0]  head_seg,         // segment to read: the one locked now, else locked_seg
    output wire [LEN_WIDTH-1:0]  head_len,         // its length in beats
    output wire                  locked_update,    // the locked segment holds an Olaf update
    output wire                  locked_merged,    // ... into which an update was aggregated
    output wire [15:0]           locked_cluster_id,
    output wire [15:0]           locked_worker_id,
    output wire [15:0]           locked_count,
    output wire [31:0]           locked_reward_sum,
    output wire [63:0]           locked_gen_ts,
    output wire [KEEP_WIDTH-1:0] locked_keep,

    /*
     * Arrival of an update, for the activity counter
     */
    output wire                  seen_valid,
    output wire [CL_WIDTH-1:0]   seen_cluster,
    output wire [TIME_WIDTH-1:0] seen_time,

    /*
     * Status and event side band (registered)
     */
    output wire [23:0]           status_queue_util,
    output reg                   m_decision_valid,
    output reg  [2:0]            m_decision,
    output reg  [SEG_WIDTH-1:0]  m_decision_segment,
    output reg  [15:0]           m_decision_cluster_id,
    output reg                   m_decision_update,
    output reg                   m_lock_valid,
    output reg  [SEG_WIDTH-1:0]  m_lock_segment,
    output reg                   m_release_valid,
    output reg  [SEG_WIDTH-1:0]  m_release_segment,
    output reg  [15:0]           m_release_cluster_id
);

localparam [2:0] DEC_APPEND = 3'd0;
localparam [2:0] DEC_AGGREGATE = 3'd1;
localparam [2:0] DEC_REPLACE_WORKER = 3'd2;
localparam [2:0] DEC_REPLACE_REWARD = 3'd3;
localparam [2:0] DEC_DROP_REWARD = 3'd4;
localparam [2:0] DEC_DROP_FULL = 3'd5;

localparam [31:0] LAST_SEG_W = SEGMENTS - 1;
localparam [SEG_WIDTH-1:0] LAST_SEG = LAST_SEG_W[SEG_WIDTH-1:0];
localparam [QS_WIDTH-1:0] QS_ZERO = {QS_WIDTH{1'b0}};
localparam [QS_WIDTH-1:0] QS_ONE = {{QS_WIDTH-1{1'b0}}, 1'b1};

// check configuration
initial begin
    if (SEGMENTS < 1 || SEGMENTS >= (1 << 24)) begin
        $error("Error: SEGMENTS must be in 1 .. 2^24-1 (instance %m)");
        $finish;
    end

    if (NUM_CLUSTERS < 1 || NUM_CLUSTERS > 65535) begin
        $error("Error: NUM_CLUSTERS must be in 1..65535 (instance %m)");
        $finish;
    end
end

function [SEG_WIDTH-1:0] ring_next(input [SEG_WIDTH-1:0] p);
    ring_next = (p == LAST_SEG) ? {SEG_WIDTH{1'b0}} : p + 1'b1;
endfunction

/*
 * State
 */
reg [SEG_WIDTH-1:0] available_mem_addrs [0:SEGMENTS-1];
reg [SEG_WIDTH-1:0] out_mem_addrs [0:SEGMENTS-1];
reg [SEG_WIDTH-1:0] write_ptr;
reg [SEG_WIDTH-1:0] append_available_addr;
reg [SEG_WIDTH-1:0] read_ptr;
reg [SEG_WIDTH-1:0] append_out_addr;
reg [QS_WIDTH-1:0]  occupancy;
reg                 locked;
reg [SEG_WIDTH-1:0] locked_seg;

reg [NUM_CLUSTERS-1:0] cluster_valid;
reg [SEG_WIDTH-1:0]    cluster_seg [0:NUM_CLUSTERS-1];
reg [NUM_CLUSTERS-1:0] replace_flag;
reg [15:0]             replace_worker [0:NUM_CLUSTERS-1];

reg [SEGMENTS-1:0]   seg_update;
reg [SEGMENTS-1:0]   seg_tracked;
reg [SEGMENTS-1:0]   seg_merged;
reg [15:0]           seg_cluster_id [0:SEGMENTS-1];
reg [15:0]           seg_worker_id [0:SEGMENTS-1];
reg [15:0]           seg_count [0:SEGMENTS-1];
reg [31:0]           seg_reward_sum [0:SEGMENTS-1];
reg [63:0]           seg_gen_ts [0:SEGMENTS-1];
reg [LEN_WIDTH-1:0]  seg_len [0:SEGMENTS-1];
reg [KEEP_WIDTH-1:0] seg_keep [0:SEGMENTS-1];

/*
 * Stages A -> B -> C: the frame's metadata and its configuration snapshot
 */
localparam FRAME_WIDTH = 4 + QS_WIDTH + 3 * 16 + 32 + 64 + TIME_WIDTH;

wire a_in_range = {16'd0, a_cluster_id} < NUM_CLUSTERS;
wire a_seen = a_update && a_in_range;         // an Olaf update of a known cluster
wire a_tracked = a_seen && !cfg_fifo_mode;    // ... decided by the OlafQueue rules

wire [FRAME_WIDTH-1:0] a_frame = {a_seen, a_tracked, cfg_reward_filter_en, cfg_queue_size, a_update,
                                  a_cluster_id, a_worker_id, a_count, a_reward_sum, a_gen_ts, a_time};

reg                   b_valid;
reg [FRAME_WIDTH-1:0] b_frame;
reg                   c_valid_reg;
reg [FRAME_WIDTH-1:0] c_frame;

// stage B looks at the cluster, count and reward only
localparam F_REWARD = TIME_WIDTH + 64;
localparam F_COUNT = F_REWARD + 32;
localparam F_CLUSTER = F_COUNT + 32;

wire        b_tracked = b_frame[FRAME_WIDTH-2];
wire [15:0] b_count = b_frame[F_COUNT +: 16];
wire [31:0] b_reward_sum = b_frame[F_REWARD +: 32];

wire                  c_seen;
wire                  c_tracked;
wire                  c_filter_en;
wire [QS_WIDTH-1:0]   c_queue_size;
wire                  c_update;
wire [15:0]           c_cluster_id;
wire [15:0]           c_worker_id;
wire [15:0]           c_count;
wire [31:0]           c_reward_sum;
wire [63:0]           c_gen_ts;
wire [TIME_WIDTH-1:0] c_time;

assign {c_seen, c_tracked, c_filter_en, c_queue_size, c_update, c_cluster_id, c_worker_id, c_count,
        c_reward_sum, c_gen_ts, c_time} = c_frame;

wire [CL_WIDTH-1:0]  b_cl = b_frame[F_CLUSTER +: CL_WIDTH];
wire                 b_q_valid = b_tracked && cluster_valid[b_cl];
wire [SEG_WIDTH-1:0] b_q_seg = cluster_seg[b_cl];

always @(posedge clk) begin
    b_valid <= a_valid;
    b_frame <= a_frame;
    c_valid_reg <= b_valid;
    c_frame <= b_frame;
    c_q_seg <= b_q_seg;
    c_q_hit <= b_valid && b_q_valid;

    if (rst) begin
        b_valid <= 1'b0;
        c_valid_reg <= 1'b0;
        c_q_hit <= 1'b0;
    end
end

wire cmp_lower;
wire cmp_higher;

olaf_reward_cmp reward_cmp_inst (
    .clk(clk),
    .a_n_count(a_count),
    .a_threshold(cfg_reward_threshold),
    .b_n_reward(b_reward_sum),
    .b_n_count(b_count),
    .b_q_reward(seg_reward_sum[b_q_seg]),
    .b_q_count(seg_count[b_q_seg]),
    .c_lower(cmp_lower),
    .c_higher(cmp_higher)
);

/*
 * Stage C: the decision (Alg. 1 with reward filtering, queue_model._decide)
 */
wire [CL_WIDTH-1:0]  c_cl = c_cluster_id[CL_WIDTH-1:0];
// a lock in the cycle between B and C may have taken the waiting segment away
wire                 q_valid = c_tracked && cluster_valid[c_cl];
wire [SEG_WIDTH-1:0] q_seg = cluster_seg[c_cl];
wire                 append_ok = occupancy < c_queue_size;
wire                 same_worker = replace_flag[c_cl] && replace_worker[c_cl] == c_worker_id && c_count == 16'd1;
wire [SEG_WIDTH-1:0] new_seg = available_mem_addrs[write_ptr];

reg [2:0] decision;

always @* begin
    if (!q_valid) begin
        decision = append_ok ? DEC_APPEND : DEC_DROP_FULL;
    end else if (c_filter_en && cmp_lower) begin
        decision = DEC_DROP_REWARD;
    end else if (c_filter_en && cmp_higher) begin
        decision = DEC_REPLACE_REWARD;
    end else if (same_worker) begin
        decision = DEC_REPLACE_WORKER;
    end else begin
        decision = DEC_AGGREGATE;
    end
end

wire dec_append = decision == DEC_APPEND;
wire dec_aggregate = decision == DEC_AGGREGATE;
wire dec_replace = decision == DEC_REPLACE_WORKER || decision == DEC_REPLACE_REWARD;

assign c_write = c_valid_reg && (dec_append || dec_aggregate || dec_replace);
assign c_merge = c_valid_reg && dec_aggregate;
assign c_seg = dec_append ? new_seg : q_seg;
assign c_owner_len = seg_len[q_seg];

// saturating sums of AGGREGATE (olaf.fixedpoint)
wire [16:0] count_sum = {1'b0, seg_count[q_seg]} + {1'b0, c_count};
wire [15:0] count_sat = count_sum[16] ? 16'hFFFF : count_sum[15:0];
wire [31:0] q_reward = seg_reward_sum[q_seg];
wire [31:0] reward_raw = q_reward + c_reward_sum;
wire        reward_ovf = (q_reward[31] == c_reward_sum[31]) && (reward_raw[31] != q_reward[31]);
wire [31:0] reward_sat = reward_ovf ? {q_reward[31], {31{!q_reward[31]}}} : reward_raw;
wire [63:0] gen_ts_max = seg_gen_ts[q_seg] > c_gen_ts ? seg_gen_ts[q_seg] : c_gen_ts;
wire        n_replaceable = c_count == 16'd1;

/*
 * Departure: lock (L) and release (R)
 */
wire [SEG_WIDTH-1:0] cand = locked ? out_mem_addrs[ring_next(read_ptr)] : out_mem_addrs[read_ptr];
wire [CL_WIDTH-1:0]  cand_cl = seg_cluster_id[cand][CL_WIDTH-1:0];
wire                 cand_in_status = seg_tracked[cand] && cluster_valid[cand_cl] && cluster_seg[cand_cl] == cand;

assign lock_fire = departure_enable && (locked ? (release_head && occupancy != QS_ONE) : (occupancy != 0));
assign head_seg = lock_fire ? cand : locked_seg;
assign head_len = seg_len[head_seg];

assign locked_update = seg_update[locked_seg];
assign locked_merged = seg_merged[locked_seg];
assign locked_cluster_id = seg_cluster_id[locked_seg];
assign locked_worker_id = seg_worker_id[locked_seg];
assign locked_count = seg_count[locked_seg];
assign locked_reward_sum = seg_reward_sum[locked_seg];
assign locked_gen_ts = seg_gen_ts[locked_seg];
assign locked_keep = seg_keep[locked_seg];

assign seen_valid = c_valid_reg && c_seen;
assign seen_cluster = c_cl;
assign seen_time = c_time;

assign status_queue_util = {{24-QS_WIDTH{1'b0}}, occupancy};

/*
 * State update: E, then R, then L
 */
integer i;

always @(posedge clk) begin
    // E: the decision of the frame at stage C
    if (c_valid_reg) begin
        if (dec_append) begin
            write_ptr <= ring_next(write_ptr);
            out_mem_addrs[append_out_addr] <= new_seg;
            append_out_addr <= ring_next(append_out_addr);
            seg_update[new_seg] <= c_update;
            seg_tracked[new_seg] <= c_tracked;
            seg_merged[new_seg] <= 1'b0;
            seg_cluster_id[new_seg] <= c_cluster_id;
            seg_worker_id[new_seg] <= c_worker_id;
            seg_count[new_seg] <= c_count;
            seg_reward_sum[new_seg] <= c_reward_sum;
            seg_gen_ts[new_seg] <= c_gen_ts;
            if (c_tracked) begin
                cluster_valid[c_cl] <= 1'b1;
                cluster_seg[c_cl] <= new_seg;
                replace_flag[c_cl] <= n_replaceable;
                replace_worker[c_cl] <= n_replaceable ? c_worker_id : 16'd0;
            end
        end
        if (dec_replace) begin
            seg_merged[q_seg] <= 1'b0;
            seg_worker_id[q_seg] <= c_worker_id;
            seg_count[q_seg] <= c_count;
            seg_reward_sum[q_seg] <= c_reward_sum;
            seg_gen_ts[q_seg] <= c_gen_ts;
            replace_flag[c_cl] <= n_replaceable;
            replace_worker[c_cl] <= n_replaceable ? c_worker_id : 16'd0;
        end
        if (dec_aggregate) begin
            seg_merged[q_seg] <= 1'b1;
            seg_count[q_seg] <= count_sat;
            seg_reward_sum[q_seg] <= reward_sat;
            seg_gen_ts[q_seg] <= gen_ts_max;
            replace_flag[c_cl] <= 1'b0;
            replace_worker[c_cl] <= 16'd0;
        end
    end

    if (len_valid) begin
        seg_len[len_seg] <= len_beats;
        seg_keep[len_seg] <= len_keep;
    end

    // R: the locked head has left; its segment goes to the tail of available_mem_addrs
    if (release_head) begin
        available_mem_addrs[append_available_addr] <= locked_seg;
        append_available_addr <= ring_next(append_available_addr);
        read_ptr <= ring_next(read_ptr);
        locked <= 1'b0;
    end

    occupancy <= occupancy + (c_valid_reg && dec_append ? QS_ONE : QS_ZERO) - (release_head ? QS_ONE : QS_ZERO);

    // L: lock the next head; its cluster's next update starts a new segment
    if (lock_fire) begin
        locked <= 1'b1;
        locked_seg <= cand;
        if (cand_in_status) begin
            cluster_valid[cand_cl] <= 1'b0;
            replace_flag[cand_cl] <= 1'b0;
            replace_worker[cand_cl] <= 16'd0;
        end
    end

    if (rst) begin
        for (i = 0; i < SEGMENTS; i = i + 1) begin
            available_mem_addrs[i] <= i[SEG_WIDTH-1:0];
        end
        write_ptr <= {SEG_WIDTH{1'b0}};
        append_available_addr <= {SEG_WIDTH{1'b0}};
        read_ptr <= {SEG_WIDTH{1'b0}};
        append_out_addr <= {SEG_WIDTH{1'b0}};
        occupancy <= {QS_WIDTH{1'b0}};
        cluster_valid <= {NUM_CLUSTERS{1'b0}};
        replace_flag <= {NUM_CLUSTERS{1'b0}};
        seg_tracked <= {SEGMENTS{1'b0}};
        locked <= 1'b0;
        locked_seg <= {SEG_WIDTH{1'b0}};
    end
end

/*
 * Event side band
 */
always @(posedge clk) begin
    m_decision_valid <= c_valid_reg;
    m_decision <= decision;
    m_decision_segment <= (dec_append || dec_aggregate || dec_replace) ? c_seg : {SEG_WIDTH{1'b0}};
    m_decision_cluster_id <= c_cluster_id;
    m_decision_update <= c_update;
    m_lock_valid <= lock_fire;
    m_lock_segment <= cand;
    m_release_valid <= release_head;
    m_release_segment <= locked_seg;
    m_release_cluster_id <= seg_cluster_id[locked_seg];

    if (rst) begin
        m_decision_valid <= 1'b0;
        m_lock_valid <= 1'b0;
        m_release_valid <= 1'b0;
    end
end

`ifndef SYNTHESIS
/*
 * Invariants (simulation only)
 */
always @(posedge clk) begin
    if (!rst) begin
        if ({{32-QS_WIDTH{1'b0}}, occupancy} > SEGMENTS) begin
            $error("olaf_queue_ctrl: occupancy %0d exceeds SEGMENTS", occupancy);
        end
        if (release_head && !locked) begin
            $error("olaf_queue_ctrl: release without a locked head");
        end
        if (c_valid_reg && q_valid && !(c_q_hit && c_q_seg == q_seg)) begin
            $error("olaf_queue_ctrl: cluster_status changed between stages B and C");
        end
        if (c_valid_reg && dec_append && c_tracked && cluster_valid[c_cl]) begin
            $error("olaf_queue_ctrl: APPEND for a cluster that has a waiting segment");
        end
        if (lock_fire && seg_tracked[cand] && !cand_in_status) begin
            // a tracked segment stays in cluster_status until it is locked
            $error("olaf_queue_ctrl: locking a tracked segment that cluster_status lost");
        end
        if (c_valid_reg && q_valid && locked && q_seg == locked_seg) begin
            $error("olaf_queue_ctrl: decision on the locked head");
        end
    end
end
`endif

endmodule

`resetall
