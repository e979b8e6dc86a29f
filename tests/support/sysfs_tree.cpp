#include "tests/support/sysfs_tree.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/fake_kernel/driver_counters.hpp"

namespace rdma_exporter::testing {
namespace {

namespace fs = std::filesystem;

// The IB PMA counters (/sys/class/infiniband/<dev>/ports/<n>/counters/).
const std::vector<std::string>& pma_counters() {
  static const std::vector<std::string> names = {
      "excessive_buffer_overrun_errors",
      "link_downed",
      "link_error_recovery",
      "local_link_integrity_errors",
      "multicast_rcv_packets",
      "multicast_xmit_packets",
      "port_rcv_constraint_errors",
      "port_rcv_data",
      "port_rcv_errors",
      "port_rcv_packets",
      "port_rcv_remote_physical_errors",
      "port_rcv_switch_relay_errors",
      "port_xmit_constraint_errors",
      "port_xmit_data",
      "port_xmit_discards",
      "port_xmit_packets",
      "port_xmit_wait",
      "symbol_error",
      "unicast_rcv_packets",
      "unicast_xmit_packets",
      "VL15_dropped",
  };
  return names;
}

// efa's device-level hw_counters/ (drivers/infiniband/hw/efa/efa_verbs.c),
// "lifespan" apart.
const std::vector<std::string>& efa_device_counters() {
  static const std::vector<std::string> names = {
      "alloc_pd_err",  "alloc_ucontext_err", "cmds_err",        "create_ah_err",
      "create_cq_err", "create_qp_err",      "keep_alive_rcvd", "mmap_err",
      "reg_mr_err",    "submitted_cmds",     "completed_cmds",  "no_completion_cmds",
  };
  return names;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

std::string hex(unsigned value, int width = 0) {
  std::ostringstream s;
  s << std::hex;
  if (width > 0) {
    s.width(width);
    s.fill('0');
  }
  s << value;
  return s.str();
}

std::string counter_line(int device, int port, const std::string& name) {
  return std::to_string(sysfs_counter_value(device, port, name)) + "\n";
}

// hw_counters/: `names`, each with its value, and lifespan.
void write_hw_counters(const fs::path& dir, int device, int port,
                       const std::vector<std::string>& names) {
  write(dir / "lifespan", "10\n");
  for (const auto& c : names) write(dir / c, counter_line(device, port, c));
}

// The AER files' error names, as Linux 5.1 and later print them.
const std::vector<std::string>& aer_correctable_names() {
  static const std::vector<std::string> names = {
      "RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"};
  return names;
}
const std::vector<std::string>& aer_uncorrectable_names() {
  static const std::vector<std::string> names = {"Undefined",     "DLP",
                                                 "SDES",          "TLP",
                                                 "FCP",           "CmpltTO",
                                                 "CmpltAbrt",     "UnxCmplt",
                                                 "RxOF",          "MalfTLP",
                                                 "ECRC",          "UnsupReq",
                                                 "ACSViol",       "UncorrIntErr",
                                                 "BlockedTLP",    "AtomicOpBlocked",
                                                 "TLPBlockedErr", "PoisonTLPBlocked"};
  return names;
}

std::string aer_file(int device, int severity, const std::vector<std::string>& names,
                     const std::string& total) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const uint64_t count = i % 2 == 0 ? sysfs_counter_value(device, severity, names[i]) : 0;
    text += names[i] + " " + std::to_string(count) + "\n";
  }
  return text + total + " " + std::to_string(sysfs_counter_value(device, severity, total)) + "\n";
}

// The PCI function of device `dir` (<out>/class/infiniband/<name>), at
// <out>/devices/pci0000:00/<address>, linked as the kernel links it.
void pci_function(const fs::path& dir, const std::string& address, const std::string& speed,
                  const std::string& max_speed, const std::string& width,
                  const std::string& max_width) {
  const fs::path out = dir.parent_path().parent_path().parent_path();
  const fs::path function = out / "devices" / "pci0000:00" / address;
  write(function / "current_link_speed", speed + "\n");
  write(function / "max_link_speed", max_speed + "\n");
  write(function / "current_link_width", width + "\n");
  write(function / "max_link_width", max_width + "\n");
  fs::create_directories(out / "bus" / "pci");
  fs::create_symlink("../../../bus/pci", function / "subsystem");
  fs::create_directories(dir);
  fs::create_symlink("../../../devices/pci0000:00/" + address, dir / "device");
}

void mlx5(const fs::path& root, int idx, int ports) {
  const std::string name = "mlx5_" + std::to_string(idx);
  const fs::path d = root / name;
  const std::string guid = "9803:9b03:0034:" + hex(static_cast<unsigned>(idx), 4) + "\n";
  write(d / "fw_ver", "16.35.2000\n");
  write(d / "board_id", "MT_0000000012\n");
  write(d / "hca_type", "MT4119\n");
  write(d / "node_desc", "host01 " + name + "\n");
  write(d / "node_guid", guid);
  write(d / "sys_image_guid", guid);
  write(d / "node_type", "1: CA\n");
  const std::string address = "0000:" + hex(static_cast<unsigned>(0x10 + idx), 2) + ":00.0";
  pci_function(d, address, "16.0 GT/s PCIe", "32.0 GT/s PCIe", "8", "16");
  const fs::path function = root.parent_path().parent_path() / "devices" / "pci0000:00" / address;
  write(function / "aer_dev_correctable",
        aer_file(idx, 1, aer_correctable_names(), "TOTAL_ERR_COR"));
  write(function / "aer_dev_nonfatal",
        aer_file(idx, 2, aer_uncorrectable_names(), "TOTAL_ERR_NONFATAL"));
  write(function / "aer_dev_fatal", aer_file(idx, 3, aer_uncorrectable_names(), "TOTAL_ERR_FATAL"));
  for (int p = 1; p <= ports; ++p) {
    const fs::path pd = d / "ports" / std::to_string(p);
    write(pd / "state", "4: ACTIVE\n");
    write(pd / "phys_state", "5: LinkUp\n");
    write(pd / "rate", "100 Gb/sec (4X EDR)\n");
    write(pd / "link_layer", "InfiniBand\n");
    write(pd / "lid", "0x" + hex(static_cast<unsigned>(idx * 2 + p)) + "\n");
    write(pd / "sm_lid", "0x1\n");
    write(pd / "lid_mask_count", "0\n");
    write(pd / "cap_mask", "0xa659e848\n");
    for (const auto& c : pma_counters()) write(pd / "counters" / c, counter_line(idx, p, c));
    write_hw_counters(pd / "hw_counters", idx, p, mlx5_port_counters());
  }
}

void rxe(const fs::path& root, int idx, int ports) {
  const std::string name = "rxe" + std::to_string(idx);
  const fs::path d = root / name;
  write(d / "fw_ver", "\n");
  write(d / "node_desc", name + "\n");
  write(d / "node_guid", "5054:00ff:fe12:" + hex(static_cast<unsigned>(idx), 4) + "\n");
  write(d / "node_type", "1: CA\n");
  for (int p = 1; p <= ports; ++p) {
    const fs::path pd = d / "ports" / std::to_string(p);
    write(pd / "state", "4: ACTIVE\n");
    write(pd / "phys_state", "5: LinkUp\n");
    write(pd / "rate", "10 Gb/sec (4X QDR)\n");
    write(pd / "link_layer", "Ethernet\n");
    write_hw_counters(pd / "hw_counters", idx, p, rxe_port_counters());
  }
}

void efa(const fs::path& root, int idx, int ports) {
  const fs::path d = root / ("efa_" + std::to_string(idx));
  write(d / "fw_ver", "0.0.0.0\n");
  write(d / "node_desc", "\n");
  write_hw_counters(d / "hw_counters", idx, 0, efa_device_counters());
  for (int p = 1; p <= ports; ++p) {
    const fs::path pd = d / "ports" / std::to_string(p);
    write(pd / "state", "4: ACTIVE\n");
    write(pd / "rate", "100 Gb/sec (4X EDR)\n");
    write(pd / "link_layer", "Unspecified\n");
  }
}

// Every way a sysfs file has been seen to misbehave, in one device (one
// port whatever the spec says).
void broken(const fs::path& root, int idx, int /*ports*/) {
  const fs::path d = root / ("broken" + std::to_string(idx));
  fs::create_directories(d / "fw_ver");  // a directory where a file belongs: EISDIR
  write(d / "fw_ver" / "stray", "x\n");
  write(d / "board_id", "N/A\n");  // the kernel's "not available"
  write(d / "hca_type", "MT4119\n");
  write(d / "hw_counters" / "lifespan", "10\n");  // a setting, never a counter
  write(d / "hw_counters" / "ok_counter", "7\n");
  const fs::path pd = d / "ports" / "1";
  write(pd / "rate", "fast\n");  // unparsable rate
  write(pd / "link_layer", "InfiniBand\n");
  write(pd / "counters" / "symbol_error", "N/A (no PMA)\n");
  write(pd / "counters" / "port_rcv_errors", "garbage\n");
  write(pd / "counters" / "port_xmit_discards", "-5\n");
  write(pd / "counters" / "link_downed", "");  // empty
  write(pd / "counters" / "port_xmit_data", "18446744073709551615\n");
  write(pd / "counters" / "port_rcv_packets", "18446744073709551616\n");  // overflows u64
  write(pd / "counters" / "port_xmit_packets", "12\n");
  // Reads nothing, never blocks the reader.
  const fs::path fifo = pd / "counters" / "port_xmit_wait";
  if (::mkfifo(fifo.c_str(), 0666) != 0) {
    throw std::runtime_error("cannot make fifo " + fifo.string() + ": " + std::strerror(errno));
  }
  // Its PCI function: a speed, a width and an AER file the kernel never
  // wrote; no AER for the rest.
  pci_function(d, "0000:f0:00." + std::to_string(idx % 8), "fast", "Unknown", "0", "99999999999");
  write(d.parent_path().parent_path().parent_path() / "devices" / "pci0000:00" /
            ("0000:f0:00." + std::to_string(idx % 8)) / "aer_dev_fatal",
        "Undefined 0\nDLP\n");
  fs::create_directories(d / "ports" / "notaport");  // ignored: not a port number
  fs::create_directories(d / "ports" / "2");         // a port with nothing in it
  // A device whose class entry dangles (removed while being listed).
  fs::create_symlink("../../devices/gone", root / ("gone" + std::to_string(idx)));
}

using Writer = void (*)(const fs::path& root, int idx, int ports);

struct Spec {
  Writer writer;
  int count;
  int ports;
};

Writer writer_of(std::string_view kind) {
  if (kind == "mlx5") return mlx5;
  if (kind == "rxe") return rxe;
  if (kind == "efa") return efa;
  if (kind == "broken") return broken;
  throw std::invalid_argument("unknown kind " + std::string(kind));
}

int number(std::string_view text, std::string_view spec) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0) {
    throw std::invalid_argument("not a number in spec " + std::string(spec));
  }
  return value;
}

Spec parse(std::string_view spec) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) throw std::invalid_argument("too many fields in spec " + std::string(spec));
  return Spec{.writer = writer_of(parts[0]),
              .count = parts.size() > 1 ? number(parts[1], spec) : 1,
              .ports = parts.size() > 2 ? number(parts[2], spec) : 1};
}

}  // namespace

uint64_t sysfs_counter_value(int device, int port, std::string_view name) {
  uint64_t sum = 0;
  for (char c : name) sum += static_cast<unsigned char>(c);
  return (sum * 1000 + static_cast<uint64_t>(device) * 100 + static_cast<uint64_t>(port) * 10) %
         (uint64_t{1} << 32);
}

void write_sysfs_tree(const fs::path& out, const std::vector<std::string>& specs) {
  std::vector<Spec> parsed;
  for (const auto& s : specs) parsed.push_back(parse(s));
  fs::remove_all(out);
  const fs::path root = out / "class" / "infiniband";
  fs::create_directories(root);
  for (const auto& s : parsed) {
    for (int i = 0; i < s.count; ++i) s.writer(root, i, s.ports);
  }
}

void write_sysfs_tree(const fs::path& out, std::string_view specs) {
  std::vector<std::string> split;
  std::istringstream in{std::string(specs)};
  for (std::string s; in >> s;) split.push_back(s);
  write_sysfs_tree(out, split);
}

}  // namespace rdma_exporter::testing
