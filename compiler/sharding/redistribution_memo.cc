#include "compiler/sharding/redistribution_memo.h"

#include <stdexcept>
#include <tuple>

#include "compiler/sharding/redistribution.h"

namespace symtensor::compiler {

template <class A, class B>
bool RedistributionMemo::Less::operator()(const A& a, const B& b) const {
  return std::tie(a.element_bytes, a.shape, a.from, a.to) < std::tie(b.element_bytes, b.shape, b.from, b.to);
}

const NumericRedistribution& RedistributionMemo::plan(const TensorSharding& from, const TensorSharding& to,
                                                      const std::vector<long>& shape, double element_bytes) {
  const KeyView view{element_bytes, shape, from, to};
  if (auto it = answers_.find(view); it != answers_.end()) return it->second;
  NumericRedistribution answer;
  try {
    std::vector<GiNaC::ex> dims;
    dims.reserve(shape.size());
    for (long d : shape) dims.push_back(GiNaC::numeric(d));
    const Redistribution r = plan_redistribution(from, to, dims, GiNaC::numeric(static_cast<long>(element_bytes)), mesh_);
    for (const auto& step : r.steps) {
      const double bytes = GiNaC::ex_to<GiNaC::numeric>(GiNaC::evalf(step.bytes)).to_double();
      answer.total_bytes += bytes;
      if (const auto kind = step.collective()) answer.collectives.push_back({*kind, step.axes, step.group, bytes});
    }
  } catch (const std::exception& e) {
    answer = NumericRedistribution{e.what(), {}, 0};
  }
  return answers_.emplace(Key{element_bytes, shape, from, to}, std::move(answer)).first->second;
}

RedistributionMemo& RedistributionMemos::for_mesh(const hardware::DeviceMesh& mesh) {
  std::vector<int> key;
  for (const auto& a : mesh.axes()) key.insert(key.end(), {a.size, a.level, a.stride, a.inner_part});
  auto& memo = memos_[key];
  if (!memo) memo = std::make_unique<RedistributionMemo>(mesh);
  return *memo;
}

}  // namespace symtensor::compiler
