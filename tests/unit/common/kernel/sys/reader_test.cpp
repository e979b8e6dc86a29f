#include "common/kernel/sys/reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "tests/support/fixtures.hpp"
#include "tests/support/sysfs_files.hpp"

namespace rdma_exporter::sysfs {
namespace {

namespace fs = std::filesystem;

const Counter* find(const std::vector<Counter>& cs, const std::string& name) {
  auto it = std::find_if(cs.begin(), cs.end(), [&](const Counter& c) { return c.name == name; });
  return it == cs.end() ? nullptr : &*it;
}

TEST(SysfsReader, Mlx5LikeDevice) {
  Reader reader(testing::make_sysfs_fixture("mlx5:1:2"));
  auto names = reader.device_names();
  ASSERT_TRUE(names);
  ASSERT_EQ(*names, std::vector<std::string>{"mlx5_0"});
  ReadNotes notes;
  auto d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_EQ(notes.unavailable, 0U);
  EXPECT_EQ(d->fw_ver, "16.35.2000");
  EXPECT_EQ(d->board_id, "MT_0000000012");
  EXPECT_EQ(d->hca_type, "MT4119");
  EXPECT_EQ(d->node_desc, "host01 mlx5_0");
  EXPECT_TRUE(d->hw_counters.empty());
  ASSERT_EQ(d->ports.size(), 2U);
  const Port& p = d->ports[0];
  EXPECT_EQ(p.index, 1U);
  EXPECT_DOUBLE_EQ(*p.rate_bytes_per_second, 100e9 / 8);
  EXPECT_EQ(p.link_layer, "InfiniBand");
  EXPECT_TRUE(p.has_pma);
  EXPECT_EQ(p.pma_counters.size(), 21U);
  ASSERT_NE(find(p.pma_counters, "VL15_dropped"), nullptr);
  ASSERT_NE(find(p.pma_counters, "port_xmit_data"), nullptr);
  EXPECT_EQ(d->ports[1].index, 2U);
}

// A device whose every file holds a value no other file has: a field read
// from a neighbouring file, or a port's counters from the next port's
// directory, comes out wrong.
TEST(SysfsReader, EveryValueComesFromItsOwnFile) {
  testing::SysfsFiles sys;
  const std::string dev = "class/infiniband/mlx5_3/";
  sys.file(dev + "fw_ver", "20.31.1014\n");
  sys.file(dev + "board_id", "MT_0000000223\n");
  sys.file(dev + "hca_type", "MT4123\n");
  sys.file(dev + "node_desc", "node07 HCA-1\n");
  sys.file(dev + "hw_counters/lifespan", "12\n");
  sys.file(dev + "hw_counters/cmds_err", "31\n");
  sys.file(dev + "hw_counters/keep_alive_rcvd", "32\n");
  sys.file(dev + "ports/1/rate", "200 Gb/sec (4X HDR)\n");
  sys.file(dev + "ports/1/link_layer", "InfiniBand\n");
  sys.file(dev + "ports/1/counters/port_rcv_data", "1101\n");
  sys.file(dev + "ports/1/counters/port_xmit_data", "1102\n");
  sys.file(dev + "ports/1/counters/symbol_error", "1103\n");
  sys.file(dev + "ports/1/hw_counters/out_of_sequence", "1201\n");
  sys.file(dev + "ports/1/hw_counters/rnr_nak_retry_err", "1202\n");
  sys.file(dev + "ports/2/rate", "25 Gb/sec (1X EDR)\n");
  sys.file(dev + "ports/2/link_layer", "Ethernet\n");
  sys.file(dev + "ports/2/counters/port_rcv_data", "2101\n");
  sys.file(dev + "ports/2/counters/port_xmit_data", "2102\n");
  sys.file(dev + "ports/2/counters/symbol_error", "2103\n");
  sys.file(dev + "ports/2/hw_counters/out_of_sequence", "2201\n");
  sys.file(dev + "ports/2/hw_counters/rnr_nak_retry_err", "2202\n");

  Reader reader(sys.root());
  ReadNotes notes;
  auto d = reader.read_device("mlx5_3", notes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(notes.problems.empty()) << notes.problems.front();
  EXPECT_EQ(notes.unavailable, 0U);
  EXPECT_EQ(d->name, "mlx5_3");
  EXPECT_EQ(d->fw_ver, "20.31.1014");
  EXPECT_EQ(d->board_id, "MT_0000000223");
  EXPECT_EQ(d->hca_type, "MT4123");
  EXPECT_EQ(d->node_desc, "node07 HCA-1");
  auto values = [](const std::vector<Counter>& cs) {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const Counter& c : cs) out.emplace_back(c.name, c.value);
    return out;
  };
  using Values = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(values(d->hw_counters), (Values{{"cmds_err", 31}, {"keep_alive_rcvd", 32}}));
  ASSERT_EQ(d->ports.size(), 2U);
  EXPECT_EQ(d->ports[0].index, 1U);
  EXPECT_DOUBLE_EQ(d->ports[0].rate_bytes_per_second.value_or(0), 200e9 / 8);
  EXPECT_EQ(d->ports[0].link_layer, "InfiniBand");
  EXPECT_TRUE(d->ports[0].has_pma);
  EXPECT_EQ(values(d->ports[0].pma_counters),
            (Values{{"port_rcv_data", 1101}, {"port_xmit_data", 1102}, {"symbol_error", 1103}}));
  EXPECT_EQ(d->ports[1].index, 2U);
  EXPECT_DOUBLE_EQ(d->ports[1].rate_bytes_per_second.value_or(0), 25e9 / 8);
  EXPECT_EQ(d->ports[1].link_layer, "Ethernet");
  EXPECT_EQ(values(d->ports[1].pma_counters),
            (Values{{"port_rcv_data", 2101}, {"port_xmit_data", 2102}, {"symbol_error", 2103}}));

  for (uint32_t port : {1U, 2U}) {
    auto hw = reader.port_hw_counters("mlx5_3", port, notes);
    ASSERT_TRUE(hw) << port;
    EXPECT_EQ(values(*hw), (Values{{"out_of_sequence", port * 1000 + 201},
                                   {"rnr_nak_retry_err", port * 1000 + 202}}))
        << port;
  }
  EXPECT_TRUE(notes.problems.empty());
}

// The rate's unit is matched in every byte: a rate whose "Gb/sec" or
// "Mb/sec" is wrong in any one byte is not understood.
TEST(SysfsReader, ARateUnitWrongInAnyByteIsNotUnderstood) {
  for (const std::string unit : {"Gb/sec", "Mb/sec"}) {
    ASSERT_TRUE(parse_rate("100 " + unit + " (4X EDR)")) << unit;
    for (std::size_t i = 0; i < unit.size(); ++i) {
      std::string wrong = unit;
      wrong[i] = 'x';
      EXPECT_FALSE(parse_rate("100 " + wrong + " (4X EDR)")) << wrong;
    }
  }
}

// Only the kernel's "N/A" marks a value as not available: a text that
// differs from it in any one byte is a value like any other (an attribute's
// text, or a counter file that does not hold a number).
TEST(SysfsReader, OnlyTheKernelsNotAvailableMarkIsUnavailable) {
  const std::string mark = "N/A";
  for (std::size_t i = 0; i < mark.size(); ++i) {
    std::string other = mark + " (no PMA)";
    other[i] = 'x';
    testing::SysfsFiles sys;
    sys.file("class/infiniband/mlx5_0/board_id", other + "\n");
    sys.file("class/infiniband/mlx5_0/ports/1/counters/symbol_error", other + "\n");
    Reader reader(sys.root());
    ReadNotes notes;
    auto d = reader.read_device("mlx5_0", notes);
    ASSERT_TRUE(d) << other;
    EXPECT_EQ(d->board_id, other);
    EXPECT_EQ(notes.unavailable, 0U) << other;
    ASSERT_EQ(notes.problems.size(), 1U) << other;
    EXPECT_NE(notes.problems[0].find("symbol_error: not a counter value"), std::string::npos)
        << notes.problems[0];
  }
  // The mark itself is unavailable in both.
  testing::SysfsFiles sys;
  sys.file("class/infiniband/mlx5_0/board_id", "N/A\n");
  sys.file("class/infiniband/mlx5_0/ports/1/counters/symbol_error", "N/A (no PMA)\n");
  Reader reader(sys.root());
  ReadNotes notes;
  auto d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->board_id);
  EXPECT_EQ(notes.unavailable, 2U);
  EXPECT_TRUE(notes.problems.empty());
}

TEST(SysfsReader, RxeLikeDeviceHasNoPmaAndNoLifespan) {
  Reader reader(testing::make_sysfs_fixture("rxe"));
  ReadNotes notes;
  auto d = reader.read_device("rxe0", notes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_FALSE(d->fw_ver);  // empty file: nothing to report
  ASSERT_EQ(d->ports.size(), 1U);
  EXPECT_FALSE(d->ports[0].has_pma);
  EXPECT_TRUE(d->ports[0].pma_counters.empty());
  EXPECT_EQ(d->ports[0].link_layer, "Ethernet");
  EXPECT_DOUBLE_EQ(*d->ports[0].rate_bytes_per_second, 10e9 / 8);
}

TEST(SysfsReader, DeviceLevelHwCountersSkipLifespan) {
  Reader reader(testing::make_sysfs_fixture("efa"));
  ReadNotes notes;
  auto d = reader.read_device("efa_0", notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->hw_counters.size(), 12U);
  EXPECT_EQ(find(d->hw_counters, "lifespan"), nullptr);
  EXPECT_NE(find(d->hw_counters, "submitted_cmds"), nullptr);
}

// Port hw_counters/: every counter file but "lifespan"; a port without the
// directory has none.
TEST(SysfsReader, PortHwCounters) {
  Reader reader(testing::make_sysfs_fixture("mlx5:1:2 rxe efa"));
  ReadNotes notes;
  EXPECT_EQ(reader.port_numbers("mlx5_0", notes), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(reader.port_numbers("rxe0", notes), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(reader.port_numbers("mlx5_9", notes).empty());
  auto rxe = reader.port_hw_counters("rxe0", 1, notes);
  ASSERT_TRUE(rxe);
  EXPECT_EQ(rxe->size(), 15U);
  EXPECT_EQ(find(*rxe, "lifespan"), nullptr);
  ASSERT_NE(find(*rxe, "sent_pkts"), nullptr);
  EXPECT_EQ(find(*rxe, "sent_pkts")->value, 987010U);  // the fixture's value for rxe0 port 1
  auto mlx = reader.port_hw_counters("mlx5_0", 2, notes);
  ASSERT_TRUE(mlx);
  EXPECT_EQ(mlx->size(), 28U);
  ASSERT_NE(find(*mlx, "out_of_sequence"), nullptr);
  EXPECT_EQ(find(*mlx, "out_of_sequence")->value, 1604020U);
  EXPECT_FALSE(reader.port_hw_counters("efa_0", 1, notes));  // device-level counters only
  EXPECT_FALSE(reader.port_hw_counters("mlx5_0", 3, notes));
  EXPECT_FALSE(reader.port_hw_counters("mlx5_9", 1, notes));
  EXPECT_TRUE(notes.problems.empty()) << notes.problems.front();
  EXPECT_EQ(notes.unavailable, 0U);
}

// A device name never leads a read outside the class directory.
TEST(SysfsReader, DeviceNamesThatAreNoNamesReadNothing) {
  const std::string root = testing::make_sysfs_fixture("rxe");
  // <root>/class/infiniband/../infiniband/rxe0 exists, but ".." is no device.
  Reader reader(root);
  ReadNotes notes;
  for (const std::string name : {"..", ".", "", "../infiniband/rxe0", "rxe0/ports"}) {
    EXPECT_TRUE(reader.port_numbers(name, notes).empty()) << name;
    EXPECT_FALSE(reader.port_hw_counters(name, 1, notes)) << name;
    EXPECT_FALSE(reader.read_device(name, notes)) << name;
  }
  EXPECT_TRUE(reader.port_hw_counters("rxe0", 1, notes));
}

TEST(SysfsReader, BrokenFilesAreSkippedAndDescribed) {
  Reader reader(testing::make_sysfs_fixture("broken"));
  ReadNotes notes;
  auto d = reader.read_device("broken0", notes);
  ASSERT_TRUE(d);
  // The readable values survive.
  EXPECT_EQ(d->hca_type, "MT4119");
  EXPECT_FALSE(d->board_id);       // "N/A"
  EXPECT_FALSE(d->fw_ver);         // a directory
  ASSERT_EQ(d->ports.size(), 2U);  // "notaport" is not a port
  const Port& p = d->ports[0];
  EXPECT_FALSE(p.rate_bytes_per_second);
  ASSERT_NE(find(p.pma_counters, "port_xmit_data"), nullptr);
  EXPECT_EQ(find(p.pma_counters, "port_xmit_data")->value, 18446744073709551615ULL);
  EXPECT_EQ(find(p.pma_counters, "port_xmit_packets")->value, 12U);
  for (const char* bad : {"symbol_error", "port_rcv_errors", "port_xmit_discards", "link_downed",
                          "port_rcv_packets", "port_xmit_wait"}) {
    EXPECT_EQ(find(p.pma_counters, bad), nullptr) << bad;
  }
  // "N/A (no PMA)", the empty file and the FIFO are unavailable values...
  EXPECT_EQ(notes.unavailable, 4U);  // board_id, symbol_error, link_downed, port_xmit_wait
  // ...while the rest are problems, each naming its file.
  ASSERT_EQ(notes.problems.size(), 5U);
  auto mentions = [&](const std::string& what) {
    return std::any_of(
        notes.problems.begin(), notes.problems.end(),
        [&](const std::string& problem) { return problem.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(mentions("fw_ver: Is a directory"));
  EXPECT_TRUE(mentions("rate: unrecognised rate \"fast\""));
  EXPECT_TRUE(mentions("port_rcv_errors: not a counter value: \"garbage\""));
  EXPECT_TRUE(mentions("port_xmit_discards"));
  EXPECT_TRUE(mentions("port_rcv_packets"));
  EXPECT_FALSE(d->ports[1].has_pma);
}

// A counter the kernel declines to read (EINVAL: the driver has no such
// value on this port) is unavailable, not a problem. A write-only procfs
// file read as root answers EINVAL the same way.
TEST(SysfsReader, CounterThatAnswersEinvalIsUnavailable) {
  const int fd = ::open("/proc/self/clear_refs", O_RDONLY | O_CLOEXEC);
  char byte = 0;
  const bool einval = fd >= 0 && ::read(fd, &byte, 1) < 0 && errno == EINVAL;
  if (fd >= 0) ::close(fd);
  if (!einval) GTEST_SKIP() << "needs a file whose read() fails with EINVAL (run as root)";

  const fs::path root =
      fs::path(::testing::TempDir()) / ("rdma_einval_" + std::to_string(::getpid()));
  const fs::path counters = root / "class/infiniband/mlx5_0/ports/1/counters";
  fs::create_directories(counters);
  std::ofstream(counters / "symbol_error") << "6\n";
  fs::create_symlink("/proc/self/clear_refs", counters / "link_downed");
  Reader reader(root);
  ReadNotes notes;
  auto d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(notes.problems.empty()) << notes.problems.front();
  EXPECT_EQ(notes.unavailable, 1U);
  ASSERT_EQ(d->ports.size(), 1U);
  ASSERT_EQ(d->ports[0].pma_counters.size(), 1U);
  EXPECT_EQ(d->ports[0].pma_counters[0].name, "symbol_error");
  EXPECT_EQ(d->ports[0].pma_counters[0].value, 6U);
  fs::remove_all(root);
}

TEST(SysfsReader, VanishedDeviceIsSkipped) {
  Reader reader(testing::make_sysfs_fixture("broken"));
  ReadNotes notes;
  EXPECT_FALSE(reader.read_device("gone0", notes));
  EXPECT_FALSE(reader.read_device("never_existed", notes));
  EXPECT_TRUE(notes.problems.empty());
}

TEST(SysfsReader, MissingClassDirectoryIsNoDevices) {
  Reader reader("/nonexistent-root");
  EXPECT_FALSE(reader.class_dir_exists());
  auto names = reader.device_names();
  ASSERT_TRUE(names);
  EXPECT_TRUE(names->empty());
}

// A kept file is re-read in place: a value written since the last read is
// what the next read gives.
TEST(SysfsReader, KeptFilesAreReadAgainInPlace) {
  const fs::path root = testing::make_sysfs_fixture("mlx5:1:1");
  const std::size_t before = open_attribute_files();
  Reader reader(root);
  ReadNotes notes;
  auto d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  // fw_ver, board_id, hca_type, node_desc; rate, link_layer; 21 PMA counters.
  EXPECT_EQ(open_attribute_files() - before, 27U);
  ASSERT_NE(find(d->ports[0].pma_counters, "port_xmit_packets"), nullptr);
  EXPECT_EQ(find(d->ports[0].pma_counters, "port_xmit_packets")->value, 1840010U);
  std::ofstream(root / "class/infiniband/mlx5_0/ports/1/counters/port_xmit_packets",
                std::ios::trunc)
      << "77\n";
  d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(find(d->ports[0].pma_counters, "port_xmit_packets")->value, 77U);
  EXPECT_EQ(open_attribute_files() - before, 27U);  // the same files, not opened again
  EXPECT_TRUE(notes.problems.empty());
}

// A device that goes away while its files are kept open, and comes back
// with other files (here: the directory renamed away, a counter replaced by
// a new file, renamed back): gone while away, its new values once back.
TEST(SysfsReader, DeviceThatGoesAndComesBackIsReadAnew) {
  const fs::path root = testing::make_sysfs_fixture("mlx5:2:1");
  const fs::path cls = root / "class/infiniband";
  const std::size_t before = open_attribute_files();
  Reader reader(root);
  ReadNotes notes;
  ASSERT_TRUE(reader.device_names());
  ASSERT_TRUE(reader.read_device("mlx5_0", notes));
  ASSERT_TRUE(reader.read_device("mlx5_1", notes));
  EXPECT_EQ(open_attribute_files() - before, 54U);

  fs::rename(cls / "mlx5_1", root / "mlx5_1.away");
  // No longer listed: forgotten, its files closed.
  auto names = reader.device_names();
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(reader.cached_devices(), 1U);
  EXPECT_EQ(open_attribute_files() - before, 27U);
  EXPECT_FALSE(reader.read_device("mlx5_1", notes));

  // A new file in place of the old one: a file kept open would still read
  // the old value.
  const fs::path counter = root / "mlx5_1.away/ports/1/counters/port_xmit_packets";
  std::ofstream(counter.string() + ".new") << "4242\n";
  fs::rename(counter.string() + ".new", counter);
  fs::rename(root / "mlx5_1.away", cls / "mlx5_1");
  auto d = reader.read_device("mlx5_1", notes);
  ASSERT_TRUE(d);
  ASSERT_NE(find(d->ports[0].pma_counters, "port_xmit_packets"), nullptr);
  EXPECT_EQ(find(d->ports[0].pma_counters, "port_xmit_packets")->value, 4242U);
  EXPECT_EQ(find(d->ports[0].pma_counters, "symbol_error")->value, 1311110U);
  EXPECT_TRUE(notes.problems.empty()) << notes.problems.front();
}

// A device renamed in place of another keeps the reader from serving the
// other's files: the directory under the name is another one.
TEST(SysfsReader, DirectoryReplacedUnderTheSameNameIsReadAnew) {
  const fs::path root = testing::make_sysfs_fixture("mlx5:2:1");
  const fs::path cls = root / "class/infiniband";
  Reader reader(root);
  ReadNotes notes;
  ASSERT_TRUE(reader.read_device("mlx5_0", notes));
  fs::remove_all(cls / "mlx5_0");
  fs::rename(cls / "mlx5_1", cls / "mlx5_0");
  auto d = reader.read_device("mlx5_0", notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->node_desc, "host01 mlx5_1");
  EXPECT_EQ(find(d->ports[0].pma_counters, "port_xmit_packets")->value, 1840110U);
}

// Beyond the budget of open files, files are read with open/read/close every
// time, counted, and give the same values.
TEST(SysfsReader, FilesBeyondTheBudgetAreReadEveryTimeAndCounted) {
  const fs::path root = testing::make_sysfs_fixture("mlx5:1:1");
  const std::size_t saved = open_file_budget();
  const std::size_t held = open_attribute_files();
  const std::size_t uncached = uncached_attribute_files();
  set_open_file_budget(held + 5);
  {
    Reader reader(root);
    ReadNotes notes;
    for (int round = 0; round < 2; ++round) {
      auto d = reader.read_device("mlx5_0", notes);
      ASSERT_TRUE(d);
      EXPECT_EQ(d->fw_ver, "16.35.2000");
      ASSERT_EQ(d->ports.size(), 1U);
      EXPECT_EQ(d->ports[0].pma_counters.size(), 21U);
      EXPECT_EQ(find(d->ports[0].pma_counters, "port_xmit_packets")->value, 1840010U);
      EXPECT_EQ(open_attribute_files() - held, 5U);
      EXPECT_EQ(uncached_attribute_files() - uncached, 22U);
    }
    EXPECT_TRUE(notes.problems.empty());
    // Room again: the files read the plain way are kept at their next read.
    set_open_file_budget(saved);
    ASSERT_TRUE(reader.read_device("mlx5_0", notes));
    EXPECT_EQ(open_attribute_files() - held, 27U);
    EXPECT_EQ(uncached_attribute_files(), uncached);
  }
  EXPECT_EQ(open_attribute_files(), held);
}

TEST(SysfsReader, TheOpenFileLimitIsRaisedToTheHardLimit) {
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const rlimit saved = rl;
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max < 64) GTEST_SKIP() << "no finite hard limit";
  rl.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_EQ(raise_open_file_limit(), static_cast<std::size_t>(saved.rlim_max));
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_EQ(rl.rlim_cur, saved.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

TEST(SysfsReader, RateText) {
  EXPECT_DOUBLE_EQ(*parse_rate("100 Gb/sec (4X EDR)"), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_rate("2.5 Gb/sec (1X SDR)"), 2.5e9 / 8);
  EXPECT_DOUBLE_EQ(*parse_rate("400 Gb/sec (4X NDR)"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_rate("0 Gb/sec"), 0.0);
  EXPECT_FALSE(parse_rate(""));
  EXPECT_FALSE(parse_rate("fast"));
  EXPECT_FALSE(parse_rate("100 furlongs"));
  EXPECT_FALSE(parse_rate("-1 Gb/sec"));
}

}  // namespace
}  // namespace rdma_exporter::sysfs
