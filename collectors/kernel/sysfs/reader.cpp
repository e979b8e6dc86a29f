#include "collectors/kernel/sysfs/reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <system_error>
#include <unordered_map>

namespace rdma_exporter::sysfs {
namespace fs = std::filesystem;

namespace {

// Errors with which the kernel says "this value does not exist here".
bool is_unavailable_errno(int err) {
  return err == EINVAL || err == EOPNOTSUPP || err == ENODATA || err == ENOSYS || err == ENXIO;
}

// Errors with which a file kept open says its device was removed: kernfs
// answers ENODEV once the attribute is gone; ESTALE on a network mount.
bool is_gone_errno(int err) {
  return err == ENODEV || err == ESTALE;
}

bool is_not_available_text(const std::string& text) {
  return text.empty() || text.rfind("N/A", 0) == 0;
}

// Reads an optional text attribute: absent files stay unset.
void read_text(AttributeFile& file, std::optional<std::string>& out, ReadNotes& notes, bool& gone) {
  auto r = file.read();
  if (r) {
    if (r->rfind("N/A", 0) == 0) {
      ++notes.unavailable;
    } else if (!r->empty()) {
      out = std::move(r).value();
    }
    return;
  }
  const int code = r.error().code;
  if (code == ENOENT) return;
  if (is_gone_errno(code)) gone = true;
  if (is_unavailable_errno(code)) {
    ++notes.unavailable;
  } else {
    notes.problems.push_back(r.error().message);
  }
}

// The sorted names in `dir`. `complete` turns false when the listing failed
// for another reason than the directory's absence.
std::vector<std::string> list_dir(const fs::path& dir, ReadNotes& notes, bool& exists,
                                  bool& complete) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  exists = !ec;
  if (ec) {
    if (ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      notes.problems.push_back("list " + dir.string() + ": " + ec.message());
      complete = false;
    }
    return names;
  }
  for (const fs::directory_entry& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct CounterFile {
  std::string name;
  AttributeFile file;
};

// The counter files of one directory, as found at discovery.
struct CounterDir {
  bool exists = false;
  std::vector<CounterFile> files;
};

// Finds the counter files of a directory, skipping the names in `ignore`.
CounterDir discover_counters(const fs::path& dir, ReadNotes& notes, bool& complete,
                             std::initializer_list<std::string_view> ignore = {}) {
  CounterDir out;
  for (std::string& name : list_dir(dir, notes, out.exists, complete)) {
    if (std::find(ignore.begin(), ignore.end(), name) != ignore.end()) continue;
    fs::path file = dir / name;
    out.files.push_back(CounterFile{std::move(name), AttributeFile(std::move(file))});
  }
  return out;
}

// Reads every counter file of a discovered directory.
std::vector<Counter> read_counters(CounterDir& dir, ReadNotes& notes, bool& gone) {
  std::vector<Counter> out;
  out.reserve(dir.files.size());
  for (CounterFile& f : dir.files) {
    auto text = f.file.read();
    if (!text) {
      const int code = text.error().code;
      // A file listed at discovery that is no longer there: the device
      // changed under it.
      if (is_gone_errno(code) || code == ENOENT) gone = true;
      if (is_unavailable_errno(code)) {
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
      notes.problems.push_back("read " + f.file.path().string() + ": not a counter value: \"" +
                               text->substr(0, 40) + "\"");
      continue;
    }
    out.push_back(Counter{f.name, value});
  }
  return out;
}

std::optional<uint32_t> port_number(const std::string& name) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return n;
}

// What tells one device directory from another of the same name: a device
// removed and added again has a directory of its own (another inode), and
// entries added, removed or renamed change its times.
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  timespec mtime{};
  timespec ctime{};

  bool operator==(const Identity& o) const {
    return dev == o.dev && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

// The identity of a device directory (following the class entry's link);
// empty when it is no directory (gone, a dangling link).
std::optional<Identity> identity_of(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return Identity{st.st_dev, st.st_ino, st.st_mtim, st.st_ctim};
}

struct PortEntry {
  uint32_t index = 0;
  fs::path dir;
  AttributeFile rate;
  AttributeFile link_layer;
  std::optional<CounterDir> pma;  // ports/<n>/counters/, found at first use
};

// The PCI function of a device as discovered: its link's files (the
// physical function's for a virtual function) and its AER files.
struct PciEntry {
  bool found = false;  // the device has a PCI function
  std::string address;
  std::string physical_function;
  AttributeFile speed, max_speed, width, max_width;
  AttributeFile correctable, nonfatal, fatal;
};

// The function <dev>/device leads to, when its subsystem is pci.
PciEntry discover_pci(const fs::path& device_dir) {
  PciEntry e;
  std::error_code ec;
  const fs::path function = fs::canonical(device_dir / "device", ec);
  if (ec) return e;  // no parent device (Soft-RoCE), or a dangling link
  const fs::path subsystem = fs::read_symlink(function / "subsystem", ec);
  if (ec || subsystem.filename() != "pci") return e;
  e.found = true;
  e.address = function.filename().string();
  fs::path link = function;
  if (const fs::path pf = fs::canonical(function / "physfn", ec); !ec) {
    e.physical_function = pf.filename().string();
    link = pf;
  }
  e.speed = AttributeFile(link / "current_link_speed");
  e.max_speed = AttributeFile(link / "max_link_speed");
  e.width = AttributeFile(link / "current_link_width");
  e.max_width = AttributeFile(link / "max_link_width");
  e.correctable = AttributeFile(function / "aer_dev_correctable");
  e.nonfatal = AttributeFile(function / "aer_dev_nonfatal");
  e.fatal = AttributeFile(function / "aer_dev_fatal");
  return e;
}

void read_speed(AttributeFile& file, std::optional<double>& out, ReadNotes& notes, bool& gone) {
  std::optional<std::string> text;
  read_text(file, text, notes, gone);
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
  read_text(file, text, notes, gone);
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
  read_text(file, text, notes, gone);
  if (!text) return;
  auto counts = parse_aer_counts(*text);
  if (!counts) {
    notes.problems.push_back("read " + file.path().string() + ": " + counts.error().message);
    return;
  }
  out = std::move(counts).value();
}

// One device as discovered; each part found at its first use.
struct DeviceEntry {
  Identity identity;
  fs::path dir;
  AttributeFile fw_ver, board_id, hca_type, node_desc;
  std::optional<CounterDir> hw;  // device-level hw_counters/
  bool ports_listed = false;
  std::vector<PortEntry> ports;            // in the order of their names
  std::map<uint32_t, CounterDir> port_hw;  // ports/<n>/hw_counters/
  std::optional<PciEntry> pci;             // <dev>/device
  // False when a listing failed: the entry is not kept, the next read
  // discovers the device again.
  bool complete = true;

  DeviceEntry(Identity id, fs::path d)
      : identity(id),
        dir(std::move(d)),
        fw_ver(dir / "fw_ver"),
        board_id(dir / "board_id"),
        hca_type(dir / "hca_type"),
        node_desc(dir / "node_desc") {}

  void list_ports(ReadNotes& notes) {
    if (ports_listed) return;
    bool exists = false;
    for (const std::string& entry : list_dir(dir / "ports", notes, exists, complete)) {
      auto number = port_number(entry);
      if (!number) continue;
      PortEntry p;
      p.index = *number;
      p.dir = dir / "ports" / entry;
      p.rate = AttributeFile(p.dir / "rate");
      p.link_layer = AttributeFile(p.dir / "link_layer");
      ports.push_back(std::move(p));
    }
    ports_listed = true;
  }
};

void append(ReadNotes& to, ReadNotes& from) {
  to.unavailable += from.unavailable;
  to.problems.insert(to.problems.end(), std::make_move_iterator(from.problems.begin()),
                     std::make_move_iterator(from.problems.end()));
}

}  // namespace

struct Reader::Cache {
  std::unordered_map<std::string, std::unique_ptr<DeviceEntry>> devices;

  // The entry of a device whose directory is there, discovered again when
  // the directory changed; nullptr (and forgotten) when it is gone.
  DeviceEntry* entry(const fs::path& class_dir, const std::string& name) {
    fs::path dir = class_dir / name;
    auto id = identity_of(dir);
    auto it = devices.find(name);
    if (!id) {
      if (it != devices.end()) devices.erase(it);
      return nullptr;
    }
    if (it != devices.end() && it->second->identity == *id) return it->second.get();
    auto fresh = std::make_unique<DeviceEntry>(*id, std::move(dir));
    DeviceEntry* raw = fresh.get();
    devices.insert_or_assign(name, std::move(fresh));
    return raw;
  }

  void forget(const std::string& name) { devices.erase(name); }
};

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

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
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

Reader::Reader(const fs::path& sysfs_root)
    : class_dir_(sysfs_root / "class" / "infiniband"), cache_(std::make_unique<Cache>()) {}

Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

std::size_t Reader::cached_devices() const {
  return cache_->devices.size();
}

bool Reader::class_dir_exists() const {
  std::error_code ec;
  return fs::is_directory(class_dir_, ec);
}

Result<std::vector<std::string>> Reader::device_names() const {
  ReadNotes notes;
  bool exists = false;
  bool complete = true;
  auto names = list_dir(class_dir_, notes, exists, complete);
  if (!notes.problems.empty()) return Error{EIO, notes.problems.front()};
  // Devices no longer listed were removed: their files are closed.
  std::erase_if(cache_->devices, [&](const auto& entry) {
    return !std::binary_search(names.begin(), names.end(), entry.first);
  });
  return names;
}

std::optional<Device> Reader::read_device(const std::string& name, ReadNotes& notes) const {
  if (!is_plain_name(name)) return std::nullopt;
  // A kept file that says its device is gone: once more, with a fresh
  // discovery (which finds the device gone, or its new files).
  for (int attempt = 0;; ++attempt) {
    DeviceEntry* e = cache_->entry(class_dir_, name);
    if (e == nullptr) return std::nullopt;
    ReadNotes these;
    bool gone = false;
    Device d;
    d.name = name;
    read_text(e->fw_ver, d.fw_ver, these, gone);
    read_text(e->board_id, d.board_id, these, gone);
    read_text(e->hca_type, d.hca_type, these, gone);
    read_text(e->node_desc, d.node_desc, these, gone);
    // "lifespan" is a setting (the counters' cache time in ms), not a counter.
    if (!e->hw) e->hw = discover_counters(e->dir / "hw_counters", these, e->complete, {"lifespan"});
    d.hw_counters = read_counters(*e->hw, these, gone);

    e->list_ports(these);
    d.ports.reserve(e->ports.size());
    for (PortEntry& pe : e->ports) {
      Port p;
      p.index = pe.index;
      std::optional<std::string> rate;
      read_text(pe.rate, rate, these, gone);
      if (rate) {
        p.rate_bytes_per_second = parse_rate(*rate);
        if (!p.rate_bytes_per_second) {
          these.problems.push_back("read " + pe.rate.path().string() + ": unrecognised rate \"" +
                                   rate->substr(0, 40) + "\"");
        }
      }
      read_text(pe.link_layer, p.link_layer, these, gone);
      if (!pe.pma) pe.pma = discover_counters(pe.dir / "counters", these, e->complete);
      p.has_pma = pe.pma->exists;
      p.pma_counters = read_counters(*pe.pma, these, gone);
      d.ports.push_back(std::move(p));
    }
    if (gone || !e->complete) cache_->forget(name);
    if (gone && attempt == 0) continue;
    std::sort(d.ports.begin(), d.ports.end(),
              [](const Port& a, const Port& b) { return a.index < b.index; });
    append(notes, these);
    return d;
  }
}

std::vector<uint32_t> Reader::port_numbers(const std::string& device, ReadNotes& notes) const {
  std::vector<uint32_t> out;
  if (!is_plain_name(device)) return out;
  DeviceEntry* e = cache_->entry(class_dir_, device);
  if (e == nullptr) return out;
  e->list_ports(notes);
  for (const PortEntry& p : e->ports) out.push_back(p.index);
  if (!e->complete) cache_->forget(device);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<Counter>> Reader::port_hw_counters(const std::string& device,
                                                             uint32_t port,
                                                             ReadNotes& notes) const {
  if (!is_plain_name(device)) return std::nullopt;
  for (int attempt = 0;; ++attempt) {
    DeviceEntry* e = cache_->entry(class_dir_, device);
    if (e == nullptr) return std::nullopt;
    ReadNotes these;
    bool gone = false;
    auto it = e->port_hw.find(port);
    if (it == e->port_hw.end()) {
      const fs::path dir = e->dir / "ports" / std::to_string(port) / "hw_counters";
      it = e->port_hw.emplace(port, discover_counters(dir, these, e->complete, {"lifespan"})).first;
    }
    const bool exists = it->second.exists;
    auto counters = read_counters(it->second, these, gone);
    if (gone || !e->complete) cache_->forget(device);
    if (gone && attempt == 0) continue;
    append(notes, these);
    if (!exists) return std::nullopt;
    return counters;
  }
}

std::optional<PciFunction> Reader::read_pci_function(const std::string& name,
                                                     ReadNotes& notes) const {
  if (!is_plain_name(name)) return std::nullopt;
  for (int attempt = 0;; ++attempt) {
    DeviceEntry* e = cache_->entry(class_dir_, name);
    if (e == nullptr) return std::nullopt;
    if (!e->pci) e->pci = discover_pci(e->dir);
    PciEntry& pci = *e->pci;
    if (!pci.found) return std::nullopt;
    ReadNotes these;
    bool gone = false;
    PciFunction f;
    f.address = pci.address;
    f.physical_function = pci.physical_function;
    read_speed(pci.speed, f.link.speed_transfers_per_second, these, gone);
    read_speed(pci.max_speed, f.link.max_speed_transfers_per_second, these, gone);
    read_width(pci.width, f.link.width_lanes, these, gone);
    read_width(pci.max_width, f.link.max_width_lanes, these, gone);
    read_aer(pci.correctable, f.correctable, these, gone);
    read_aer(pci.nonfatal, f.nonfatal, these, gone);
    read_aer(pci.fatal, f.fatal, these, gone);
    if (gone) cache_->forget(name);
    if (gone && attempt == 0) continue;
    append(notes, these);
    return f;
  }
}

}  // namespace rdma_exporter::sysfs
