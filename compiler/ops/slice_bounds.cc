#include "compiler/ops/slice_bounds.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler::ops {

namespace {
// Exporters write INT64_MAX (or INT32_MAX) for "to the end" and INT64_MIN for "before 0".
constexpr std::int64_t kHuge = std::int64_t{1} << 30;
}  // namespace

void resolve_slice(const GiNaC::ex& dim, const GiNaC::ex& start, const GiNaC::ex& end, SliceAxis& a) {
  auto d = as_int(dim), s = as_int(start), e = as_int(end);
  const std::int64_t step = a.step;
  if (d && s && e) {
    std::int64_t st = *s, en = *e, n = *d, len = 0;
    if (st < 0) st += n;
    if (en < 0) en += n;
    if (step > 0) {
      st = std::clamp<std::int64_t>(st, 0, n);
      en = std::clamp<std::int64_t>(en, 0, n);
      len = en > st ? (en - st + step - 1) / step : 0;
    } else {
      st = std::clamp<std::int64_t>(st, 0, n - 1);
      en = std::clamp<std::int64_t>(en, -1, n - 1);
      len = st > en ? (st - en - step - 1) / -step : 0;
    }
    a.extent = GiNaC::ex(static_cast<long>(len));
    a.numeric_start = st;
    return;
  }
  if (step > 0) {
    GiNaC::ex st = start, en = end;
    if (s) st = *s < 0 ? dim + *s : (*s >= kHuge ? dim : GiNaC::ex(static_cast<long>(*s)));
    if (e) en = *e < 0 ? (*e <= -kHuge ? GiNaC::ex(0) : dim + *e) : (*e >= kHuge ? dim : GiNaC::ex(static_cast<long>(*e)));
    a.extent = simplify(step == 1 ? en - st : div_ceil(en - st, step));
    if (s && *s >= 0 && *s < kHuge) a.numeric_start = *s;
    return;
  }
  const bool from_last = s && (*s == -1 || *s >= kHuge);
  const bool to_first = e && *e <= -kHuge;
  if (!from_last || !to_first) throw std::runtime_error("Slice with a negative step over a symbolic extent is only supported as a full reversal");
  a.extent = div_ceil(dim, -step);
}

}  // namespace symtensor::compiler::ops
