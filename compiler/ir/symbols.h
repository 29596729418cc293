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
  GiNaC::ex substitute(const GiNaC::ex& e) const;  // apply aliases, then bindings, expand

  // A dim an exporter named (Gemmlogits_dim_0, unk__2) whose value shape inference derived
  // from other dims: substitute() replaces it. Throws when it is already an alias of
  // something else.
  void alias(const std::string& name, const GiNaC::ex& value);
  const std::map<std::string, GiNaC::ex>& aliases() const { return aliases_; }
  // The bindings, plus every alias whose value they decide (for files that keep the
  // exporter's names, such as the original model's declared outputs).
  std::map<std::string, double> bound_values() const;
  // The value of a fully bound expression; nullopt while it still holds free symbols.
  // Remembered per expression until the next bind() or alias(): the searches ask for the
  // same few extents thousands of times (every repeated layer's loops), and each
  // substitution walks the aliases and bindings through GiNaC.
  std::optional<double> evaluate(const GiNaC::ex& e) const;

 private:
  std::map<std::string, GiNaC::symbol> symbols_;
  std::map<std::string, double> bindings_;
  std::map<std::string, GiNaC::ex> aliases_;
  GiNaC::exmap alias_map_;
  int next_fresh_ = 0;
  mutable std::map<GiNaC::ex, std::optional<double>, GiNaC::ex_is_less> evaluated_;  // evaluate()'s, per expression
};

}  // namespace symtensor::compiler
