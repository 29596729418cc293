#pragma once
// The one way to include GiNaC in SymTensor. CLN (under GiNaC) defines a macro
// `Mutable(type,x)` that breaks any protobuf/ONNX header included after it.
#include <ginac/ginac.h>
#undef Mutable
