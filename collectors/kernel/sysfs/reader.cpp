#include "collectors/kernel/sysfs/reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <system_error>

namespace rdma_exporter::sysfs {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxAttribute = 4096;

// Errors with which the kernel says "this value does not exist here".
bool is_unavailable_errno(int err) {
  return err == EINVAL || err == EOPNOTSUPP || err == ENODATA || err == ENOSYS || err == ENXIO;
}

bool is_not_available_text(const std::string& text) {
  return text.empty() || text.rfind("N/A", 0) == 0;
}

// Reads an optional text attribute: absent files stay unset.
void read_text(const fs::path& file, std::optional<std::string>& out, ReadNotes& notes) {
  auto r = read_attribute(file);
  if (r) {
    if (r->rfind("N/A", 0) == 0) {
      ++notes.unavailable;
    } else if (!r->empty()) {
      out = std::move(r).value();
    }
    return;
  }
  if (r.error().code == ENOENT) return;
  if (is_unavailable_errno(r.error().code)) {
    ++notes.unavailable;
  } else {
    notes.problems.push_back(r.error().message);
  }
}

std::vector<std::string> list_dir(const fs::path& dir, ReadNotes& notes, bool& exists) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  exists = !ec;
  if (ec) {
    if (ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      notes.problems.push_back("list " + dir.string() + ": " + ec.message());
    }
    return names;
  }
  for (const fs::directory_entry& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Reads every counter file of a directory, skipping the names in `ignore`.
std::vector<Counter> read_counters(const fs::path& dir, ReadNotes& notes, bool& exists,
                                   std::initializer_list<std::string_view> ignore = {}) {
  std::vector<Counter> out;
  for (const std::string& name : list_dir(dir, notes, exists)) {
    if (std::find(ignore.begin(), ignore.end(), name) != ignore.end()) continue;
    const fs::path file = dir / name;
    auto text = read_attribute(file);
    if (!text) {
      if (is_unavailable_errno(text.error().code)) {
        ++notes.unavailable;
      } else {
        notes.problems.push_back(text.error().message);
      }
      continue;
    }
    if (is_not_available_text(*text)) {
      ++notes.unavailable;
      continue;
    }
    uint64_t value = 0;
    const char* first = text->data();
    const char* last = first + text->size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) {
      notes.problems.push_back("read " + file.string() + ": not a counter value: \"" +
                               text->substr(0, 40) + "\"");
      continue;
    }
    out.push_back(Counter{name, value});
  }
  return out;
}

// A device name from the kernel never holds a slash; one that does (or
// names "." or "..") must not lead a read outside the class directory.
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::optional<uint32_t> port_number(const std::string& name) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return n;
}

}  // namespace

Result<std::string> read_attribute(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error::system(errno, "open " + file.string());
  std::array<char, kMaxAttribute> buf{};
  std::size_t used = 0;
  int err = 0;
  // A sysfs attribute hands over its whole value in one read; a short read is
  // the end, which saves a second read() per file on every collection.
  while (used < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    used += static_cast<std::size_t>(n);
    if (n == 0 || used < buf.size()) break;
  }
  ::close(fd);
  if (err != 0) return Error::system(err, "read " + file.string());
  std::string text(buf.data(), used);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) {
    text.pop_back();
  }
  return text;
}

std::optional<double> parse_rate(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || number < 0) return std::nullopt;
  std::string_view rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.rfind("Gb/sec", 0) == 0) return number * 1e9 / 8;
  if (rest.rfind("Mb/sec", 0) == 0) return number * 1e6 / 8;
  return std::nullopt;
}

Reader::Reader(fs::path sysfs_root) : class_dir_(std::move(sysfs_root) / "class" / "infiniband") {}

bool Reader::class_dir_exists() const {
  std::error_code ec;
  return fs::is_directory(class_dir_, ec);
}

Result<std::vector<std::string>> Reader::device_names() const {
  ReadNotes notes;
  bool exists = false;
  auto names = list_dir(class_dir_, notes, exists);
  if (!notes.problems.empty()) return Error{EIO, notes.problems.front()};
  return names;
}

std::optional<Device> Reader::read_device(const std::string& name, ReadNotes& notes) const {
  if (!is_plain_name(name)) return std::nullopt;
  const fs::path dir = class_dir_ / name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  Device d;
  d.name = name;
  read_text(dir / "fw_ver", d.fw_ver, notes);
  read_text(dir / "board_id", d.board_id, notes);
  read_text(dir / "hca_type", d.hca_type, notes);
  read_text(dir / "node_desc", d.node_desc, notes);
  bool exists = false;
  // "lifespan" is a setting (the counters' cache time in ms), not a counter.
  d.hw_counters = read_counters(dir / "hw_counters", notes, exists, {"lifespan"});

  for (const std::string& entry : list_dir(dir / "ports", notes, exists)) {
    auto number = port_number(entry);
    if (!number) continue;
    Port p;
    p.index = *number;
    const fs::path pdir = dir / "ports" / entry;
    std::optional<std::string> rate;
    read_text(pdir / "rate", rate, notes);
    if (rate) {
      p.rate_bytes_per_second = parse_rate(*rate);
      if (!p.rate_bytes_per_second) {
        notes.problems.push_back("read " + (pdir / "rate").string() + ": unrecognised rate \"" +
                                 rate->substr(0, 40) + "\"");
      }
    }
    read_text(pdir / "link_layer", p.link_layer, notes);
    p.pma_counters = read_counters(pdir / "counters", notes, p.has_pma);
    d.ports.push_back(std::move(p));
  }
  std::sort(d.ports.begin(), d.ports.end(),
            [](const Port& a, const Port& b) { return a.index < b.index; });
  return d;
}

std::vector<uint32_t> Reader::port_numbers(const std::string& device, ReadNotes& notes) const {
  std::vector<uint32_t> out;
  if (!is_plain_name(device)) return out;
  bool exists = false;
  for (const std::string& entry : list_dir(class_dir_ / device / "ports", notes, exists)) {
    if (auto number = port_number(entry)) out.push_back(*number);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<Counter>> Reader::port_hw_counters(const std::string& device,
                                                             uint32_t port,
                                                             ReadNotes& notes) const {
  if (!is_plain_name(device)) return std::nullopt;
  bool exists = false;
  auto counters =
      read_counters(class_dir_ / device / "ports" / std::to_string(port) / "hw_counters", notes,
                    exists, {"lifespan"});
  if (!exists) return std::nullopt;
  return counters;
}

}  // namespace rdma_exporter::sysfs
