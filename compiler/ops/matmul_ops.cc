// MatMul, Gemm, Einsum: contractions. A multiply-add counts 2 FLOPs; the reduction (k)
// loops are marked `reduction` so cutting them implies a partial-sum reduction.
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

// Contracted extents must agree; a number wins over a symbol.
GiNaC::ex contracted_extent(const GiNaC::ex& a, const GiNaC::ex& b, const char* what) {
  if (same_extent(a, b)) return a;
  bool a_num = GiNaC::is_a<GiNaC::numeric>(a), b_num = GiNaC::is_a<GiNaC::numeric>(b);
  if (a_num && b_num) {
    std::ostringstream msg;
    msg << what << ": contracted dims differ (" << a << " vs " << b << ")";
    throw std::runtime_error(msg.str());
  }
  return b_num ? b : a;
}

// ---- MatMul: numpy matmul semantics, 1-D operands promoted then their dim removed ----
struct MatMulDims {
  Shape batch;         // broadcast batch dims of the output
  Shape a_batch, b_batch;
  bool has_m = true, has_n = true;
  GiNaC::ex m = 1, n = 1, k = 1;
};

MatMulDims matmul_dims(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) throw std::runtime_error("MatMul operands must have rank >= 1");
  MatMulDims d;
  d.has_m = a.size() >= 2;
  d.has_n = b.size() >= 2;
  GiNaC::ex ka = a.back(), kb = d.has_n ? b[b.size() - 2] : b.back();
  d.k = contracted_extent(ka, kb, "MatMul");
  if (d.has_m) d.m = a[a.size() - 2];
  if (d.has_n) d.n = b.back();
  d.a_batch.assign(a.begin(), a.end() - std::min<std::size_t>(a.size(), 2));
  d.b_batch.assign(b.begin(), b.end() - std::min<std::size_t>(b.size(), 2));
  d.batch = broadcast_shapes({d.a_batch, d.b_batch});
  return d;
}

std::vector<OutputInfo> matmul_infer(const OpContext& ctx) {
  MatMulDims d = matmul_dims(input_shape(ctx, 0), input_shape(ctx, 1));
  Shape out = d.batch;
  if (d.has_m) out.push_back(d.m);
  if (d.has_n) out.push_back(d.n);
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace matmul_space(const OpContext& ctx) {
  MatMulDims d = matmul_dims(input_shape(ctx, 0), input_shape(ctx, 1));
  IterationSpace s;
  s.kind = OpKind::gemm;
  for (std::size_t i = 0; i < d.batch.size(); ++i) {
    if (d.batch.size() == 1) {
      add_loop(s, "b", d.batch[i]);
    } else {
      add_indexed_loop(s, "b", i, d.batch[i]);
    }
  }
  int m = d.has_m ? add_loop(s, "m", d.m) : -1;
  int n = d.has_n ? add_loop(s, "n", d.n) : -1;
  int k = add_loop(s, "k", d.k, /*reduction=*/true);
  std::vector<int> a = broadcast_dim_map(d.a_batch, d.batch), b = broadcast_dim_map(d.b_batch, d.batch);
  if (d.has_m) a.push_back(m);
  a.push_back(k);
  b.push_back(k);
  if (d.has_n) b.push_back(n);
  std::vector<int> out = identity_dims(d.batch.size());
  if (d.has_m) out.push_back(m);
  if (d.has_n) out.push_back(n);
  s.input_dims = {a, b};
  s.output_dims = {out};
  s.flops = 2 * product(d.batch) * d.m * d.n * d.k;
  s.bytes = io_bytes(ctx);
  return s;
}

// ---- Gemm: Y = alpha op(A) op(B) + beta C ----
struct GemmDims { GiNaC::ex m, n, k; bool trans_a, trans_b; };

GemmDims gemm_dims(const OpContext& ctx) {
  const Shape& a = input_shape(ctx, 0);
  const Shape& b = input_shape(ctx, 1);
  if (a.size() != 2 || b.size() != 2) throw std::runtime_error("Gemm operands must have rank 2");
  GemmDims d;
  d.trans_a = ctx.node.attr_int("transA", 0) != 0;
  d.trans_b = ctx.node.attr_int("transB", 0) != 0;
  d.m = d.trans_a ? a[1] : a[0];
  d.n = d.trans_b ? b[0] : b[1];
  d.k = contracted_extent(d.trans_a ? a[0] : a[1], d.trans_b ? b[1] : b[0], "Gemm");
  return d;
}

std::vector<OutputInfo> gemm_infer(const OpContext& ctx) {
  GemmDims d = gemm_dims(ctx);
  return {output(input(ctx, 0).dtype, {d.m, d.n})};
}

IterationSpace gemm_space(const OpContext& ctx) {
  GemmDims d = gemm_dims(ctx);
  IterationSpace s;
  s.kind = OpKind::gemm;
  int m = add_loop(s, "m", d.m), n = add_loop(s, "n", d.n), k = add_loop(s, "k", d.k, true);
  s.input_dims.push_back(d.trans_a ? std::vector<int>{k, m} : std::vector<int>{m, k});
  s.input_dims.push_back(d.trans_b ? std::vector<int>{n, k} : std::vector<int>{k, n});
  s.flops = 2 * d.m * d.n * d.k;
  if (has_input(ctx, 2)) {
    s.input_dims.push_back(broadcast_dim_map(input_shape(ctx, 2), {d.m, d.n}));
    s.flops += d.m * d.n;  // + beta*C
  }
  s.output_dims = {{m, n}};
  s.bytes = io_bytes(ctx);
  return s;
}

// ---- Einsum: every letter is a loop; letters absent from the output are reductions ----
// An ellipsis stands for broadcast dims named "...0", "...1" (outermost first).
struct EinsumTerm {
  std::vector<std::string> labels;  // one per dim, ellipsis dims expanded
};

struct Einsum {
  std::vector<EinsumTerm> inputs;
  EinsumTerm output;
  std::vector<std::string> loop_order;
  std::map<std::string, GiNaC::ex> extent;
};

std::vector<std::string> parse_term(const std::string& term, std::size_t rank, std::size_t ellipsis_rank,
                                    bool is_output) {
  std::vector<std::string> labels;
  std::size_t letters = 0;
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      std::size_t n = is_output ? ellipsis_rank : rank - std::min(rank, term.size() - 3);
      for (std::size_t e = ellipsis_rank - n; e < ellipsis_rank; ++e) labels.push_back("..." + std::to_string(e));
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      labels.emplace_back(1, term[i]);
      ++letters;
    } else {
      throw std::runtime_error("Einsum equation has an invalid character '" + std::string(1, term[i]) + "'");
    }
  }
  if (!is_output && labels.size() != rank) {
    throw std::runtime_error("Einsum term '" + term + "' does not match operand rank " + std::to_string(rank));
  }
  return labels;
}

Einsum parse_einsum(const OpContext& ctx) {
  std::string eq;
  for (char c : ctx.node.attr_string("equation", "")) if (c != ' ') eq += c;
  if (eq.empty()) throw std::runtime_error("Einsum has no equation");
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.inputs.size()) {
    throw std::runtime_error("Einsum equation has " + std::to_string(terms.size()) + " terms for " +
                             std::to_string(ctx.inputs.size()) + " inputs");
  }
  Einsum e;
  std::size_t ellipsis_rank = 0;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].find("...") != std::string::npos) {
      ellipsis_rank = std::max(ellipsis_rank, input_shape(ctx, t).size() - (terms[t].size() - 3));
    }
  }
  for (std::size_t e2 = 0; e2 < ellipsis_rank; ++e2) e.loop_order.push_back("..." + std::to_string(e2));
  std::map<std::string, int> uses;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const Shape& shape = input_shape(ctx, t);
    EinsumTerm term{parse_term(terms[t], shape.size(), ellipsis_rank, false)};
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const std::string& l = term.labels[d];
      auto it = e.extent.find(l);
      if (it == e.extent.end()) {
        e.extent[l] = shape[d];
        if (l[0] != '.') e.loop_order.push_back(l);
      } else if (is_one(it->second)) {
        it->second = shape[d];
      } else if (!is_one(shape[d])) {
        it->second = contracted_extent(it->second, shape[d], "Einsum");
      }
      ++uses[l];
    }
    e.inputs.push_back(term);
  }
  if (arrow != std::string::npos) {
    e.output.labels = parse_term(eq.substr(arrow + 2), 0, ellipsis_rank, true);
  } else {
    for (std::size_t e2 = 0; e2 < ellipsis_rank; ++e2) e.output.labels.push_back("..." + std::to_string(e2));
    std::set<std::string> once;
    for (const auto& [l, n] : uses) if (n == 1 && l[0] != '.') once.insert(l);
    e.output.labels.insert(e.output.labels.end(), once.begin(), once.end());
  }
  for (const auto& l : e.output.labels) {
    if (!e.extent.count(l)) throw std::runtime_error("Einsum output label '" + l + "' is not in any input");
  }
  return e;
}

}  // namespace

std::vector<OutputInfo> ops::einsum_infer(const OpContext& ctx) {
  Einsum e = parse_einsum(ctx);
  Shape out;
  for (const auto& l : e.output.labels) out.push_back(e.extent.at(l));
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace ops::einsum_space(const OpContext& ctx) {
  Einsum e = parse_einsum(ctx);
  std::set<std::string> in_output(e.output.labels.begin(), e.output.labels.end());
  IterationSpace s;
  std::map<std::string, int> loop_of;
  bool has_reduction = false;
  GiNaC::ex points = 1;
  for (const auto& l : e.loop_order) {
    bool red = !in_output.count(l);
    has_reduction |= red;
    loop_of[l] = add_loop(s, l, e.extent.at(l), red);
    points *= e.extent.at(l);
  }
  for (std::size_t t = 0; t < e.inputs.size(); ++t) {
    const Shape& shape = input_shape(ctx, t);
    std::vector<int> dims;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      int loop = loop_of.at(e.inputs[t].labels[d]);
      dims.push_back(is_one(shape[d]) && !is_one(s.loops[loop].extent) ? -1 : loop);
    }
    s.input_dims.push_back(dims);
  }
  std::vector<int> out;
  for (const auto& l : e.output.labels) out.push_back(loop_of.at(l));
  s.output_dims = {out};
  const std::size_t n = e.inputs.size();
  s.kind = n >= 2 ? OpKind::gemm : (has_reduction ? OpKind::reduction : OpKind::data_movement);
  // Per point: one multiply per extra operand, one add when summing.
  s.flops = points * static_cast<long>((n - 1) + (has_reduction ? 1 : 0));
  s.bytes = io_bytes(ctx);
  return s;
}

void register_matmul_ops(OpRegistry& registry) {
  registry.add("", "MatMul", {matmul_infer, matmul_space});
  registry.add("", "Gemm", {gemm_infer, gemm_space});
  registry.add("", "Einsum", {einsum_infer, einsum_space});
}

}  // namespace symtensor::compiler
