// Replays the shared OlafQueue vectors (docs/vectors.md) through the C++ core
// with no switch: every decision, segment, token, departing update, token fate,
// status and the final counters must equal the reference model's, and the
// core's invariants (check_invariants, with the conservation law) must hold
// after every event.
//
// Usage: test_queue_core VECTOR.json...   (exit 0 iff every file matches)

#include <fstream>
#include <iostream>
#include <string>

#include "olaf_queue_core.hpp"
#include "queue_vectors.hpp"

using nlohmann::json;

namespace {

// Returns the number of mismatches (printing each), or -1 on a format error.
int replay(const std::string &path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << path << ": cannot open\n";
    return -1;
  }
  json v;
  try {
    in >> v;
  } catch (const std::exception &e) {
    std::cerr << path << ": not JSON: " << e.what() << "\n";
    return -1;
  }
  const auto [cfg, disc] = olaf::vectors::config_from_json(v.at("config"));
  olaf::Queue q(cfg, disc);

  int bad = 0;
  const json &events = v.at("events");
  for (size_t i = 0; i < events.size(); i++) {
    const json &e = events[i];
    const std::string op = e.at("op");
    json got;
    try {
      got = olaf::vectors::apply_event(q, e);
    } catch (const std::invalid_argument &err) {
      std::cerr << path << ": event " << i << ": " << err.what() << "\n";
      bad++;
      continue;
    }
    if (op != "configure" && got != e.at("expect")) {
      if (bad < 5)
        std::cerr << path << ": event " << i << " (" << op << "): expected "
                  << e.at("expect").dump() << ", got " << got.dump() << "\n";
      bad++;
    }
    const std::string broken = q.check_invariants();
    if (!broken.empty()) {
      std::cerr << path << ": event " << i << " (" << op << "): invariant broken: " << broken
                << "\n";
      bad++;
    }
  }
  const json counters = olaf::vectors::counters_to_json(q);
  if (v.contains("final_counters") && counters != v["final_counters"]) {
    std::cerr << path << ": final counters differ: expected " << v["final_counters"].dump()
              << ", got " << counters.dump() << "\n";
    bad++;
  }
  return bad;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " VECTOR.json...\n";
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    int bad;
    try {
      bad = replay(argv[i]);
    } catch (const std::exception &e) {
      std::cerr << argv[i] << ": " << e.what() << "\n";
      bad = -1;
    }
    std::cout << (bad == 0 ? "ok    " : "FAIL  ") << argv[i] << "\n";
    if (bad != 0) failed++;
  }
  std::cout << (argc - 1 - failed) << "/" << (argc - 1)
            << " vector files match the reference model\n";
  return failed ? 1 : 0;
}
