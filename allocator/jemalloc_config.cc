// jemalloc's options for every program (read by jemalloc at start-up: its documented
// `malloc_conf` symbol; MALLOC_CONF in the environment still overrides it).
//
// dirty_decay_ms:-1 keeps freed pages for reuse instead of handing them back to the kernel.
// A search that simulates plans builds and frees a step program of a million tasks (a few
// hundred MB) per simulation; with jemalloc's default decay those pages went back to the
// kernel between simulations and every program faulted them in anew: the fleet search of
// LLaMA-2 70B on 96 GPUs took 536k page faults (a fifth of its time in the kernel), 171k with
// this, at a peak resident size of 702 MB instead of 516 MB (issue #32). The programs are
// short-lived, so memory kept until exit is the price.
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks for.
const char* malloc_conf = "dirty_decay_ms:-1";
}
