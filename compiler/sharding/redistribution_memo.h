#pragma once
// plan_redistribution on numeric shapes, remembered. Repeated layers, and the many plans a
// search prices, ask the same few questions (this layout to that one, for a tensor of this
// shape and element size), so each is planned once with GiNaC and answered from the memo
// afterwards. One memo per mesh; RedistributionMemos keeps one for every mesh it is asked
// about. Not thread-safe.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/sharding/tensor_sharding.h"
#include "hardware/collectives.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

struct NumericCollective {
  hardware::Collective kind = hardware::Collective::all_reduce;
  std::vector<int> axes;       // mesh axis ids of the group
  hardware::GroupShape group;
  double bytes = 0;            // S as nccl-tests defines it
};

struct NumericRedistribution {
  std::string error;                          // set when `to` cannot be reached (plan_redistribution's message)
  std::vector<NumericCollective> collectives;  // in order; local slices left out
  double total_bytes = 0;
};

class RedistributionMemo {
 public:
  explicit RedistributionMemo(hardware::DeviceMesh mesh) : mesh_(std::move(mesh)) {}
  const hardware::DeviceMesh& mesh() const { return mesh_; }

  // The answer stays valid (same address) for the memo's lifetime.
  const NumericRedistribution& plan(const TensorSharding& from, const TensorSharding& to, const std::vector<long>& shape,
                                    double element_bytes);

 private:
  struct Key {
    double element_bytes = 0;
    std::vector<long> shape;
    TensorSharding from, to;
  };
  struct KeyView {  // looked up by reference: a hit copies nothing
    double element_bytes;
    const std::vector<long>& shape;
    const TensorSharding &from, &to;
  };
  struct Less {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const;
  };
  hardware::DeviceMesh mesh_;
  std::map<Key, NumericRedistribution, Less> answers_;
};

class RedistributionMemos {
 public:
  RedistributionMemo& for_mesh(const hardware::DeviceMesh& mesh);

 private:
  std::map<std::vector<int>, std::unique_ptr<RedistributionMemo>> memos_;  // by (size, level, stride) of every axis
};

}  // namespace symtensor::compiler
