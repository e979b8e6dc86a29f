#include "collectors/ethtool/options.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "collectors/device_filter.hpp"
#include "collectors/ethtool/mapping.hpp"

namespace rdma_exporter {

void parse_ethtool_options(Walker& w, const YAML::Node& node, const std::string& path,
                           EthtoolOptions& e) {
  auto mapping = [&w](const YAML::Node& n, const std::string& p, EthtoolMapping& m) {
    const Walker::Section section = w.section();
    std::string scale;
    w.mapping(n, p,
              {{"driver", w.optional_string_into(m.driver, device_pattern_problem)},
               {"stat", w.string(m.stat)},
               {"metric", w.string(m.metric)},
               {"direction", w.string(m.direction)},
               {"reason", w.string(m.reason)},
               {"scale", w.string(scale)}});
    if (!scale.empty()) {
      double v = 0;
      auto [end, ec] = std::from_chars(scale.data(), scale.data() + scale.size(), v);
      if (ec != std::errc() || end != scale.data() + scale.size()) {
        return w.error_at(n["scale"], p + ".scale",
                          "expected a number such as 1 or 1e-6, got \"" + scale + "\"");
      }
      m.scale = v;
    }
    if (section.failed()) return;
    if (std::string problem = ethtool::mapping_problem(m); !problem.empty()) {
      w.error_at(n, p, problem);
    }
  };
  w.mapping(node, path,
            {{"raw_stats", w.boolean(e.raw_stats)},
             {"raw_stats_include", w.string_list(e.raw_stats_include, device_pattern_problem)},
             {"mappings", w.list_of<EthtoolMapping>(e.mappings, mapping)}});
}

}  // namespace rdma_exporter
