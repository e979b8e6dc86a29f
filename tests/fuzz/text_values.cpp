// Fuzz harness: values read from text. The input is, at once, the contents
// of sysfs files (a device and a port hw counter, a PMA counter, a port's
// rate and link layer, the PCI function's link speed and width and an AER
// file, read through sysfs::Reader from a scratch tree), a
// duration, a listen address and a configuration pattern (compiled as the
// configuration does, and matched against names of every length: RE2 takes
// time linear in the name, whatever the pattern).

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/kernel/sys/reader.hpp"
#include "common/pattern.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;
namespace fs = std::filesystem;

namespace {

// <root>/class/infiniband/mlx5_0 with one port, made once per process and
// removed at exit.
struct ScratchTree {
  fs::path root;
  fs::path device;
  fs::path function;
  ScratchTree() {
    // tmpfs when there is one: rewriting a file on a disk file system may
    // wait for its data to be written out, at every input.
    std::error_code ec;
    const fs::path base =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string templ = (base / "rdma-fuzz-sysfs-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) ::abort();
    root = templ;
    device = root / "class" / "infiniband" / "mlx5_0";
    fs::create_directories(device / "hw_counters");
    fs::create_directories(device / "ports" / "1" / "counters");
    fs::create_directories(device / "ports" / "1" / "hw_counters");
    write(device / "ports" / "1" / "hw_counters" / "lifespan", "10\n");
    write(device / "fw_ver", "20.31.1014\n");
    write(device / "hw_counters" / "lifespan", "10\n");
    write(device / "ports" / "1" / "link_layer", "Ethernet\n");
    function = root / "devices" / "pci0000:00" / "0000:3b:00.0";
    fs::create_directories(function);
    fs::create_directories(root / "bus" / "pci");
    fs::create_symlink("../../../bus/pci", function / "subsystem");
    fs::create_symlink("../../../devices/pci0000:00/0000:3b:00.0", device / "device");
  }
  ~ScratchTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  static void write(const fs::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
  }
};

void sysfs_values(const std::string& text) {
  static ScratchTree tree;
  ScratchTree::write(tree.device / "hw_counters" / "out_of_sequence", text);
  ScratchTree::write(tree.device / "ports" / "1" / "rate", text);
  ScratchTree::write(tree.device / "ports" / "1" / "counters" / "port_rcv_data", text);
  ScratchTree::write(tree.device / "ports" / "1" / "hw_counters" / "rx_write_requests", text);
  ScratchTree::write(tree.function / "current_link_speed", text);
  ScratchTree::write(tree.function / "max_link_width", text);
  ScratchTree::write(tree.function / "aer_dev_fatal", text);
  sysfs::Reader reader(tree.root);
  sysfs::ReadNotes notes;
  (void)reader.read_device("mlx5_0", notes);
  (void)reader.port_hw_counters("mlx5_0", 1, notes);
  (void)reader.read_pci_function("mlx5_0", notes);
  (void)sysfs::parse_rate(text);
  (void)sysfs::parse_pcie_speed(text);
  (void)sysfs::parse_aer_counts(text);
}

void pattern(const std::string& text) {
  // The shapes that make a backtracking engine take exponential time, such
  // as (a+)+b against a long run of a.
  static const std::string long_name = std::string(10000, 'a') + "!";
  (void)pattern_limit_problem(text);
  auto compiled = Pattern::compile(text);
  if (!compiled) return;  // a pattern the configuration refuses
  std::string group;
  (void)compiled->matches("mlx5_0");
  (void)compiled->matches(text, group);
  (void)compiled->matches(long_name, group);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(fuzz::bytes_of(data, size));
  sysfs_values(text);
  Duration duration{};
  (void)parse_duration(text, duration);
  ListenAddress address;
  (void)parse_listen_address(text, address);
  pattern(text);
  return 0;
}
