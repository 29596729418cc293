#pragma once
// Names a newcomer types (#34): bundled profiles and stacks are found whatever their case,
// and an unknown name within a few edits of known ones gets a "did you mean".
#include <string>
#include <vector>

namespace symtensor::hardware {

// The name among `known` equal to `name` but for case ("DGX-H100" is dgx-h100), or "".
std::string name_in_any_case(const std::string& name, const std::vector<std::string>& known);
// Names among `known` within a few edits of `name` (Levenshtein, case-insensitive, at most 2
// or a quarter of the name), the nearest first, three at most. Empty when none is close.
std::vector<std::string> similar_names(const std::string& name, const std::vector<std::string>& known);
// ": did you mean 'a' or 'b'?" for similar_names' answer, each with `suffix` ("x4"); "" for none.
std::string did_you_mean(const std::vector<std::string>& near, const std::string& suffix = "");

}  // namespace symtensor::hardware
