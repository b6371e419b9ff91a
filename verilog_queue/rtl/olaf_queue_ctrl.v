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
 * Keys. With K chunks per update (cfg_num_chunks, 1..MAX_CHUNKS) the queue
 * is keyed by (cluster, chunk) (olaf/queue_model.py "Keys and chunks"). The
 * model numbers key cluster*K + chunk; here the key table is addressed by
 * {cluster, chunk} = cluster * 2^CK_BITS + chunk (CK_BITS = clog2(MAX_CHUNKS)),
 * the same key without a multiplier (chunk < K <= 2^CK_BITS). The key table
 * has NUM_CLUSTERS * 2^CK_BITS entries.
 *
 * Structures (paper §4 "Memory Organization", §12.1; olaf/queue_model.py):
 *
 *   available_mem_addrs  ring of free segment addresses; write_ptr takes the
 *                        next one for an APPEND, append_available_addr puts a
 *                        departed segment at its tail. Starts as 0..SEGMENTS-1.
 *   out_mem_addrs        ring of occupied segments in departure order;
 *                        append_out_addr adds an APPENDed segment at the tail,
 *                        read_ptr names the head.
 *   key_table            block RAM, one KT_WIDTH-bit word per key:
 *                        {segment [SEG_WIDTH], replace flag [1], Worker_ID [16]}
 *                        = cluster_status (the segment of the key's waiting,
 *                        unlocked update) and replace_status. No valid bit:
 *   seg_in_status        per segment (flip-flops): the segment is the waiting,
 *                        unlocked update of key seg_key[segment]. Set by a
 *                        tracked APPEND (which also writes the key's word),
 *                        cleared when the segment is locked and at reset.
 *                        A key's entry is live iff seg_in_status[entry.segment]
 *                        and seg_key[entry.segment] == key: a tracked APPEND
 *                        into segment s for key k writes k's word, and k's word
 *                        is rewritten with another segment only by an APPEND,
 *                        which happens only when k's entry is not live. So
 *                        locking a segment (and reset) invalidates its key's
 *                        entry without writing the RAM, which has one write
 *                        port (stage C) and one read port (stage A).
 *   locked / locked_seg  the head segment locked for departure. It is not in
 *                        cluster_status any more, so a key can hold two
 *                        segments: the locked head and a newer one (§12.1
 *                        "Handling concurrency"; the paper's cluster_head is
 *                        our locked head, its cluster_tail our cluster_status).
 *   segment metadata     per segment: key, cluster, Worker_ID, count,
 *                        reward_sum, gen_ts, frame length; updated in place by
 *                        AGGREGATE/REPLACE (position inheritance).
 *
 * Decision pipeline for a frame whose first beat is at stage A (the write
 * pipeline's input register), no stalls:
 *
 *   A  snapshot of the configuration; chunk check; T * n.count; the key
 *      table read is issued with the frame's key
 *   B  the key's word (from the RAM, or forwarded, see below); is it live;
 *      the waiting update's count and reward; reward-filter products
 *   C  decide (codes as olaf.queue_model.Decision), update the state and
 *      write the key's word
 *
 * Hazard (back-to-back updates of one key at one beat per clock). The key
 * table is read at A and written at C, two cycles later. Update frames are
 * at least two beats long (the Olaf header ends at frame byte 72) and
 * olaf_queue_wr keeps a malformed one-beat update two cycles apart from the
 * next frame, so the first beats of two update frames n, n+1 are at least
 * two cycles apart: n+1 is at A no earlier than the cycle in which n is at C.
 * In that cycle the RAM read returns the word before n's write; the write
 * (address and data) is compared with the read address and forwarded into
 * stage B (kt_fwd). From the next cycle on the RAM holds n's word. Frames
 * between them are non-update frames, which neither read nor write keys.
 * Between B and C the word cannot change (no update frame is at C then);
 * only a lock can take the segment away, and C re-reads seg_in_status.
 *
 * Status (paper §5, in updates): status_queue_util = ceil(occupancy / K),
 * kept without a divider as a quotient util_q and a slack util_slack =
 * util_q * K - occupancy in 0..K-1, stepped with every APPEND and release.
 * K may change only while the queue is idle (ctrl_idle: empty, no first beat
 * at A, B or C; olaf_queue_regs refuses the write otherwise), when the pair
 * is (0, 0) for every K.
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
    // Most chunks per update K (the key table holds NUM_CLUSTERS * 2^clog2(MAX_CHUNKS) keys)
    parameter MAX_CHUNKS = 1,
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
    parameter QS_WIDTH = $clog2(SEGMENTS + 1),
    // Width of K (1 .. MAX_CHUNKS)
    parameter CK_WIDTH = $clog2(MAX_CHUNKS + 1),
    // AMD/Xilinx RAM_STYLE of the key table
    /* verilator lint_off UNUSEDPARAM */
    parameter XILINX_KEY_RAM_STYLE = "block"
    /* verilator lint_on UNUSEDPARAM */
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
    input  wire [15:0]           a_chunk,        // Olaf header chunk (from the first beat)
    input  wire [15:0]           a_num_chunks,   // Olaf header num_chunks
    input  wire                  a_chunk_present, // the first beat covers both fields

    /*
     * Configuration (sampled at stage A for each frame)
     */
    input  wire                  cfg_reward_filter_en,
    input  wire [30:0]           cfg_reward_threshold,
    input  wire [QS_WIDTH-1:0]   cfg_queue_size,
    input  wire                  cfg_fifo_mode,  // every frame APPENDs or is dropped (FIFO baseline)
    input  wire [CK_WIDTH-1:0]   cfg_num_chunks, // K; changes only while ctrl_idle

    /*
     * Stage C decision, for the write pipeline (valid while the frame's
     * first beat is at its stage C)
     */
    output wire                  c_write,        // the frame's beats are written (APPEND, REPLACE, AGGREGATE)
    output wire                  c_merge,        // AGGREGATE: beats are added to the waiting segment
    output wire [SEG_WIDTH-1:0]  c_seg,          // segment written
    output wire [LEN_WIDTH-1:0]  c_owner_len,    // AGGREGATE: length of the waiting frame in beats
    output reg  [SEG_WIDTH-1:0]  c_q_seg,        // waiting segment of the frame's key as seen at stage B
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
    output wire [23:0]           status_queue_util,      // ceil(occupancy / K), updates
    output wire [23:0]           status_occupancy,       // occupied segments
    output wire                  ctrl_idle,              // empty and no first beat at A, B, C: K may change
    output reg                   m_decision_valid,
    output reg  [2:0]            m_decision,
    output reg  [SEG_WIDTH-1:0]  m_decision_segment,
    output reg  [15:0]           m_decision_cluster_id,
    output reg  [15:0]           m_decision_chunk,
    output reg                   m_decision_update,
    output reg                   m_decision_chunk_error,
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
localparam [CK_WIDTH-1:0] CK_ZERO = {CK_WIDTH{1'b0}};
localparam [CK_WIDTH-1:0] CK_ONE = {{CK_WIDTH-1{1'b0}}, 1'b1};

// key table: {cluster, chunk}
localparam CK_BITS = MAX_CHUNKS > 1 ? $clog2(MAX_CHUNKS) : 0;
localparam KEYS = NUM_CLUSTERS << CK_BITS;
localparam KEY_WIDTH = KEYS > 1 ? $clog2(KEYS) : 1;
localparam KT_WIDTH = SEG_WIDTH + 1 + 16;
// segment addresses beyond SEGMENTS-1 exist when SEGMENTS is not a power of two
localparam SEG_POW2 = (1 << SEG_WIDTH) == SEGMENTS;

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

    if (MAX_CHUNKS < 1 || MAX_CHUNKS > 65535 || KEYS > (1 << 24)) begin
        $error("Error: MAX_CHUNKS must be in 1..65535 and NUM_CLUSTERS * 2^clog2(MAX_CHUNKS) at most 2^24 (instance %m)");
        $finish;
    end
end

function [SEG_WIDTH-1:0] ring_next(input [SEG_WIDTH-1:0] p);
    ring_next = (p == LAST_SEG) ? {SEG_WIDTH{1'b0}} : p + 1'b1;
endfunction

function seg_exists(input [SEG_WIDTH-1:0] s);
    /* verilator lint_off UNUSEDSIGNAL */
    reg [31:0] w;
    /* verilator lint_on UNUSEDSIGNAL */
    begin
        w = {{32-SEG_WIDTH{1'b0}}, s};
        seg_exists = SEG_POW2 || w < SEGMENTS;
    end
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
reg [QS_WIDTH-1:0]  util_q;
reg [CK_WIDTH-1:0]  util_slack;
reg                 locked;
reg [SEG_WIDTH-1:0] locked_seg;

(* ram_style = XILINX_KEY_RAM_STYLE *)
reg [KT_WIDTH-1:0]  key_table [0:KEYS-1];

reg [SEGMENTS-1:0]   seg_in_status;
reg [SEGMENTS-1:0]   seg_update;
reg [SEGMENTS-1:0]   seg_merged;
reg [KEY_WIDTH-1:0]  seg_key [0:SEGMENTS-1];
reg [15:0]           seg_cluster_id [0:SEGMENTS-1];
reg [15:0]           seg_worker_id [0:SEGMENTS-1];
reg [15:0]           seg_count [0:SEGMENTS-1];
reg [31:0]           seg_reward_sum [0:SEGMENTS-1];
reg [63:0]           seg_gen_ts [0:SEGMENTS-1];
reg [LEN_WIDTH-1:0]  seg_len [0:SEGMENTS-1];
reg [KEEP_WIDTH-1:0] seg_keep [0:SEGMENTS-1];

/*
 * Stage A: chunk check and key
 */
wire [15:0] k16 = {{16-CK_WIDTH{1'b0}}, cfg_num_chunks};
wire a_in_range = {16'd0, a_cluster_id} < NUM_CLUSTERS;
wire a_chunk_ok = a_chunk_present && a_num_chunks == k16 && a_chunk < k16;
wire a_seen = a_update && a_in_range && a_chunk_ok;  // an Olaf update of a known cluster and chunk
wire a_tracked = a_seen && !cfg_fifo_mode;            // ... decided by the OlafQueue rules
wire a_chunk_error = a_update && !a_chunk_ok;

// {cluster, chunk}; the high bits of both are zero for a tracked frame
/* verilator lint_off UNUSEDSIGNAL */
wire [31:0] a_key_w = ({16'd0, a_cluster_id} << CK_BITS) | {16'd0, a_chunk};
/* verilator lint_on UNUSEDSIGNAL */
wire [KEY_WIDTH-1:0] a_key = a_key_w[KEY_WIDTH-1:0];

/*
 * Stages A -> B -> C: the frame's metadata and its configuration snapshot
 */
localparam FRAME_WIDTH = 5 + QS_WIDTH + KEY_WIDTH + 4 * 16 + 32 + 64 + TIME_WIDTH;

wire [FRAME_WIDTH-1:0] a_frame = {a_seen, a_tracked, a_chunk_error, cfg_reward_filter_en, cfg_queue_size,
                                  a_update, a_key, a_chunk, a_cluster_id, a_worker_id, a_count, a_reward_sum,
                                  a_gen_ts, a_time};

reg                   b_valid;
reg [FRAME_WIDTH-1:0] b_frame;
reg                   c_valid_reg;
reg [FRAME_WIDTH-1:0] c_frame;

// stage B looks at the key, count and reward only
localparam F_REWARD = TIME_WIDTH + 64;
localparam F_COUNT = F_REWARD + 32;
localparam F_KEY = F_COUNT + 4 * 16;

wire                 b_tracked = b_frame[FRAME_WIDTH-2];
wire [KEY_WIDTH-1:0] b_key = b_frame[F_KEY +: KEY_WIDTH];
wire [15:0]          b_count = b_frame[F_COUNT +: 16];
wire [31:0]          b_reward_sum = b_frame[F_REWARD +: 32];

wire                  c_seen;
wire                  c_tracked;
wire                  c_chunk_error;
wire                  c_filter_en;
wire [QS_WIDTH-1:0]   c_queue_size;
wire                  c_update;
wire [KEY_WIDTH-1:0]  c_key;
wire [15:0]           c_chunk;
wire [15:0]           c_cluster_id;
wire [15:0]           c_worker_id;
wire [15:0]           c_count;
wire [31:0]           c_reward_sum;
wire [63:0]           c_gen_ts;
wire [TIME_WIDTH-1:0] c_time;

assign {c_seen, c_tracked, c_chunk_error, c_filter_en, c_queue_size, c_update, c_key, c_chunk, c_cluster_id,
        c_worker_id, c_count, c_reward_sum, c_gen_ts, c_time} = c_frame;

/*
 * Key table: read at A, written at C, the C write forwarded to B
 */
wire                kt_we;
wire [KT_WIDTH-1:0] kt_wd;
reg  [KT_WIDTH-1:0] kt_q;
reg                 kt_fwd;
reg  [KT_WIDTH-1:0] kt_fwd_data;

always @(posedge clk) begin
    if (kt_we) begin
        key_table[c_key] <= kt_wd;
    end
end

always @(posedge clk) begin
    if (a_valid) begin
        kt_q <= key_table[a_key];
    end
    kt_fwd <= kt_we && c_key == a_key;
    kt_fwd_data <= kt_wd;
end

wire [KT_WIDTH-1:0]  b_entry = kt_fwd ? kt_fwd_data : kt_q;
wire [SEG_WIDTH-1:0] b_q_seg = b_entry[KT_WIDTH-1 -: SEG_WIDTH];
wire                 b_q_flag = b_entry[16];
wire [15:0]          b_q_worker = b_entry[15:0];
wire                 b_q_valid = b_tracked && seg_exists(b_q_seg) && seg_in_status[b_q_seg]
                                 && seg_key[b_q_seg] == b_key;

reg        c_q_flag;
reg [15:0] c_q_worker;

always @(posedge clk) begin
    b_valid <= a_valid;
    b_frame <= a_frame;
    c_valid_reg <= b_valid;
    c_frame <= b_frame;
    c_q_seg <= b_q_seg;
    c_q_hit <= b_valid && b_q_valid;
    c_q_flag <= b_q_flag;
    c_q_worker <= b_q_worker;

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
// a lock in the cycle between B and C may have taken the waiting segment away
wire                 q_valid = c_q_hit && seg_in_status[c_q_seg];
wire [SEG_WIDTH-1:0] q_seg = c_q_seg;
wire                 append_ok = occupancy < c_queue_size;
wire                 same_worker = c_q_flag && c_q_worker == c_worker_id && c_count == 16'd1;
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

// the key's new word: its segment, replaceable by the new update's worker iff its count is 1
wire n_replaceable = c_count == 16'd1;
assign kt_we = c_write && c_tracked;
assign kt_wd = {c_seg, n_replaceable && !dec_aggregate, (n_replaceable && !dec_aggregate) ? c_worker_id : 16'd0};

// saturating sums of AGGREGATE (olaf.fixedpoint)
wire [16:0] count_sum = {1'b0, seg_count[q_seg]} + {1'b0, c_count};
wire [15:0] count_sat = count_sum[16] ? 16'hFFFF : count_sum[15:0];
wire [31:0] q_reward = seg_reward_sum[q_seg];
wire [31:0] reward_raw = q_reward + c_reward_sum;
wire        reward_ovf = (q_reward[31] == c_reward_sum[31]) && (reward_raw[31] != q_reward[31]);
wire [31:0] reward_sat = reward_ovf ? {q_reward[31], {31{!q_reward[31]}}} : reward_raw;
wire [63:0] gen_ts_max = seg_gen_ts[q_seg] > c_gen_ts ? seg_gen_ts[q_seg] : c_gen_ts;

/*
 * Departure: lock (L) and release (R)
 */
wire [SEG_WIDTH-1:0] cand = locked ? out_mem_addrs[ring_next(read_ptr)] : out_mem_addrs[read_ptr];

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
assign seen_cluster = c_cluster_id[CL_WIDTH-1:0];
assign seen_time = c_time;

assign status_queue_util = {{24-QS_WIDTH{1'b0}}, util_q};
assign status_occupancy = {{24-QS_WIDTH{1'b0}}, occupancy};
assign ctrl_idle = occupancy == QS_ZERO && !a_valid && !b_valid && !c_valid_reg;

/*
 * State update: E, then R, then L
 */
wire occ_inc = c_valid_reg && dec_append;
wire [CK_WIDTH-1:0] k_last = cfg_num_chunks - CK_ONE;
integer i;

always @(posedge clk) begin
    // E: the decision of the frame at stage C
    if (c_valid_reg) begin
        if (dec_append) begin
            write_ptr <= ring_next(write_ptr);
            out_mem_addrs[append_out_addr] <= new_seg;
            append_out_addr <= ring_next(append_out_addr);
            seg_in_status[new_seg] <= c_tracked;
            seg_key[new_seg] <= c_key;
            seg_update[new_seg] <= c_update;
            seg_merged[new_seg] <= 1'b0;
            seg_cluster_id[new_seg] <= c_cluster_id;
            seg_worker_id[new_seg] <= c_worker_id;
            seg_count[new_seg] <= c_count;
            seg_reward_sum[new_seg] <= c_reward_sum;
            seg_gen_ts[new_seg] <= c_gen_ts;
        end
        if (dec_replace) begin
            seg_merged[q_seg] <= 1'b0;
            seg_worker_id[q_seg] <= c_worker_id;
            seg_count[q_seg] <= c_count;
            seg_reward_sum[q_seg] <= c_reward_sum;
            seg_gen_ts[q_seg] <= c_gen_ts;
        end
        if (dec_aggregate) begin
            seg_merged[q_seg] <= 1'b1;
            seg_count[q_seg] <= count_sat;
            seg_reward_sum[q_seg] <= reward_sat;
            seg_gen_ts[q_seg] <= gen_ts_max;
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

    occupancy <= occupancy + (occ_inc ? QS_ONE : QS_ZERO) - (release_head ? QS_ONE : QS_ZERO);

    // status in updates: util_q * K - util_slack = occupancy
    if (occ_inc && !release_head) begin
        if (util_slack == CK_ZERO) begin
            util_q <= util_q + QS_ONE;
            util_slack <= k_last;
        end else begin
            util_slack <= util_slack - CK_ONE;
        end
    end else if (release_head && !occ_inc) begin
        if (util_slack == k_last) begin
            util_q <= util_q - QS_ONE;
            util_slack <= CK_ZERO;
        end else begin
            util_slack <= util_slack + CK_ONE;
        end
    end

    // L: lock the next head; its key's next update starts a new segment
    if (lock_fire) begin
        locked <= 1'b1;
        locked_seg <= cand;
        seg_in_status[cand] <= 1'b0;
    end

    if (rst) begin
        for (i = 0; i < SEGMENTS; i = i + 1) begin
            available_mem_addrs[i] <= i[SEG_WIDTH-1:0];
        end
        write_ptr <= {SEG_WIDTH{1'b0}};
        append_available_addr <= {SEG_WIDTH{1'b0}};
        read_ptr <= {SEG_WIDTH{1'b0}};
        append_out_addr <= {SEG_WIDTH{1'b0}};
        occupancy <= QS_ZERO;
        util_q <= QS_ZERO;
        util_slack <= CK_ZERO;
        seg_in_status <= {SEGMENTS{1'b0}};
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
    m_decision_chunk <= c_chunk;
    m_decision_update <= c_update;
    m_decision_chunk_error <= c_chunk_error;
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
        if ({{32-QS_WIDTH{1'b0}}, util_q} * {{32-CK_WIDTH{1'b0}}, cfg_num_chunks}
                - {{32-CK_WIDTH{1'b0}}, util_slack} != {{32-QS_WIDTH{1'b0}}, occupancy}
                || util_slack >= cfg_num_chunks) begin
            $error("olaf_queue_ctrl: status %0d updates, slack %0d, for %0d segments", util_q, util_slack, occupancy);
        end
        if (release_head && !locked) begin
            $error("olaf_queue_ctrl: release without a locked head");
        end
        if (b_valid && c_valid_reg && kt_we) begin
            $error("olaf_queue_ctrl: key table written while the next frame is at stage B");
        end
        if (c_valid_reg && q_valid && seg_key[q_seg] != c_key) begin
            $error("olaf_queue_ctrl: waiting segment %0d belongs to another key", q_seg);
        end
        if (c_valid_reg && q_valid && locked && q_seg == locked_seg) begin
            $error("olaf_queue_ctrl: decision on the locked head");
        end
    end
end
`endif

endmodule

`resetall
