#pragma once
// Output files that are either wholly there or not there at all.
#include <string>
#include <utility>
#include <vector>

namespace symtensor::sim {

// Writes `content` to PATH.tmp.<pid> in the same folder, then renames it over `path`,
// so readers never see a half-written file. Throws naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

// Throws "FLAG DIR: ..." when files could not be written into `dir`: it is not a folder,
// or the nearest existing folder above it is not writable. Creates nothing, so a command
// can refuse a bad output folder before its (slow) work and leave no trace.
void check_output_dir(const std::string& dir, const std::string& flag);

// Writes every (file name, content) into `dir`, creating it (and missing parents) first.
// All or nothing: on a failure the files written so far and the folders created are
// removed again before the error (naming the path) is rethrown.
void write_files_atomically(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace symtensor::sim
