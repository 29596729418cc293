#pragma once
#include <string>

namespace symtensor::sim {

// Writes `content` to PATH.tmp.<pid> in the same folder, then renames it over `path`,
// so readers never see a half-written file. Throws naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace symtensor::sim
