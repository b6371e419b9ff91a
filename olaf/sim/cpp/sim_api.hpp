// The simulation's interface to Python (olaf/sim/backend.py loads it through
// cppyy): build a network of Olaf switches, workers and a PS on ns-3
// point-to-point links, run it, read counters and per-event records.
// Only standard-library types here, so cppyy parses this header without the
// ns-3 headers; the ns-3 objects live behind Simulation::Impl (sim_api.cpp).
//
// Units: times in ns (int64), link rates in bit/s, addresses as host-order
// uint32 IPv4.
//
// Model size (docs/protocol.md "Chunks", olaf/chunks.py): a worker update of P
// parameters travels as K chunks of L elements (the last zero-padded); each
// chunk is an update datagram of its own and the PS answers each with an ACK
// slice of the chunk's unpadded length. K = 1, L = P: one datagram per update.

#ifndef OLAF_SIM_API_HPP_
#define OLAF_SIM_API_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace olaf::sim {

// The queue of a switch (the OlafQueueDisc on its port toward the PS).
struct QueueParams {
  std::string discipline = "olaf";  // "olaf" | "fifo"
  uint32_t segments = 64;
  uint32_t num_clusters = 1024;
  uint32_t queue_size = 8;
  int64_t reward_threshold = -1;  // Q15.16, < 0 = off
  int64_t activity_window_ns = 1000000000;
};

// One direction-aware point-to-point link: `up` is the direction from the
// first node given to Connect (toward the PS), `down` the other one.
struct LinkParams {
  double up_bps = 1e9;
  double down_bps = 1e9;
  int64_t delay_ns = 10000;
  uint32_t device_queue_packets = 100;  // DropTail of each device (not the Olaf queue)
};

struct WorkerParams {
  uint32_t ip = 0;
  uint32_t ps_ip = 0;
  uint16_t src_port = 50101;  // workers send from their ACK port (olaf/hosts/worker.py)
  int64_t start_ns = 0;       // the worker's start: its group's start plus its start phase
  int64_t period_ns = 100000000;
  int64_t jitter_ns = 0;
  // On/off arrivals (olaf/plan/arrivals.py): bursts of `burst` updates back to back (gaps 0),
  // one per gap burst * period + U(-jitter, +jitter); 1 = periodic.
  int64_t burst = 1;
  // Replayed gaps (ns, the first from the start; olaf/plan/arrivals.py): when not empty they
  // replace period/jitter/burst, and generation ends after the last one.
  std::vector<int64_t> trace_gaps_ns;
  int64_t duration_ns = 0;  // no generation at or after start + duration; 0 = no limit
  int64_t max_updates = 0;  // 0 = no limit
  bool tc = false;
  double tc_delta_t_ms = 400.0;
  double tc_v_per_s = 2.5;
  uint32_t tc_q_max = 0;   // 0 = from the ACK status
  uint8_t tc_reading = 0;  // olaf.constants.TxReading (TX_READING_*)
  uint64_t seed = 0;
  // Fixed-point formats of olaf/fixedpoint.py (set by olaf/sim from there).
  int grad_frac_bits = 0;    // Q7.24: 24
  int reward_frac_bits = 0;  // Q15.16: 16
};

// Record layouts: every field 8 bytes (int64 or double) so that Python reads a
// vector as a numpy structured array with the layout that *_FIELDS names
// ("name:i8" / "name:f8", in order).
struct GenRecord {
  int64_t t_ns;  // generation time = gen_ts
  int64_t idx;
  int64_t sent;    // 1: transmission control sent it and the access link took >= 1 of its chunks
  int64_t seq;     // when sent
  double reward;   // mean reward sent (or of this generation if skipped)
  int64_t folded;  // generations folded into the sent update
  int64_t reason;  // olaf::sim::Reason
  double p_send;
  double draw;          // < 0: none
  double delta_hat_ms;  // < 0: none
  int64_t n;            // -1: none
  int64_t q_max;        // -1: none
  int64_t chunks_sent;  // chunks the access link took (K when all; 0 when not sent)
};
constexpr const char *GEN_FIELDS =
    "t_ns:i8,idx:i8,sent:i8,seq:i8,reward:f8,folded:i8,reason:i8,p_send:f8,draw:f8,"
    "delta_hat_ms:f8,n:i8,q_max:i8,chunks_sent:i8";

struct AckRecord {
  int64_t t_ns;
  int64_t cluster_id;
  int64_t worker_id;
  int64_t seq;
  int64_t count;
  int64_t gen_ts;
  int64_t global_reward;  // Q15.16 raw
  int64_t weights;
  int64_t own;
  int64_t status_valid;
  int64_t queue_util;
  int64_t active_clusters;
  int64_t queue_size;
  int64_t chunk;  // the slice this ACK answers
};
constexpr const char *ACK_FIELDS =
    "t_ns:i8,cluster_id:i8,worker_id:i8,seq:i8,count:i8,gen_ts:i8,global_reward:i8,weights:i8,"
    "own:i8,status_valid:i8,queue_util:i8,active_clusters:i8,queue_size:i8,chunk:i8";

struct PsRecord {
  int64_t t_ns;  // reception
  int64_t src_ip;
  int64_t cluster_id;
  int64_t worker_id;
  int64_t seq;
  int64_t count;
  int64_t gen_ts;
  int64_t reward_sum;
  int64_t chunk;
};
constexpr const char *PS_FIELDS =
    "t_ns:i8,src_ip:i8,cluster_id:i8,worker_id:i8,seq:i8,count:i8,gen_ts:i8,reward_sum:i8,chunk:i8";

// The chunk fate ledger (fate_ledger.hpp; docs/simulation.md "Chunks"): one
// LedgerUpdate per update a worker sent (update id = index) and K LedgerChunks
// per update (index update id · K + chunk).
enum class ChunkFate : int64_t {
  kInFlight = 0,   // still in the network when the simulation stopped
  kDelivered = 1,  // its packet reached the PS
  kFolded = 2,     // aggregated into a waiting update at a switch
  kDropped = 3,    // dropped by an OlafQueue decision, or overwritten by a replacement
  kLost = 4,       // a device queue dropped its packet
  kNotSent = 5,    // the worker's own device refused it
};
struct LedgerUpdate {
  int64_t worker;  // node index (Simulation::AddWorker)
  int64_t seq;
  int64_t gen_ts;
  int64_t reward_sum;  // Q15.16 raw
};
constexpr const char *LEDGER_UPDATE_FIELDS = "worker:i8,seq:i8,gen_ts:i8,reward_sum:i8";
struct LedgerChunk {
  int64_t fate;          // ChunkFate
  int64_t t_content_ns;  // when the PS received the packet holding its content; -1: never
  int64_t reception;     // that reception's serial at the PS (PsUpdates index); -1: never
};
constexpr const char *LEDGER_CHUNK_FIELDS = "fate:i8,t_content_ns:i8,reception:i8";

// Counters of one simulated host.
struct WorkerCounters {
  uint64_t generated = 0, sent = 0, skipped = 0, acks = 0, acks_own = 0, acks_malformed = 0;
  uint64_t chunks_sent = 0;  // chunks the access link took
  uint64_t send_errors = 0;  // chunks refused: the access link's device queue was full
  uint32_t learned_cluster_id = 0xFFFFFFFF, learned_worker_id = 0xFFFFFFFF;
  uint32_t last_seq = 0;
};
struct PsCounters {
  uint64_t datagrams = 0, updates = 0, malformed = 0, acks_sent = 0, ack_errors = 0;
};

// Counters of one switch, as the P4 program's (docs/dataplane.md "Counters"):
// decisions[NUM_DECISION] (counted per chunk), per-cluster decisions
// [num_clusters * NUM_DECISION] and departures [num_clusters],
// malformed[NUM_MALFORMED], traffic[NUM_TRAFFIC], egress_errors[1]; tx_drops are
// packets a device queue of the switch dropped (a simulation-only counter).
struct SwitchCounters {
  std::vector<uint64_t> decisions, cluster_decisions, cluster_departures, malformed, traffic,
      egress_errors;
  uint64_t tx_drops = 0;
};

struct RunStats {
  double wall_s = 0;
  uint64_t events = 0;   // ns-3 events executed
  uint64_t packets = 0;  // packets handed to a link by a host or switch (every hop counts)
  int64_t sim_end_ns = 0;
};

// Packets handed to a device by the simulated hosts and switches (all runs of the process).
inline uint64_t g_packets_sent = 0;

class Simulation {
 public:
  // A model of num_params (P) parameters in num_chunks (K) chunks of chunk_len
  // (L) elements, K = ceil(P / L) (olaf.chunks.Chunking); keep_records: store
  // per-event records (GenRecord/AckRecord/PsRecord). Throws
  // std::invalid_argument for inconsistent sizes.
  Simulation(uint64_t seed, uint32_t num_params, uint32_t chunk_len, uint32_t num_chunks,
             bool keep_records);
  ~Simulation();
  Simulation(const Simulation &) = delete;
  Simulation &operator=(const Simulation &) = delete;

  // Nodes; each returns its node index.
  int AddSwitch(const std::string &name, const QueueParams &q);
  int AddWorker(const std::string &name, const WorkerParams &w);
  int AddPs(const std::string &name, uint32_t ip);
  // Link node a (toward the PS) and node b; returns the port (device index) on
  // a in the low 16 bits and on b in the high 16 bits.
  uint32_t Connect(int a, int b, const LinkParams &l);

  // Switch tables (what the controller writes on BMv2).
  void SetQueuePort(int sw, int port);  // the port the OlafQueue serves (toward the PS)
  void AddRoute(int sw, uint32_t prefix, int prefix_len, int port);  // ipv4_lpm
  void AddWorkerEntry(int sw, uint32_t ip, uint16_t worker_id, uint16_t cluster_id);
  void AddReplica(int sw, uint16_t cluster_id, int port, uint32_t rewrite_ip);  // 0: no rewrite

  // ns-3 event scheduler (TypeId name, e.g. ns3::MapScheduler, ns3::HeapScheduler).
  void SetScheduler(const std::string &type_name);
  // Runs until stop_ns (simulated); may be called once.
  RunStats Run(int64_t stop_ns);

  // Results (indices are node indices from Add*).
  const std::vector<GenRecord> &Gens(int worker) const;
  const std::vector<AckRecord> &Acks(int worker) const;
  const std::vector<PsRecord> &PsUpdates(int ps) const;
  WorkerCounters GetWorkerCounters(int worker) const;
  PsCounters GetPsCounters(int ps) const;
  SwitchCounters GetSwitchCounters(int sw) const;
  // Current queue status (queue_util, active_clusters, queue_size) of a switch.
  std::vector<uint32_t> GetSwitchStatus(int sw) const;
  // The chunk fate ledger (kept with records only; empty without).
  const std::vector<LedgerUpdate> &LedgerUpdates() const;
  const std::vector<LedgerChunk> &LedgerChunks() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_API_HPP_
