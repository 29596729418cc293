#include "compiler/sharding/redistribution.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace symtensor::compiler {

namespace {

using Axes = std::vector<int>;

bool is_prefix(const Axes& head, const Axes& whole) {
  return head.size() <= whole.size() && std::equal(head.begin(), head.end(), whole.begin());
}

// Axes of t.dim_axes[dim] that come right after s's current axes of that dim and satisfy `pred`.
template <typename Pred>
Axes next_run(const TensorSharding& s, const TensorSharding& t, std::size_t dim, Pred pred) {
  Axes run;
  const Axes& want = t.dim_axes[dim];
  for (std::size_t i = s.dim_axes[dim].size(); i < want.size() && pred(want[i]); ++i) run.push_back(want[i]);
  return run;
}

// First position where s's axes of `dim` stop being a prefix of t's.
std::size_t first_mismatch(const TensorSharding& s, const TensorSharding& t, std::size_t dim) {
  const Axes& have = s.dim_axes[dim];
  const Axes& want = t.dim_axes[dim];
  std::size_t k = 0;
  while (k < have.size() && k < want.size() && have[k] == want[k]) ++k;
  return k;
}

class Planner {
 public:
  Planner(const hardware::DeviceMesh& mesh, Redistribution& r) : mesh_(mesh), r_(r) {}

  void run() {
    TensorSharding s = r_.from;
    const TensorSharding& t = r_.to;
    const std::size_t bound = 4 * mesh_.axes().size() + 4;  // each axis moves a bounded number of times
    while (!(s == t)) {
      if (r_.steps.size() > bound) throw std::logic_error("redistribution planner did not converge");
      if (!(slice_or_scatter(s, t, false) || slice_or_scatter(s, t, true) || all_to_all(s, t) || all_reduce(s, t) ||
            all_gather(s, t)))
        throw std::logic_error("redistribution planner found no move");
    }
  }

 private:
  // Appends to a dim whose axes are already a prefix of the target: free slices of
  // replicated axes, or reduce-scatters of partial ones.
  bool slice_or_scatter(TensorSharding& s, const TensorSharding& t, bool partial) {
    for (std::size_t d = 0; d < s.dim_axes.size(); ++d) {
      if (!is_prefix(s.dim_axes[d], t.dim_axes[d])) continue;
      Axes run = next_run(s, t, d, [&](int a) { return partial ? s.is_partial(a) : s.replicates(a); });
      if (run.empty()) continue;
      TensorSharding after = s;
      after.dim_axes[d].insert(after.dim_axes[d].end(), run.begin(), run.end());
      if (partial)
        std::erase_if(after.partial_axes, [&](int a) { return std::find(run.begin(), run.end(), a) != run.end(); });
      add(partial ? RedistributionKind::reduce_scatter : RedistributionKind::slice, run, static_cast<int>(d), -1, s,
          after);
      return true;
    }
    return false;
  }

  // Moves a trailing run of misplaced axes of dim i onto dim j when j is ready for exactly them.
  bool all_to_all(TensorSharding& s, const TensorSharding& t) {
    for (std::size_t i = 0; i < s.dim_axes.size(); ++i) {
      const Axes& have = s.dim_axes[i];
      for (std::size_t q = first_mismatch(s, t, i); q < have.size(); ++q) {  // longest run first
        const Axes run(have.begin() + static_cast<long>(q), have.end());
        for (std::size_t j = 0; j < s.dim_axes.size(); ++j) {
          if (j == i || !is_prefix(s.dim_axes[j], t.dim_axes[j])) continue;
          const Axes& want = t.dim_axes[j];
          const std::size_t at = s.dim_axes[j].size();
          if (at + run.size() > want.size() || !std::equal(run.begin(), run.end(), want.begin() + static_cast<long>(at)))
            continue;
          TensorSharding after = s;
          after.dim_axes[i].resize(q);
          after.dim_axes[j].insert(after.dim_axes[j].end(), run.begin(), run.end());
          add(RedistributionKind::all_to_all, run, static_cast<int>(i), static_cast<int>(j), s, after);
          return true;
        }
      }
    }
    return false;
  }

  bool all_reduce(TensorSharding& s, const TensorSharding& t) {
    Axes axes;
    for (int a : s.partial_axes)
      if (t.replicates(a)) axes.push_back(a);
    if (axes.empty()) return false;
    TensorSharding after = s;
    std::erase_if(after.partial_axes, [&](int a) { return t.replicates(a); });
    add(RedistributionKind::all_reduce, axes, -1, -1, s, after);
    return true;
  }

  // Gathers the trailing axes of the first misplaced dim that are not headed for another
  // dim (those may still leave by all-to-all); if there are none, just the last axis.
  bool all_gather(TensorSharding& s, const TensorSharding& t) {
    for (std::size_t d = 0; d < s.dim_axes.size(); ++d) {
      const Axes& have = s.dim_axes[d];
      const std::size_t k = first_mismatch(s, t, d);
      if (k == have.size()) continue;
      std::size_t q = have.size();
      while (q > k) {
        const int dest = t.dim_of(have[q - 1]);
        if (dest >= 0 && static_cast<std::size_t>(dest) != d) break;
        --q;
      }
      if (q == have.size()) q = have.size() - 1;
      const Axes run(have.begin() + static_cast<long>(q), have.end());
      TensorSharding after = s;
      after.dim_axes[d].resize(q);
      add(RedistributionKind::all_gather, run, static_cast<int>(d), -1, s, after);
      return true;
    }
    return false;
  }

  void add(RedistributionKind kind, const Axes& axes, int dim, int to_dim, TensorSharding& s,
           const TensorSharding& after) {
    RedistributionStep step;
    step.kind = kind;
    step.axes = axes;
    step.dim = dim;
    step.to_dim = to_dim;
    step.before = s;
    step.after = after;
    const GiNaC::ex elements_before = local_shape(r_.shape, s, r_.axis_sizes).elements();
    const GiNaC::ex elements_after = local_shape(r_.shape, after, r_.axis_sizes).elements();
    const GiNaC::ex n = group_size(axes, r_.axis_sizes);
    GiNaC::ex elements = 0;
    switch (kind) {
      case RedistributionKind::slice: break;
      case RedistributionKind::all_reduce: elements = elements_before; break;
      case RedistributionKind::all_gather: elements = n * elements_before; break;
      case RedistributionKind::reduce_scatter: elements = n * elements_after; break;
      case RedistributionKind::all_to_all:
        // Padding can make the two sides differ; the buffer must hold the larger.
        elements = GiNaC::is_a<GiNaC::numeric>(elements_before) && GiNaC::is_a<GiNaC::numeric>(elements_after) &&
                           elements_after > elements_before
                       ? elements_after
                       : elements_before;
        break;
    }
    step.bytes = (elements * r_.element_bytes).expand();
    step.group = mesh_.group_shape(axes);
    r_.steps.push_back(std::move(step));
    s = after;
  }

  const hardware::DeviceMesh& mesh_;
  Redistribution& r_;
};

std::string describe(const TensorSharding& from, const TensorSharding& to, const hardware::DeviceMesh& mesh) {
  return "redistribution " + to_string(from, mesh) + " -> " + to_string(to, mesh);
}

}  // namespace

std::string_view to_string(RedistributionKind kind) {
  switch (kind) {
    case RedistributionKind::slice: return "slice";
    case RedistributionKind::all_reduce: return "all_reduce";
    case RedistributionKind::reduce_scatter: return "reduce_scatter";
    case RedistributionKind::all_gather: return "all_gather";
    case RedistributionKind::all_to_all: return "all_to_all";
  }
  return "?";
}

std::optional<hardware::Collective> RedistributionStep::collective() const {
  switch (kind) {
    case RedistributionKind::slice: return std::nullopt;
    case RedistributionKind::all_reduce: return hardware::Collective::all_reduce;
    case RedistributionKind::reduce_scatter: return hardware::Collective::reduce_scatter;
    case RedistributionKind::all_gather: return hardware::Collective::all_gather;
    case RedistributionKind::all_to_all: return hardware::Collective::all_to_all;
  }
  return std::nullopt;
}

GiNaC::ex Redistribution::total_bytes() const {
  GiNaC::ex sum = 0;
  for (const auto& step : steps) sum += step.bytes;
  return sum;
}

Redistribution plan_redistribution(const TensorSharding& from, const TensorSharding& to,
                                   const std::vector<GiNaC::ex>& shape, const GiNaC::ex& element_bytes,
                                   const hardware::DeviceMesh& mesh) {
  return plan_redistribution(from, to, shape, element_bytes, mesh, numeric_axis_sizes(mesh));
}

Redistribution plan_redistribution(const TensorSharding& from, const TensorSharding& to,
                                   const std::vector<GiNaC::ex>& shape, const GiNaC::ex& element_bytes,
                                   const hardware::DeviceMesh& mesh, const AxisSizes& axis_sizes) {
  from.validate(mesh);
  to.validate(mesh);
  const auto fail = [&](const std::string& why) { throw std::runtime_error(describe(from, to, mesh) + ": " + why); };
  if (axis_sizes.size() != mesh.axes().size())
    fail(std::to_string(axis_sizes.size()) + " axis sizes for a mesh of " + std::to_string(mesh.axes().size()) + " axes");
  if (from.rank() != static_cast<int>(shape.size()) || to.rank() != static_cast<int>(shape.size()))
    fail("the tensor has " + std::to_string(shape.size()) + " dims");
  for (int a : to.partial_axes)
    if (!from.is_partial(a))
      fail("cannot make a partial sum over mesh axis '" + mesh.axes()[static_cast<std::size_t>(a)].name +
           "' (that is an operator's choice, not a redistribution)");

  Redistribution r;
  r.from = from;
  r.to = to;
  r.shape = shape;
  r.element_bytes = element_bytes;
  r.axis_sizes = axis_sizes;
  Planner(mesh, r).run();
  return r;
}

std::pair<TensorSharding, TensorSharding> gradient_shardings(const TensorSharding& from, const TensorSharding& to) {
  TensorSharding grad_from = from;
  TensorSharding grad_to = to;
  grad_from.partial_axes.clear();
  grad_to.partial_axes.clear();
  for (std::size_t d = 0; d < from.dim_axes.size(); ++d)
    for (int a : from.dim_axes[d])
      if (to.replicates(a)) grad_to.partial_axes.push_back(a);
  std::sort(grad_to.partial_axes.begin(), grad_to.partial_axes.end());
  return {grad_to, grad_from};
}

Redistribution plan_dual(const Redistribution& forward, const hardware::DeviceMesh& mesh) {
  const auto [grad_to, grad_from] = gradient_shardings(forward.from, forward.to);
  return plan_redistribution(grad_to, grad_from, forward.shape, forward.element_bytes, mesh, forward.axis_sizes);
}

std::string to_string(const Redistribution& r, const hardware::DeviceMesh& mesh) {
  std::ostringstream os;
  for (const auto& step : r.steps) {
    os << to_string(step.kind) << " {";
    for (std::size_t i = 0; i < step.axes.size(); ++i)
      os << (i ? "," : "") << mesh.axes().at(static_cast<std::size_t>(step.axes[i])).name;
    os << "}";
    if (step.dim >= 0) os << " dim " << step.dim;
    if (step.to_dim >= 0) os << "->" << step.to_dim;
    os << ": " << to_string(step.before, mesh) << " -> " << to_string(step.after, mesh) << ", " << step.bytes << " B\n";
  }
  return os.str();
}

}  // namespace symtensor::compiler
