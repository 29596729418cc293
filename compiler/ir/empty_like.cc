#include "compiler/ir/empty_like.h"

namespace symtensor::compiler {

Graph empty_like(const Graph& graph) {
  Graph out;
  out.name = graph.name;
  out.source = graph.source;
  out.metadata = graph.metadata;
  out.symbols = graph.symbols;
  out.batch_dim = graph.batch_dim;
  out.sequence_dim = graph.sequence_dim;
  return out;
}

}  // namespace symtensor::compiler
