#pragma once
// Moved to compiler/analysis/transformer_structure.h (compiler/README.md's ladder); include that.
#include "compiler/analysis/transformer_structure.h"
