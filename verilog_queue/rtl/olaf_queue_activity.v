/*
 * Olaf: active-cluster counter (paper §5 "Reverse-path Signaling").
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Remembers the arrival time of the last update of every cluster (whatever
 * the queue decided for it) and counts the clusters whose last arrival lies
 * within the activity window: now - last_arrival <= window
 * (olaf.queue_model.OlafQueue.active_clusters).
 *
 * Two pipeline stages: per-cluster "active" bits, then their sum. The count
 * on status_active_clusters reflects `now`, `window` and the arrivals as they
 * were two cycles earlier. Time must not go backwards: an arrival later than
 * `now` counts as inactive.
 */
module olaf_queue_activity #
(
    // Number of clusters (cluster ids 0 .. NUM_CLUSTERS-1)
    parameter NUM_CLUSTERS = 9,
    // Width of timestamps (ns)
    parameter TIME_WIDTH = 64,
    // Cluster index width
    parameter CL_WIDTH = NUM_CLUSTERS > 1 ? $clog2(NUM_CLUSTERS) : 1
)
(
    input  wire                  clk,
    input  wire                  rst,

    // Current time and activity window (ns)
    input  wire [TIME_WIDTH-1:0] now,
    input  wire [TIME_WIDTH-1:0] window,

    // An update of cluster seen_cluster arrived at seen_time
    input  wire                  seen_valid,
    input  wire [CL_WIDTH-1:0]   seen_cluster,
    input  wire [TIME_WIDTH-1:0] seen_time,

    // Clusters active within the window
    output reg  [15:0]           status_active_clusters
);

// check configuration
initial begin
    if (NUM_CLUSTERS < 1 || NUM_CLUSTERS > 65535) begin
        $error("Error: NUM_CLUSTERS must be in 1..65535 (instance %m)");
        $finish;
    end
end

reg [TIME_WIDTH-1:0]   last_seen [0:NUM_CLUSTERS-1];
reg [NUM_CLUSTERS-1:0] seen_reg;
reg [NUM_CLUSTERS-1:0] active_reg;

integer i;

always @(posedge clk) begin
    if (seen_valid) begin
        last_seen[seen_cluster] <= seen_time;
        seen_reg[seen_cluster] <= 1'b1;
    end

    if (rst) begin
        seen_reg <= {NUM_CLUSTERS{1'b0}};
    end
end

// stage 1: one "active" bit per cluster
always @(posedge clk) begin
    for (i = 0; i < NUM_CLUSTERS; i = i + 1) begin
        active_reg[i] <= seen_reg[i] && now >= last_seen[i] && (now - last_seen[i]) <= window;
    end

    if (rst) begin
        active_reg <= {NUM_CLUSTERS{1'b0}};
    end
end

// stage 2: population count
reg [15:0] count;

always @* begin
    count = 16'd0;
    for (i = 0; i < NUM_CLUSTERS; i = i + 1) begin
        count = count + {15'd0, active_reg[i]};
    end
end

always @(posedge clk) begin
    status_active_clusters <= count;

    if (rst) begin
        status_active_clusters <= 16'd0;
    end
end

endmodule

`resetall
