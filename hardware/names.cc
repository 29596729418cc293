#include "hardware/names.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace symtensor::hardware {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Levenshtein distance, case-insensitive.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::string x = lowercase(a), y = lowercase(b);
  std::vector<std::size_t> row(y.size() + 1);
  for (std::size_t j = 0; j <= y.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= x.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= y.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[y.size()];
}

}  // namespace

std::string name_in_any_case(const std::string& name, const std::vector<std::string>& known) {
  for (const std::string& k : known)
    if (lowercase(k) == lowercase(name)) return k;
  return "";
}

std::vector<std::string> similar_names(const std::string& name, const std::vector<std::string>& known) {
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const std::string& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (d <= std::max<std::size_t>(2, k.size() / 4)) near.emplace_back(d, k);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, k] : near)
    if (d == near.front().first && out.size() < 3) out.push_back(k);
  return out;
}

std::string did_you_mean(const std::vector<std::string>& near, const std::string& suffix) {
  std::string guess;
  for (std::size_t i = 0; i < near.size(); ++i)
    guess += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + ("'" + near[i] + suffix + "'");
  return guess.empty() ? "" : ": did you mean " + guess + "?";
}

}  // namespace symtensor::hardware
