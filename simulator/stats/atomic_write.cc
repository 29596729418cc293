#include "simulator/stats/atomic_write.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

namespace fs = std::filesystem;

void write_file_atomically(const std::string& path, const std::string& content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot rename '{}' to '{}'", tmp, path));
  }
}

void check_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw std::runtime_error(flag + ": the output folder name is empty");
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("{} {}: {}", flag, dir, ec.message()));
  // The nearest existing path at or above `dir` must be a folder we may write into.
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  if (!fs::is_directory(p, ec))
    throw std::runtime_error(fmt::format("{} {}: cannot create the output folder: '{}' is not a folder", flag, dir,
                                         p.string()));
  if (access(p.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error(fmt::format("{} {}: cannot write into '{}'", flag, dir, p.string()));
}

void write_files_atomically(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<fs::path> created_dirs;  // outermost first
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec); !ec && !fs::exists(p, ec) && p != p.parent_path(); p = p.parent_path())
    created_dirs.insert(created_dirs.begin(), p);
  std::vector<fs::path> written;
  try {
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
      throw std::runtime_error(fmt::format("cannot create the output folder '{}'{}", dir, ec ? ": " + ec.message() : ""));
    for (const auto& [name, content] : files) {
      const fs::path path = fs::path(dir) / name;
      write_file_atomically(path.string(), content);
      written.push_back(path);
    }
  } catch (...) {
    for (const auto& p : written) fs::remove(p, ec);
    for (auto it = created_dirs.rbegin(); it != created_dirs.rend(); ++it) fs::remove(*it, ec);  // only if empty
    throw;
  }
}

}  // namespace symtensor::sim
