// Fuzz harness: values read from text. The input is, at once, the contents
// of sysfs files (a hw counter, a PMA counter, a port's rate and link layer,
// read through sysfs::Reader from a scratch tree), a duration, a listen
// address and a configuration pattern (compiled with std::regex only when
// pattern_limit_problem lets it through, as the configuration does).

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "collectors/kernel/sysfs/reader.hpp"
#include "common/address.hpp"
#include "common/duration.hpp"
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
    write(device / "fw_ver", "20.31.1014\n");
    write(device / "hw_counters" / "lifespan", "10\n");
    write(device / "ports" / "1" / "link_layer", "Ethernet\n");
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
  sysfs::Reader reader(tree.root);
  sysfs::ReadNotes notes;
  (void)reader.read_device("mlx5_0", notes);
  (void)sysfs::parse_rate(text);
}

void pattern(const std::string& text) {
  if (!pattern_limit_problem(text).empty()) return;
  try {
    const std::regex re(text, std::regex::ECMAScript);
    // A short subject only: std::regex backtracks, and a pattern such as
    // (a+)+b takes exponential time in the subject's length (not bounded
    // by pattern_limit_problem; see tests/fuzz/README.md).
    (void)std::regex_match("mlx5_0", re);
  } catch (const std::regex_error&) {
    // A pattern with bad syntax: the configuration reports it.
  }
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
