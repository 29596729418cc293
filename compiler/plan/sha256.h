#pragma once
// SHA-256 (FIPS 180-4) of a file, as `sha256sum` prints it: plan.yaml records the model's so
// that `export` can tell the file it reads is the one the plan was made for.
#include <string>

namespace symtensor::compiler {

// Lower-case hex digest; throws "PATH: cannot read" when the file cannot be read.
std::string sha256_file(const std::string& path);
// The same of bytes in memory (for tests).
std::string sha256_hex(const std::string& bytes);

}  // namespace symtensor::compiler
