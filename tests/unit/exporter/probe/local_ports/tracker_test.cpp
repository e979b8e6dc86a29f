#include "exporter/probe/local_ports/tracker.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace rdma_exporter::probe {
namespace {

using Release = DeviceChanges::Release;

struct Case {
  const char* what;
  std::vector<DeviceId> list;
  std::string pattern;  // "" : every device
  std::map<std::string, uint64_t> open;
  std::map<std::string, std::string> states;
  // Expected:
  std::vector<Release> release;
  std::vector<std::string> excluded;
  std::vector<DeviceId> to_open;
  std::vector<std::string> kept;
  std::vector<std::string> forget;
};

TEST(ProbeDeviceChanges, EachLookAtTheListOpensReleasesKeepsAndForgets) {
  const std::vector<Case> cases = {
      {"a new device is opened",
       {{"mlx5_0", 0x11}},
       "",
       {},
       {},
       {},
       {},
       {{"mlx5_0", 0x11}},
       {},
       {}},
      {"an open device with the same GUID is kept",
       {{"mlx5_0", 0x11}, {"mlx5_1", 0x12}},
       "",
       {{"mlx5_0", 0x11}, {"mlx5_1", 0x12}},
       {{"mlx5_0", "in_use"}, {"mlx5_1", "in_use"}},
       {},
       {},
       {},
       {"mlx5_0", "mlx5_1"},
       {}},
      {"another GUID under the same name is released and opened anew",
       {{"mlx5_0", 0x21}},
       "",
       {{"mlx5_0", 0x11}},
       {{"mlx5_0", "in_use"}},
       {{"mlx5_0", "replaced"}},
       {},
       {{"mlx5_0", 0x21}},
       {},
       {}},
      {"a device the pattern no longer matches is released and excluded",
       {{"mlx5_0", 0x11}, {"rxe0", 0x31}},
       "mlx5_.*",
       {{"mlx5_0", 0x11}, {"rxe0", 0x31}},
       {{"mlx5_0", "in_use"}, {"rxe0", "in_use"}},
       {{"rxe0", "excluded"}},
       {"rxe0"},
       {},
       {"mlx5_0"},
       {}},
      {"an excluded device that is not open is only excluded",
       {{"rxe0", 0x31}},
       "mlx5_.*",
       {},
       {{"rxe0", "excluded"}},
       {},
       {"rxe0"},
       {},
       {},
       {}},
      {"an open device no longer listed is released as removed; its state stays",
       {{"mlx5_1", 0x12}},
       "",
       {{"mlx5_0", 0x11}, {"mlx5_1", 0x12}},
       {{"mlx5_0", "in_use"}, {"mlx5_1", "in_use"}},
       {{"mlx5_0", "removed"}},
       {},
       {},
       {"mlx5_1"},
       {}},
      {"devices that left while not in use are forgotten, gone ones are not",
       {},
       "",
       {},
       {{"bad0", "failed"}, {"mlx5_0", "gone"}, {"rxe0", "excluded"}},
       {},
       {},
       {},
       {},
       {"bad0", "rxe0"}},
      {"a failed device still listed is tried again",
       {{"bad0", 0x41}},
       "",
       {},
       {{"bad0", "failed"}},
       {},
       {},
       {{"bad0", 0x41}},
       {},
       {}},
      {"a gone device that returns is opened again",
       {{"mlx5_0", 0x11}},
       "",
       {},
       {{"mlx5_0", "gone"}},
       {},
       {},
       {{"mlx5_0", 0x11}},
       {},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Pattern pattern = c.pattern.empty() ? Pattern() : Pattern::checked(c.pattern);
    const DeviceChanges got = device_changes(c.list, pattern, c.open, c.states);
    EXPECT_EQ(got.release, c.release);
    EXPECT_EQ(got.excluded, c.excluded);
    EXPECT_EQ(got.open, c.to_open);
    EXPECT_EQ(got.kept, c.kept);
    EXPECT_EQ(got.forget, c.forget);
  }
}

}  // namespace
}  // namespace rdma_exporter::probe
