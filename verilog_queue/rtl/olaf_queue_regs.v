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
 *   0x0C QUEUE_SIZE         RW  occupancy limit in segments, 1 .. SEGMENTS; reset SEGMENTS
 *   0x10 WINDOW_LO          RW  activity window (ns), bits 31:0; a write commits
 *                               {WINDOW_HI as last written, this value}
 *   0x14 WINDOW_HI          RW  activity window, bits 63:32 (takes effect with
 *                               the next WINDOW_LO write); reads the value in force
 *   0x18 SEGMENTS           RO  parameter SEGMENTS
 *   0x1C NUM_CLUSTERS       RO  parameter NUM_CLUSTERS
 *   0x20 BEATS_PER_SEGMENT  RO  parameter BEATS_PER_SEGMENT
 *   0x24 QUEUE_UTIL         RO  occupied segments
 *   0x28 ACTIVE_CLUSTERS    RO  clusters active within the window
 *
 * A write answers SLVERR and changes nothing if it is not a full-word write
 * (wstrb != 4'hF), targets a read-only or unmapped address, or carries a
 * value out of range (QUEUE_SIZE outside 1..SEGMENTS, REWARD_THRESHOLD with
 * bit 31 set, CTRL with reserved bits set). A read of an unmapped address
 * answers SLVERR and 0.
 */
module olaf_queue_regs #
(
    // Physical segments of the queue
    parameter SEGMENTS = 8,
    // Number of clusters
    parameter NUM_CLUSTERS = 9,
    // Beats per segment
    parameter BEATS_PER_SEGMENT = 24,
    // AXI4-Lite address width (at least 8; bits above 7 must be zero)
    parameter AXIL_ADDR_WIDTH = 8,
    // Activity window after reset (ns)
    parameter [63:0] ACTIVITY_WINDOW_RESET = 64'd1000000000,
    // Width of cfg_queue_size
    parameter QS_WIDTH = $clog2(SEGMENTS + 1)
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

    // Status, readable through the register map
    input  wire [23:0]                status_queue_util,
    input  wire [15:0]                status_active_clusters
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

// check configuration
initial begin
    if (AXIL_ADDR_WIDTH < 8) begin
        $error("Error: AXIL_ADDR_WIDTH must be at least 8 (instance %m)");
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

// write channel: take AW and W together once the previous response is gone
wire wr_go = s_axil_awvalid && s_axil_wvalid && (!s_axil_bvalid || s_axil_bready);

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
            REG_QUEUE_SIZE: wr_ok = wd >= 32'd1 && wd <= SEGMENTS;
            REG_WINDOW_LO:  wr_ok = 1'b1;
            REG_WINDOW_HI:  wr_ok = 1'b1;
            default:        wr_ok = 1'b0;
        endcase
    end
end

always @(posedge clk) begin
    if (s_axil_bvalid && s_axil_bready) begin
        s_axil_bvalid <= 1'b0;
    end

    if (wr_go) begin
        s_axil_bvalid <= 1'b1;
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
                default: ;
            endcase
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
