// EventQueue pops by (time, sequence) whether an event waits in its heap or in its FIFO of
// events at the current time: checked against a plain heap over the same pushes.
#include <cstdint>
#include <queue>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "simulator/engine/event_queue.h"

namespace symtensor::sim {
namespace {

struct EqRefLater {
  bool operator()(const Event& x, const Event& y) const { return x.time != y.time ? x.time > y.time : x.seq > y.seq; }
};

TEST(EventQueueOrder, PopsAsAPlainHeapWouldWithEventsAtTheCurrentTime) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    EventQueue queue;
    std::priority_queue<Event, std::vector<Event>, EqRefLater> reference;
    std::uint64_t seq = 0;
    auto push = [&](double time, int tag) {
      Event e;
      e.time = time;
      e.a = tag;
      queue.push(e);
      e.seq = seq++;
      reference.push(e);
    };
    int tag = 0;
    for (int i = 0; i < 5; ++i) push(static_cast<double>(rng() % 4), tag++);
    int popped = 0, at_same_time = 0;
    while (!queue.empty()) {
      ASSERT_FALSE(reference.empty());
      const Event got = queue.pop();
      const Event want = reference.top();
      reference.pop();
      ASSERT_EQ(got.a, want.a) << "trial " << trial << " pop " << popped;
      ASSERT_EQ(got.time, want.time);
      ++popped;
      if (tag >= 400) continue;
      // As the engine does: most follow-ups at the same time, some later, a few earlier.
      const int n = 1 + static_cast<int>(rng() % 2);
      for (int k = 0; k < n; ++k) {
        const unsigned r = rng() % 10;
        const double time = r < 6 ? got.time : r < 9 ? got.time + static_cast<double>(rng() % 3) : got.time - 1;
        at_same_time += time == got.time;
        push(time, tag++);
      }
    }
    EXPECT_TRUE(reference.empty());
    EXPECT_EQ(queue.scheduled(), seq);
    EXPECT_GT(at_same_time, 10);
  }
}

}  // namespace
}  // namespace symtensor::sim
