#pragma once
// Min-heap of typed events keyed by (time, sequence number): events at equal times run in
// the order they were scheduled, so a run is deterministic.
#include <cstdint>
#include <queue>
#include <vector>

namespace symtensor::sim {

enum class EventKind : std::uint8_t {
  task_done,     // a: entity, b: task
  latency_done,  // a: collective instance or p2p transfer, b: flow spec index (collectives), c: 1 for p2p
  flow_done,     // a: network flow id, version: the flow's version when scheduled
};

struct Event {
  double time = 0;
  std::uint64_t seq = 0;
  EventKind kind = EventKind::task_done;
  int a = 0;
  int b = 0;
  int c = 0;
  std::uint32_t version = 0;
};

class EventQueue {
 public:
  void push(Event e) {
    e.seq = next_seq_++;
    heap_.push(e);
  }
  bool empty() const { return heap_.empty(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  std::uint64_t scheduled() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time != y.time ? x.time > y.time : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace symtensor::sim
