#pragma once
// Moved to compiler/strategies/export_target.h (compiler/README.md's ladder); include that.
#include "compiler/strategies/export_target.h"
