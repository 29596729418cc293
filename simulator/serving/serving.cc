// The step-by-step scheduler of one replica and the run over replicas (serving.h).
#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/serving/disaggregated.h"
#include "simulator/serving/serving.h"

namespace symtensor::sim {
namespace {

struct Live {
  std::size_t record = 0;         // index into ServingRun::requests
  std::int64_t target = 0;        // tokens to prefill: the prompt, plus the outputs so far after a preemption
  std::int64_t computed = 0;      // tokens in the KV cache
  std::int64_t generated = 0;     // output tokens emitted
  std::int64_t blocks = 0;        // pages held
  double last_token_s = 0;
  bool prefilled() const { return computed >= target; }
};

std::int64_t pages(std::int64_t tokens, int block) { return (tokens + block - 1) / block; }

// One replica: requests arrive through `arrive` (index into records, at its arrival time) and
// leave through `done` (the closed loop sends the next one then).
class Replica {
 public:
  // kv_ready: requests arrive with their prompt's KV cache (a decode pool's, sent by prefill).
  Replica(const ServingScheduler& s, const ServingStepTime& step, ServingRun& run, int id, bool kv_ready = false)
      : s_(s), step_(step), run_(run), id_(id), kv_ready_(kv_ready), free_(s.kv_blocks) {}

  void arrive(std::size_t record) { pending_.push_back(record); }
  bool idle() const { return pending_.empty() && waiting_.empty() && running_.empty(); }
  double now() const { return now_; }
  // The earliest time it has something to do (its clock, or its next arrival when idle).
  double next_time() const {
    if (!waiting_.empty() || !running_.empty()) return now_;
    if (!pending_.empty()) return std::max(now_, run_.requests[pending_.front()].arrival_s);
    return std::numeric_limits<double>::infinity();
  }
  // Runs one step (or jumps to the next arrival); calls `finished` for each request done.
  template <class Finished>
  void advance(Finished finished);

 private:
  void admit_arrivals() {
    while (!pending_.empty() && run_.requests[pending_.front()].arrival_s <= now_) {
      const RequestRecord& r = run_.requests[pending_.front()];
      const std::int64_t need = pages(r.input_tokens + r.output_tokens, s_.block_size);
      if (need > s_.kv_blocks)
        throw std::runtime_error(fmt::format("serve: a request of {} input and {} output tokens needs {} KV-cache pages; "
                                             "a replica holds {} ({} tokens)", r.input_tokens, r.output_tokens, need,
                                             s_.kv_blocks, s_.kv_blocks * s_.block_size));
      Live l;
      l.record = pending_.front();
      l.target = r.input_tokens;
      if (kv_ready_) l.computed = r.input_tokens;
      waiting_.push_back(l);
      pending_.pop_front();
    }
  }
  void release(Live& l) {
    free_ += l.blocks;
    l.blocks = 0;
  }
  bool grow(Live& l, std::int64_t tokens) {  // pages for `tokens` in the cache; false if none free
    if (s_.reserve_whole_request) return true;  // reserved at admission
    const std::int64_t need = pages(tokens, s_.block_size) - l.blocks;
    if (need <= 0) return true;
    if (need > free_) return false;
    free_ -= need;
    l.blocks += need;
    return true;
  }

  const ServingScheduler& s_;
  const ServingStepTime& step_;
  ServingRun& run_;
  // Requests whose prompt's KV cache came with them join the running batch when its pages and
  // a batch place are free (in order), to decode in this step.
  void admit_transferred() {
    while (!waiting_.empty() && waiting_.front().prefilled() && static_cast<int>(running_.size()) < s_.max_batch) {
      Live& l = waiting_.front();
      const RequestRecord& r = run_.requests[l.record];
      const std::int64_t need = pages(s_.reserve_whole_request ? r.input_tokens + r.output_tokens : l.computed, s_.block_size);
      if (need > free_) break;
      free_ -= need;
      l.blocks = need;
      running_.push_back(l);
      waiting_.pop_front();
    }
  }

  int id_;
  bool kv_ready_;
  std::int64_t free_;
  double now_ = 0;
  std::deque<std::size_t> pending_;  // not arrived yet
  std::deque<Live> waiting_;
  std::vector<Live> running_;        // in order of admission
};

template <class Finished>
void Replica::advance(Finished finished) {
  if (waiting_.empty() && running_.empty()) {
    if (pending_.empty()) return;
    now_ = std::max(now_, run_.requests[pending_.front()].arrival_s);
  }
  admit_arrivals();
  if (kv_ready_) admit_transferred();
  ServingBatch batch;
  std::int64_t budget = s_.max_num_tokens;
  std::vector<std::int64_t> chunk(running_.size(), 0);  // tokens each running request computes now
  // Decodes first, oldest first; when a page is missing the newest request is preempted
  // (its pages freed, recomputed later from its prompt and outputs so far).
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Live& l = running_[i];
    if (!l.prefilled()) continue;
    while (!grow(l, l.computed + 1)) {
      std::size_t victim = running_.size() - 1;
      Live& v = running_[victim];
      release(v);
      v.target = run_.requests[v.record].input_tokens + v.generated;
      v.computed = 0;
      ++run_.requests[v.record].preemptions;
      ++run_.preemptions;
      waiting_.push_front(v);
      running_.pop_back();
      chunk.pop_back();
      if (victim == i) break;
    }
    if (i >= running_.size()) break;
    chunk[i] = 1;
    --budget;
    ++batch.decode_requests;
    batch.decode_context += l.computed;
  }
  // Prompts already started, then new ones in arrival order.
  auto schedule_prefill = [&](Live& l, std::int64_t& tokens) {
    std::int64_t k = l.target - l.computed;
    if (s_.chunked_prefill) k = std::min(k, budget);
    else if (k > budget && budget < s_.max_num_tokens) return false;  // a whole prompt waits for an emptier step
    if (k <= 0 || !grow(l, l.computed + k)) return false;
    tokens = k;
    budget -= std::min(k, budget);
    batch.prefill_tokens += k;
    batch.prefill_context += l.computed;
    batch.prefill_attention_pairs += static_cast<double>(k) * l.computed + 0.5 * static_cast<double>(k) * (k + 1);
    ++batch.prefill_requests;
    return true;
  };
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i)
    if (!running_[i].prefilled() && chunk[i] == 0) schedule_prefill(running_[i], chunk[i]);
  while (!waiting_.empty() && budget > 0 && static_cast<int>(running_.size()) < s_.max_batch) {
    Live& l = waiting_.front();
    if (s_.reserve_whole_request) {
      const RequestRecord& r = run_.requests[l.record];
      const std::int64_t need = pages(r.input_tokens + r.output_tokens, s_.block_size);
      if (need > free_) break;
      free_ -= need;
      l.blocks = need;
    }
    std::int64_t k = 0;
    if (!schedule_prefill(l, k)) {
      release(l);
      break;
    }
    running_.push_back(l);
    chunk.push_back(k);
    waiting_.pop_front();
  }
  const int in_step = batch.decode_requests + batch.prefill_requests;
  if (in_step == 0) throw std::logic_error("serve: a step with nothing to run");
  run_.peak_batch = std::max(run_.peak_batch, in_step);
  ++run_.steps;
  now_ += step_(batch);
  // Tokens come out at the end of the step: one per decode, one per prompt finished.
  std::vector<Live> still;
  still.reserve(running_.size());
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Live& l = running_[i];
    const bool was_prefilled = l.prefilled();
    l.computed += chunk[i];
    const bool emits = chunk[i] > 0 && (was_prefilled || l.prefilled());
    if (emits) {
      RequestRecord& r = run_.requests[l.record];
      if (l.generated == 0) r.first_token_s = now_;
      else run_.inter_token_s.push_back(now_ - l.last_token_s);
      l.last_token_s = now_;
      if (++l.generated >= r.output_tokens) {
        r.finish_s = now_;
        r.replica = id_;
        release(l);
        finished(l.record, now_);
        continue;
      }
    }
    still.push_back(l);
  }
  running_ = std::move(still);
}

}  // namespace

namespace {

ServingRun simulate_pool(const ServingWorkload& w, const ServingScheduler& s, const ServingStepTime& step, int replicas,
                         const ServingProgress& progress, bool kv_ready) {
  if (replicas < 1) throw std::runtime_error("serve: --replicas must be at least 1");
  if (s.max_batch < 1 || s.max_num_tokens < 1 || s.block_size < 1)
    throw std::runtime_error("serve: the batch limit, token budget and page size must be positive");
  ServingRun run;
  std::vector<ServingRequest> given;
  int total = w.requests;
  switch (w.mode) {
    case ArrivalMode::trace: given = w.trace; total = static_cast<int>(given.size()); break;
    case ArrivalMode::poisson:
      if (!(w.rate > 0)) throw std::runtime_error("serve: --rate must be positive");
      given = poisson_requests(w.rate, w.requests, w.input_tokens, w.output_tokens, w.seed);
      break;
    case ArrivalMode::offline: given.assign(w.requests, ServingRequest{0, w.input_tokens, w.output_tokens}); break;
    case ArrivalMode::closed_loop:
      if (w.concurrency < 1) throw std::runtime_error("serve: --concurrency must be at least 1");
      given.assign(std::min(w.concurrency, w.requests), ServingRequest{0, w.input_tokens, w.output_tokens});
      break;
  }
  if (total < 1) throw std::runtime_error("serve: no requests to simulate");
  for (const ServingRequest& r : given)
    if (r.input_tokens < 1 || r.output_tokens < 1) throw std::runtime_error("serve: requests need at least one input and one output token");
  std::vector<Replica> reps;
  reps.reserve(replicas);
  for (int i = 0; i < replicas; ++i) reps.emplace_back(s, step, run, i, kv_ready);
  run.requests.reserve(total);
  auto issue = [&](const ServingRequest& r, int replica) {
    RequestRecord rec;
    rec.arrival_s = r.arrival_s;
    rec.input_tokens = r.input_tokens;
    rec.output_tokens = r.output_tokens;
    rec.replica = replica;
    run.requests.push_back(rec);
    reps[replica].arrive(run.requests.size() - 1);
  };
  for (std::size_t i = 0; i < given.size(); ++i) issue(given[i], static_cast<int>(i % replicas));
  int done = 0, issued = static_cast<int>(given.size());
  const int report_every = std::max(1, total / 100);
  auto finished = [&](std::size_t record, double t) {
    ++done;
    if (progress && done % report_every == 0) progress(static_cast<double>(done) / total);
    if (w.mode == ArrivalMode::closed_loop && issued < total) {  // the user sends the next one, to the same replica
      ++issued;
      issue(ServingRequest{t, w.input_tokens, w.output_tokens}, run.requests[record].replica);
    }
  };
  while (done < total) {
    // The replica that is furthest behind runs next, so that closed-loop arrivals keep time order.
    Replica* next = nullptr;
    for (Replica& r : reps)
      if (!r.idle() && (next == nullptr || r.next_time() < next->next_time())) next = &r;
    if (next == nullptr) throw std::logic_error("serve: requests left but no replica has work");
    next->advance(finished);
  }
  return run;
}

}  // namespace

ServingRun simulate_serving(const ServingWorkload& w, const ServingScheduler& s, const ServingStepTime& step, int replicas,
                            const ServingProgress& progress) {
  return simulate_pool(w, s, step, replicas, progress, false);
}

ServingRun simulate_decode_pool(const std::vector<ServingRequest>& transferred, const ServingScheduler& s,
                                const ServingStepTime& step, int replicas) {
  ServingWorkload w;
  w.mode = ArrivalMode::trace;
  w.trace = transferred;
  return simulate_pool(w, s, step, replicas, {}, true);
}

}  // namespace symtensor::sim
