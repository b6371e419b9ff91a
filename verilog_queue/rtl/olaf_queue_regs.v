/*
 * Olaf: AXI4-Lite configuration and status registers of the OlafQueue.
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Register map (32-bit registers, byte addresses; docs/rtl.md):
 *
 *   0x00 ID                 RO  0x4F4C4146 ("OLAF")
 *   0x04 CTRL               RW  bit 0 reward_filter_en, bit 1 fifo_mode; reset 0
 *   0x08 REWARD_THRESHOLD   RW  T in Q15.16 reward units, 0 .. 2^31-1; reset 0
 *   0x0C QUEUE_SIZE         RW  occupancy limit in segments, NUM_CHUNKS .. SEGMENTS; reset SEGMENTS
 *   0x10 WINDOW_LO          RW  activity window (ns), bits 31:0; a write commits
 *                               {WINDOW_HI as last written, this value}
 *   0x14 WINDOW_HI          RW  activity window, bits 63:32 (takes effect with
 *                               the next WINDOW_LO write); reads the value in force
 *   0x18 SEGMENTS           RO  parameter SEGMENTS
 *   0x1C NUM_CLUSTERS       RO  parameter NUM_CLUSTERS
 *   0x20 BEATS_PER_SEGMENT  RO  parameter BEATS_PER_SEGMENT
 *   0x24 QUEUE_UTIL         RO  status Q_n: ceil(occupied segments / NUM_CHUNKS), updates
 *   0x28 ACTIVE_CLUSTERS    RO  clusters active within the window
 *   0x2C NUM_CHUNKS         RW  K, chunks per update, 1 .. MAX_CHUNKS and at most
 *                               QUEUE_SIZE; written only while the queue is idle
 *                               (ctrl_idle: empty, no frame being decided); reset 1
 *   0x30 MAX_CHUNKS         RO  parameter MAX_CHUNKS
 *   0x34 CHUNK_ERRORS       RO  Olaf updates whose num_chunks was not K or whose
 *                               chunk was not below K (saturates at 2^32-1); they
 *                               were queued as plain traffic
 *   0x38 OCCUPANCY          RO  occupied segments, a departing head included
 *
 * A write answers SLVERR and changes nothing if it is not a full-word write
 * (wstrb != 4'hF), targets a read-only or unmapped address, or carries a
 * value out of range (QUEUE_SIZE outside NUM_CHUNKS..SEGMENTS, NUM_CHUNKS
 * outside 1..min(MAX_CHUNKS, QUEUE_SIZE) or written while the queue is not
 * idle, REWARD_THRESHOLD with bit 31 set, CTRL with reserved bits set). A
 * read of an unmapped address answers SLVERR and 0.
 *
 * status_queue_size is the status Q_max = floor(QUEUE_SIZE / NUM_CHUNKS)
 * (updates). A write to QUEUE_SIZE or NUM_CHUNKS recomputes it with a
 * restoring division, one quotient bit per cycle (QS_WIDTH cycles); the
 * write's response (bvalid) comes when the quotient is in force, and no
 * other write is taken meanwhile.
 */
module olaf_queue_regs #
(
    // Physical segments of the queue
    parameter SEGMENTS = 8,
    // Number of clusters
    parameter NUM_CLUSTERS = 9,
    // Beats per segment
    parameter BEATS_PER_SEGMENT = 24,
    // Most chunks per update K
    parameter MAX_CHUNKS = 1,
    // AXI4-Lite address width (at least 8; bits above 7 must be zero)
    parameter AXIL_ADDR_WIDTH = 8,
    // Activity window after reset (ns)
    parameter [63:0] ACTIVITY_WINDOW_RESET = 64'd1000000000,
    // Width of cfg_queue_size
    parameter QS_WIDTH = $clog2(SEGMENTS + 1),
    // Width of cfg_num_chunks
    parameter CK_WIDTH = $clog2(MAX_CHUNKS + 1)
)
(
    input  wire                       clk,
    input  wire                       rst,

    // AXI4-Lite slave
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axil_awaddr,
    input  wire [2:0]                 s_axil_awprot,
    input  wire                       s_axil_awvalid,
    output wire                       s_axil_awready,
    input  wire [31:0]                s_axil_wdata,
    input  wire [3:0]                 s_axil_wstrb,
    input  wire                       s_axil_wvalid,
    output wire                       s_axil_wready,
    output reg  [1:0]                 s_axil_bresp,
    output reg                        s_axil_bvalid,
    input  wire                       s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axil_araddr,
    input  wire [2:0]                 s_axil_arprot,
    input  wire                       s_axil_arvalid,
    output wire                       s_axil_arready,
    output reg  [31:0]                s_axil_rdata,
    output reg  [1:0]                 s_axil_rresp,
    output reg                        s_axil_rvalid,
    input  wire                       s_axil_rready,

    // Configuration in force
    output reg                        cfg_reward_filter_en,
    output reg                        cfg_fifo_mode,
    output reg  [30:0]                cfg_reward_threshold,
    output reg  [QS_WIDTH-1:0]        cfg_queue_size,
    output reg  [63:0]                cfg_activity_window,
    output reg  [CK_WIDTH-1:0]        cfg_num_chunks,

    // Status in updates: floor(cfg_queue_size / cfg_num_chunks)
    output wire [23:0]                status_queue_size,

    // Status, readable through the register map
    input  wire [23:0]                status_queue_util,
    input  wire [15:0]                status_active_clusters,
    input  wire [23:0]                status_occupancy,
    input  wire                       ctrl_idle,          // the queue is idle: NUM_CHUNKS may be written
    input  wire                       chunk_error         // pulse: an update with a bad chunk was decided
);

localparam [1:0] RESP_OKAY = 2'b00;
localparam [1:0] RESP_SLVERR = 2'b10;

localparam [7:0] REG_ID = 8'h00;
localparam [7:0] REG_CTRL = 8'h04;
localparam [7:0] REG_THRESHOLD = 8'h08;
localparam [7:0] REG_QUEUE_SIZE = 8'h0C;
localparam [7:0] REG_WINDOW_LO = 8'h10;
localparam [7:0] REG_WINDOW_HI = 8'h14;
localparam [7:0] REG_SEGMENTS = 8'h18;
localparam [7:0] REG_NUM_CLUSTERS = 8'h1C;
localparam [7:0] REG_BEATS = 8'h20;
localparam [7:0] REG_QUEUE_UTIL = 8'h24;
localparam [7:0] REG_ACTIVE = 8'h28;
localparam [7:0] REG_NUM_CHUNKS = 8'h2C;
localparam [7:0] REG_MAX_CHUNKS = 8'h30;
localparam [7:0] REG_CHUNK_ERRORS = 8'h34;
localparam [7:0] REG_OCCUPANCY = 8'h38;

localparam CNT_WIDTH = $clog2(QS_WIDTH + 1);
localparam [CNT_WIDTH-1:0] DIV_STEPS = QS_WIDTH[CNT_WIDTH-1:0];
localparam [CNT_WIDTH-1:0] CNT_ONE = {{CNT_WIDTH-1{1'b0}}, 1'b1};

// check configuration
initial begin
    if (AXIL_ADDR_WIDTH < 8) begin
        $error("Error: AXIL_ADDR_WIDTH must be at least 8 (instance %m)");
        $finish;
    end

    if (MAX_CHUNKS < 1 || MAX_CHUNKS > 65535) begin
        $error("Error: MAX_CHUNKS must be in 1..65535 (instance %m)");
        $finish;
    end
end

// the low byte of the address selects the register (word aligned); the
// bits above must be zero
wire [7:0] wr_reg = {s_axil_awaddr[7:2], 2'b00};
wire [7:0] rd_reg = {s_axil_araddr[7:2], 2'b00};
wire wr_high_zero = (s_axil_awaddr >> 8) == 0;
wire rd_high_zero = (s_axil_araddr >> 8) == 0;

// protection bits and the byte offset within a word carry no meaning here
wire unused_bits = &{1'b0, s_axil_awprot, s_axil_arprot, s_axil_awaddr[1:0], s_axil_araddr[1:0]};

reg [31:0] window_hi_shadow;

// Q_max division in progress (its write's response waits for it)
reg                 div_run;
reg [CNT_WIDTH-1:0] div_cnt;
reg [QS_WIDTH-1:0]  div_num;   // dividend bits still to go (high end), quotient bits (low end)
reg [CK_WIDTH-1:0]  div_rem;   // below cfg_num_chunks
reg [QS_WIDTH-1:0]  queue_size_updates;

// write channel: take AW and W together once the previous response is gone
wire wr_go = s_axil_awvalid && s_axil_wvalid && !div_run && (!s_axil_bvalid || s_axil_bready);

assign s_axil_awready = wr_go;
assign s_axil_wready = wr_go;

wire full_word = s_axil_wstrb == 4'hF;
wire [31:0] wd = s_axil_wdata;

reg wr_ok;

always @* begin
    wr_ok = 1'b0;
    if (full_word && wr_high_zero) begin
        case (wr_reg)
            REG_CTRL:       wr_ok = wd[31:2] == 30'd0;
            REG_THRESHOLD:  wr_ok = !wd[31];
            REG_QUEUE_SIZE: wr_ok = wd >= {{32-CK_WIDTH{1'b0}}, cfg_num_chunks} && wd <= SEGMENTS;
            REG_NUM_CHUNKS: wr_ok = wd >= 32'd1 && wd <= MAX_CHUNKS && wd <= {{32-QS_WIDTH{1'b0}}, cfg_queue_size}
                                    && ctrl_idle;
            REG_WINDOW_LO:  wr_ok = 1'b1;
            REG_WINDOW_HI:  wr_ok = 1'b1;
            default:        wr_ok = 1'b0;
        endcase
    end
end

// a write that changes Q_max waits for the division
wire wr_div = wr_ok && (wr_reg == REG_QUEUE_SIZE || wr_reg == REG_NUM_CHUNKS);

wire [CK_WIDTH:0]   div_sh = {div_rem, div_num[QS_WIDTH-1]};
wire                div_ge = div_sh >= {1'b0, cfg_num_chunks};
/* verilator lint_off UNUSEDSIGNAL */
wire [CK_WIDTH:0]   div_diff = div_ge ? div_sh - {1'b0, cfg_num_chunks} : div_sh;
/* verilator lint_on UNUSEDSIGNAL */
wire [QS_WIDTH-1:0] div_num_next = (div_num << 1) | {{QS_WIDTH-1{1'b0}}, div_ge};

always @(posedge clk) begin
    if (s_axil_bvalid && s_axil_bready) begin
        s_axil_bvalid <= 1'b0;
    end

    if (wr_go) begin
        s_axil_bvalid <= !wr_div;
        s_axil_bresp <= wr_ok ? RESP_OKAY : RESP_SLVERR;
        if (wr_ok) begin
            case (wr_reg)
                REG_CTRL: begin
                    cfg_reward_filter_en <= wd[0];
                    cfg_fifo_mode <= wd[1];
                end
                REG_THRESHOLD:  cfg_reward_threshold <= wd[30:0];
                REG_QUEUE_SIZE: cfg_queue_size <= wd[QS_WIDTH-1:0];
                REG_WINDOW_LO:  cfg_activity_window <= {window_hi_shadow, wd};
                REG_WINDOW_HI:  window_hi_shadow <= wd;
                REG_NUM_CHUNKS: cfg_num_chunks <= wd[CK_WIDTH-1:0];
                default: ;
            endcase
        end
    end

    // Q_max = floor(cfg_queue_size / cfg_num_chunks), one quotient bit per cycle; the
    // registers do not change meanwhile (no write is taken)
    if (wr_go && wr_div) begin
        div_run <= 1'b1;
        div_cnt <= DIV_STEPS;
        div_num <= wr_reg == REG_QUEUE_SIZE ? wd[QS_WIDTH-1:0] : cfg_queue_size;
        div_rem <= {CK_WIDTH{1'b0}};
    end else if (div_run) begin
        div_rem <= div_diff[CK_WIDTH-1:0];
        div_num <= div_num_next;
        div_cnt <= div_cnt - CNT_ONE;
        if (div_cnt == CNT_ONE) begin
            div_run <= 1'b0;
            queue_size_updates <= div_num_next;
            s_axil_bvalid <= 1'b1;
            s_axil_bresp <= RESP_OKAY;
        end
    end

    if (rst) begin
        s_axil_bvalid <= 1'b0;
        s_axil_bresp <= RESP_OKAY;
        cfg_reward_filter_en <= 1'b0;
        cfg_fifo_mode <= 1'b0;
        cfg_reward_threshold <= 31'd0;
        cfg_queue_size <= SEGMENTS[QS_WIDTH-1:0];
        cfg_activity_window <= ACTIVITY_WINDOW_RESET;
        window_hi_shadow <= ACTIVITY_WINDOW_RESET[63:32];
        cfg_num_chunks <= {{CK_WIDTH-1{1'b0}}, 1'b1};
        div_run <= 1'b0;
        queue_size_updates <= SEGMENTS[QS_WIDTH-1:0];
    end
end

assign status_queue_size = {{24-QS_WIDTH{1'b0}}, queue_size_updates};

// updates refused for their chunk fields
reg [31:0] chunk_errors;

always @(posedge clk) begin
    if (chunk_error && chunk_errors != 32'hFFFF_FFFF) begin
        chunk_errors <= chunk_errors + 32'd1;
    end

    if (rst) begin
        chunk_errors <= 32'd0;
    end
end

// read channel
wire rd_go = s_axil_arvalid && (!s_axil_rvalid || s_axil_rready);

assign s_axil_arready = rd_go;

reg [31:0] rd_value;
reg rd_ok;

always @* begin
    rd_ok = rd_high_zero;
    case (rd_reg)
        REG_ID:           rd_value = 32'h4F4C4146;
        REG_CTRL:         rd_value = {30'd0, cfg_fifo_mode, cfg_reward_filter_en};
        REG_THRESHOLD:    rd_value = {1'b0, cfg_reward_threshold};
        REG_QUEUE_SIZE:   rd_value = {{32-QS_WIDTH{1'b0}}, cfg_queue_size};
        REG_WINDOW_LO:    rd_value = cfg_activity_window[31:0];
        REG_WINDOW_HI:    rd_value = cfg_activity_window[63:32];
        REG_SEGMENTS:     rd_value = SEGMENTS;
        REG_NUM_CLUSTERS: rd_value = NUM_CLUSTERS;
        REG_BEATS:        rd_value = BEATS_PER_SEGMENT;
        REG_QUEUE_UTIL:   rd_value = {8'd0, status_queue_util};
        REG_ACTIVE:       rd_value = {16'd0, status_active_clusters};
        REG_NUM_CHUNKS:   rd_value = {{32-CK_WIDTH{1'b0}}, cfg_num_chunks};
        REG_MAX_CHUNKS:   rd_value = MAX_CHUNKS;
        REG_CHUNK_ERRORS: rd_value = chunk_errors;
        REG_OCCUPANCY:    rd_value = {8'd0, status_occupancy};
        default: begin
            rd_value = 32'd0;
            rd_ok = 1'b0;
        end
    endcase
    if (!rd_ok) begin
        rd_value = 32'd0;
    end
end

always @(posedge clk) begin
    if (s_axil_rvalid && s_axil_rready) begin
        s_axil_rvalid <= 1'b0;
    end

    if (rd_go) begin
        s_axil_rvalid <= 1'b1;
        s_axil_rdata <= rd_value;
        s_axil_rresp <= rd_ok ? RESP_OKAY : RESP_SLVERR;
    end

    if (rst) begin
        s_axil_rvalid <= 1'b0;
        s_axil_rdata <= 32'd0;
        s_axil_rresp <= RESP_OKAY;
    end
end

endmodule

`resetall
