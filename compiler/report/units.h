#pragma once
// Moved to compiler/base/units.h (the ladder's bottom floor: compiler/README.md); include that.
#include "compiler/base/units.h"
