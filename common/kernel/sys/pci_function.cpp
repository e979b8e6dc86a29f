#include "common/kernel/sys/pci_function.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <system_error>

namespace rdma_exporter::sysfs {
namespace fs = std::filesystem;

namespace {

void read_speed(AttributeFile& file, std::optional<double>& out, ReadNotes& notes, bool& gone) {
  std::optional<std::string> text;
  read_optional_text(file, text, notes, gone);
  if (!text) return;
  out = parse_pcie_speed(*text);
  if (out) return;
  if (text->rfind("Unknown", 0) == 0) {
    ++notes.unavailable;  // no link trained, or a function without one
  } else {
    notes.problems.push_back("read " + file.path().string() + ": unrecognised speed \"" +
                             text->substr(0, 40) + "\"");
  }
}

void read_width(AttributeFile& file, std::optional<uint32_t>& out, ReadNotes& notes, bool& gone) {
  std::optional<std::string> text;
  read_optional_text(file, text, notes, gone);
  if (!text) return;
  uint32_t lanes = 0;
  const char* last = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), last, lanes);
  if (ec != std::errc() || ptr != last) {
    notes.problems.push_back("read " + file.path().string() + ": not a link width: \"" +
                             text->substr(0, 40) + "\"");
  } else if (lanes == 0) {
    ++notes.unavailable;  // no link trained
  } else {
    out = lanes;
  }
}

void read_aer(AttributeFile& file, std::optional<AerCounts>& out, ReadNotes& notes, bool& gone) {
  std::optional<std::string> text;
  read_optional_text(file, text, notes, gone);
  if (!text) return;
  auto counts = parse_aer_counts(*text);
  if (!counts) {
    notes.problems.push_back("read " + file.path().string() + ": " + counts.error().message);
    return;
  }
  out = std::move(counts).value();
}

}  // namespace

PciFunctionFiles PciFunctionFiles::discover(const fs::path& device_dir) {
  PciFunctionFiles e;
  std::error_code ec;
  const fs::path function = fs::canonical(device_dir / "device", ec);
  if (ec) return e;  // no parent device (Soft-RoCE), or a dangling link
  const fs::path subsystem = fs::read_symlink(function / "subsystem", ec);
  if (ec || subsystem.filename() != "pci") return e;
  e.found_ = true;
  e.address_ = function.filename().string();
  fs::path link = function;
  if (const fs::path pf = fs::canonical(function / "physfn", ec); !ec) {
    e.physical_function_ = pf.filename().string();
    link = pf;
  }
  e.speed_ = AttributeFile(link / "current_link_speed");
  e.max_speed_ = AttributeFile(link / "max_link_speed");
  e.width_ = AttributeFile(link / "current_link_width");
  e.max_width_ = AttributeFile(link / "max_link_width");
  e.correctable_ = AttributeFile(function / "aer_dev_correctable");
  e.nonfatal_ = AttributeFile(function / "aer_dev_nonfatal");
  e.fatal_ = AttributeFile(function / "aer_dev_fatal");
  return e;
}

PciFunction PciFunctionFiles::read(ReadNotes& notes, bool& gone) {
  PciFunction f;
  f.address = address_;
  f.physical_function = physical_function_;
  read_speed(speed_, f.link.speed_transfers_per_second, notes, gone);
  read_speed(max_speed_, f.link.max_speed_transfers_per_second, notes, gone);
  read_width(width_, f.link.width_lanes, notes, gone);
  read_width(max_width_, f.link.max_width_lanes, notes, gone);
  read_aer(correctable_, f.correctable, notes, gone);
  read_aer(nonfatal_, f.nonfatal, notes, gone);
  read_aer(fatal_, f.fatal, notes, gone);
  return f;
}

std::optional<double> parse_pcie_speed(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !(number > 0)) return std::nullopt;
  std::string_view rest(end);
  if (rest.rfind(" GT/s", 0) != 0) return std::nullopt;
  rest.remove_prefix(5);
  if (!rest.empty() && rest != " PCIe") return std::nullopt;
  return number * 1e9;
}

Result<AerCounts> parse_aer_counts(const std::string& text) {
  AerCounts out;
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (line.empty()) continue;
    const std::size_t blank = line.rfind(' ');
    uint64_t value = 0;
    const char* last = line.data() + line.size();
    bool ok = blank != std::string_view::npos && blank > 0;
    if (ok) {
      auto [ptr, ec] = std::from_chars(line.data() + blank + 1, last, value);
      ok = ec == std::errc() && ptr == last && ptr != line.data() + blank + 1;
    }
    if (!ok)
      return Error{EINVAL, "not \"<error> <count>\": \"" + std::string(line.substr(0, 40)) + "\""};
    const std::string_view name = line.substr(0, blank);
    if (name.rfind("TOTAL_ERR_", 0) == 0) {
      out.messages = value;
    } else {
      out.errors.push_back(Counter{std::string(name), value});
    }
  }
  return out;
}

}  // namespace rdma_exporter::sysfs
