/*
 * Olaf: pipelined reward-filter comparison (paper §3 "reward filtering").
 *
 * Part of the OlafQueue RTL (verilog_queue/).
 */

// Language: Verilog 2005

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Compares the mean reward of an arriving update n with that of the waiting
 * update q of its cluster without dividing (olaf/queue_model.py):
 *
 *     d     = n.reward_sum * q.count - q.reward_sum * n.count
 *     limit = T * n.count * q.count
 *     lower  = d < -limit      (DROP_REWARD)
 *     higher = d >  limit      (REPLACE_REWARD)
 *
 * Three stages, one cycle apart, no stalls:
 *   stage A: n.count and T are known (the arriving frame's first beat):
 *            T * n.count is registered;
 *   stage B: q is known: the three products are registered;
 *   stage C: lower/higher are valid (combinational from stage B's registers).
 * Exact at every input: products are as wide as they need to be
 * (49-bit signed d, 63-bit unsigned limit).
 */
module olaf_reward_cmp
(
    input  wire        clk,

    // Stage A
    input  wire [15:0] a_n_count,     // n.count (uint16)
    input  wire [30:0] a_threshold,   // T, Q15.16 reward units (>= 0)

    // Stage B (the same update one cycle later)
    input  wire [31:0] b_n_reward,    // n.reward_sum, Q15.16 int32
    input  wire [15:0] b_n_count,     // n.count
    input  wire [31:0] b_q_reward,    // q.reward_sum, Q15.16 int32
    input  wire [15:0] b_q_count,     // q.count

    // Stage C (one cycle after stage B)
    output wire        c_lower,       // n's mean reward is lower than q's by more than T
    output wire        c_higher       // n's mean reward is higher than q's by more than T
);

reg  [46:0] tn_b;           // T * n.count
reg  signed [48:0] p_new_c; // n.reward_sum * q.count
reg  signed [48:0] p_old_c; // q.reward_sum * n.count
reg  [62:0] limit_c;         // T * n.count * q.count

always @(posedge clk) begin
    tn_b <= a_threshold * a_n_count;
end

always @(posedge clk) begin
    p_new_c <= $signed(b_n_reward) * $signed({1'b0, b_q_count});
    p_old_c <= $signed(b_q_reward) * $signed({1'b0, b_n_count});
    limit_c <= tn_b * b_q_count;
end

// 66-bit signed arithmetic holds d (50 bit) and -limit (64 bit) exactly
wire signed [65:0] d_w     = {{17{p_new_c[48]}}, p_new_c} - {{17{p_old_c[48]}}, p_old_c};
wire signed [65:0] limit_w = {3'b000, limit_c};

assign c_lower  = d_w < -limit_w;
assign c_higher = d_w > limit_w;

endmodule

`resetall
