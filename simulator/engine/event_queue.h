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
  // An event at now_ (the time of the last event popped from the heap while the FIFO was
  // empty: a task ending at once, a transfer's completions) waits in a FIFO instead of the
  // heap: scheduled after every event queued so far, it is already in order among those at
  // that time. pop() takes the least (time, sequence) of the FIFO's head and the heap's top,
  // the order a heap alone gives.
  void push(Event e) {
    e.seq = next_seq_++;
    if (e.time == now_) now_events_.push_back(e);
    else heap_.push(e);
  }
  bool empty() const { return heap_.empty() && head_ == now_events_.size(); }
  Event pop() {
    if (head_ < now_events_.size() && (heap_.empty() || !Later{}(now_events_[head_], heap_.top()))) {
      const Event e = now_events_[head_++];
      if (head_ == now_events_.size()) now_events_.clear(), head_ = 0;
      return e;
    }
    Event e = heap_.top();
    heap_.pop();
    if (head_ == now_events_.size()) now_ = e.time;  // the FIFO's events all stay at now_
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
  std::vector<Event> now_events_;  // events at now_, in sequence from head_ on
  std::size_t head_ = 0;
  double now_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace symtensor::sim
