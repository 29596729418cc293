#pragma once
// Dim symbols by name: `batch`, `seq`, ... one GiNaC symbol per name, so that two
// tensors naming the same dim_param share it. Bindings give them numbers.
#include <map>
#include <optional>
#include <string>

#include "hardware/symbolic.h"

namespace symtensor::compiler {

class SymbolTable {
 public:
  // The symbol named `name`, created on first use (positive: dims are sizes).
  GiNaC::symbol get(const std::string& name);
  // A fresh symbol for an unnamed dim: unk0, unk1, ...
  GiNaC::symbol fresh();
  bool contains(const std::string& name) const { return symbols_.count(name) != 0; }
  const std::map<std::string, GiNaC::symbol>& all() const { return symbols_; }

  // Numeric values of bound symbols; applied by substitute().
  void bind(const std::string& name, double value);
  const std::map<std::string, double>& bindings() const { return bindings_; }
  GiNaC::exmap binding_map() const;
  GiNaC::ex substitute(const GiNaC::ex& e) const;  // apply bindings, expand
  // The value of a fully bound expression; nullopt while it still holds free symbols.
  std::optional<double> evaluate(const GiNaC::ex& e) const;

 private:
  std::map<std::string, GiNaC::symbol> symbols_;
  std::map<std::string, double> bindings_;
  int next_fresh_ = 0;
};

}  // namespace symtensor::compiler
