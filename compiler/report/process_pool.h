#pragma once
// Runs independent pieces of work in forked worker processes. Threads are not an option:
// GiNaC's expressions are reference counted without atomics, and every search builds
// some. A worker is forked once and then asked for one index at a time (the longest work
// first keeps the workers evenly busy); each answer comes back as one line of text.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace symtensor::compiler {

// work(i) for every i in `order` (a permutation of 0..n-1, the order to hand work out in),
// in up to `jobs` workers; done(i, answer) in the parent as answers arrive. work's answer
// must not contain a newline; an exception in work is the worker's answer turned into
// failed(i, message). With jobs <= 1 (or one piece) everything runs in this process.
// Throws when a worker cannot be started or dies without answering.
void run_in_workers(const std::vector<std::size_t>& order, int jobs, const std::function<std::string(std::size_t)>& work,
                    const std::function<void(std::size_t, const std::string&)>& done,
                    const std::function<void(std::size_t, const std::string&)>& failed);

// The number of workers to use by default: the processors this process may run on.
int default_jobs();

}  // namespace symtensor::compiler
