#include "common/kernel/sys/reader.hpp"

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
    if (text->empty() || is_not_available_text(*text)) {
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

// One device as discovered; each part found at its first use.
struct DeviceEntry {
  Identity identity;
  fs::path dir;
  AttributeFile fw_ver, board_id, hca_type, node_desc;
  std::optional<CounterDir> hw;  // device-level hw_counters/
  bool ports_listed = false;
  std::vector<PortEntry> ports;            // in the order of their names
  std::map<uint32_t, CounterDir> port_hw;  // ports/<n>/hw_counters/
  std::optional<PciFunctionFiles> pci;     // <dev>/device
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
    read_optional_text(e->fw_ver, d.fw_ver, these, gone);
    read_optional_text(e->board_id, d.board_id, these, gone);
    read_optional_text(e->hca_type, d.hca_type, these, gone);
    read_optional_text(e->node_desc, d.node_desc, these, gone);
    // "lifespan" is a setting (the counters' cache time in ms), not a counter.
    if (!e->hw) e->hw = discover_counters(e->dir / "hw_counters", these, e->complete, {"lifespan"});
    d.hw_counters = read_counters(*e->hw, these, gone);

    e->list_ports(these);
    d.ports.reserve(e->ports.size());
    for (PortEntry& pe : e->ports) {
      Port p;
      p.index = pe.index;
      std::optional<std::string> rate;
      read_optional_text(pe.rate, rate, these, gone);
      if (rate) {
        p.rate_bytes_per_second = parse_rate(*rate);
        if (!p.rate_bytes_per_second) {
          these.problems.push_back("read " + pe.rate.path().string() + ": unrecognised rate \"" +
                                   rate->substr(0, 40) + "\"");
        }
      }
      read_optional_text(pe.link_layer, p.link_layer, these, gone);
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
    if (!e->pci) e->pci = PciFunctionFiles::discover(e->dir);
    if (!e->pci->found()) return std::nullopt;
    ReadNotes these;
    bool gone = false;
    PciFunction f = e->pci->read(these, gone);
    if (gone) cache_->forget(name);
    if (gone && attempt == 0) continue;
    append(notes, these);
    return f;
  }
}

}  // namespace rdma_exporter::sysfs
