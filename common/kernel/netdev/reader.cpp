#include "common/kernel/netdev/reader.hpp"

#include "common/kernel/netdev/codec.hpp"

namespace rdma_exporter::ethtool {
namespace {

constexpr int kAttempts = 3;

}  // namespace

Result<DriverStats> read_driver_stats(Ioctl& ioctl, const std::string& ifname) {
  DriverStats out;
  Bytes drvinfo = build_drvinfo();
  if (Status s = ioctl.call(ifname, drvinfo); s) {
    auto driver = parse_drvinfo(drvinfo);
    if (!driver) return driver.error();
    out.driver = std::move(driver).value();
  } else if (s.error().code != EOPNOTSUPP) {
    return s.error();
  }

  for (int attempt = 1;; ++attempt) {
    Bytes info = build_stats_count();
    if (Status s = ioctl.call(ifname, info); !s) {
      if (s.error().code == EOPNOTSUPP) return out;
      return s.error();
    }
    auto count = parse_stats_count(info);
    if (!count) return count.error();
    if (!*count || **count == 0) return out;

    const uint32_t n = **count;
    Bytes names_buf = build_stat_names(n, room_for(n));
    if (Status s = ioctl.call(ifname, names_buf); !s) return s.error();
    auto names = parse_stat_names(names_buf);
    if (!names) return names.error();

    Bytes values_buf = build_stat_values(n, room_for(n));
    if (Status s = ioctl.call(ifname, values_buf); !s) return s.error();
    auto values = parse_stat_values(values_buf);
    if (!values) return values.error();

    if (names->size() == n && values->size() == n) {
      out.names = std::move(names).value();
      out.values = std::move(values).value();
      return out;
    }
    if (attempt == kAttempts) {
      return Error{EAGAIN, "ethtool statistics of " + ifname + " kept changing while read (" +
                               std::to_string(n) + " counted, " + std::to_string(names->size()) +
                               " names, " + std::to_string(values->size()) + " values)"};
    }
  }
}

}  // namespace rdma_exporter::ethtool
