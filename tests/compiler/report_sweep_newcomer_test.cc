// The sweep page as a newcomer reads it (#34): the fastest point beside the cheapest, one's
// own prices with --price (and the others marked illustrative in the table itself), and a
// y-axis title that does not sit on the tick labels.
#include <regex>

#include <gtest/gtest.h>

#include "compiler/report/charts.h"
#include "compiler/report/report_files.h"
#include "compiler/report/sweep.h"
#include "compiler/report/sweep_merge.h"
#include "compiler/report/units.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

// The rotated y-axis title ends left of the widest tick label, at every size of number.
TEST(LineChart, YTitleClearsTheTickLabels) {
  for (double ymax : {0.5, 80.0, 4.2e5, 1.234e6, 3.3e9}) {
    const std::string svg =
        line_chart({{"a", {{8, ymax / 3}, {64, ymax}}}}, "GPUs", "throughput (tokens/s)", "scaling");
    const std::regex title(R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="12(?:\.0)?" text-anchor="middle" fill="#222" transform="rotate\(-90)re");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, title)) << svg;
    const double title_x = std::stod(m[1]);
    const std::regex tick(R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="11(?:\.0)?" text-anchor="end" fill="#444">([^<]*)</text>)re");
    int ticks = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it, ++ticks) {
      const double right = std::stod((*it)[1]);
      const std::string label = (*it)[2];
      // The title's descent reaches 3 px right of its x; each label starts 0.6 em per character left of its end.
      EXPECT_LT(title_x + 3, right - 0.6 * 11 * label.size()) << "ymax " << ymax << ": tick '" << label << "'";
    }
    EXPECT_GE(ticks, 3);
    EXPECT_GE(title_x, 9);  // inside the canvas
  }
}

}  // namespace
}  // namespace symtensor::compiler
