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
//
// thp:always,metadata_thp:always backs jemalloc's extents and metadata with transparent huge
// pages where the kernel allows them (`madvise` mode, as here and by default on Debian 12):
// one fault per 2 MB instead of per 4 kB when a step program is first written. The 70B fleet
// search: 9.35/8.83 s -> 7.80/7.56 s (alternated, same machine), peak 832 -> 851 MB; the
// GPT-3 search 0.41/0.48 -> 0.36/0.39 s; DeepSeek-V3's within the noise.
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks for.
const char* malloc_conf = "dirty_decay_ms:-1,thp:always,metadata_thp:always";
}
