#include "compiler/ir/symbols.h"

#include <sstream>
#include <stdexcept>

namespace symtensor::compiler {

GiNaC::symbol SymbolTable::get(const std::string& name) {
  auto it = symbols_.find(name);
  if (it != symbols_.end()) return it->second;
  GiNaC::possymbol s(name);
  symbols_.emplace(name, s);
  return s;
}

GiNaC::symbol SymbolTable::fresh() {
  std::string name;
  do {
    name = "unk" + std::to_string(next_fresh_++);
  } while (symbols_.count(name));
  return get(name);
}

void SymbolTable::bind(const std::string& name, double value) {
  if (!(value > 0)) throw std::runtime_error("binding " + name + "=" + std::to_string(value) + ": dims must be positive");
  get(name);
  bindings_[name] = value;
  evaluated_.clear();
}

GiNaC::exmap SymbolTable::binding_map() const {
  GiNaC::exmap m;
  for (const auto& [name, value] : bindings_) {
    // Integral values stay exact rationals so that bound shapes remain integers.
    const bool integral = value == static_cast<double>(static_cast<long>(value));
    m[symbols_.at(name)] = integral ? GiNaC::numeric(static_cast<long>(value)) : GiNaC::numeric(value);
  }
  return m;
}

GiNaC::ex SymbolTable::substitute(const GiNaC::ex& e) const {
  const GiNaC::ex unaliased = alias_map_.empty() ? e : e.subs(alias_map_);
  if (bindings_.empty()) return alias_map_.empty() ? e : unaliased.expand();
  return unaliased.subs(binding_map()).expand();
}

void SymbolTable::alias(const std::string& name, const GiNaC::ex& value) {
  const GiNaC::symbol s = get(name);
  auto [it, added] = aliases_.emplace(name, value);
  if (!added && !(it->second - value).expand().is_zero()) {
    std::ostringstream msg;
    msg << "dim '" << name << "' is both " << it->second << " and " << value;
    throw std::runtime_error(msg.str());
  }
  alias_map_[s] = value;
  evaluated_.clear();
}

std::map<std::string, double> SymbolTable::bound_values() const {
  std::map<std::string, double> values = bindings_;
  for (const auto& [name, value] : aliases_)
    if (auto v = evaluate(value)) values.emplace(name, *v);
  return values;
}

std::optional<double> SymbolTable::evaluate(const GiNaC::ex& e) const {
  if (const auto known = evaluated_.find(e); known != evaluated_.end()) return known->second;
  std::optional<double> out;
  const GiNaC::ex v = GiNaC::evalf(substitute(e));
  if (GiNaC::is_a<GiNaC::numeric>(v) && GiNaC::ex_to<GiNaC::numeric>(v).is_real())
    out = GiNaC::ex_to<GiNaC::numeric>(v).to_double();
  evaluated_.emplace(e, out);
  return out;
}

}  // namespace symtensor::compiler
