#pragma once

// The collector registry: one entry per collector, in collection order. The
// configuration (the `collectors` section and each collector's own section),
// reload, the privilege checks at start-up and the collection all read this
// one table. Adding a collector: its folder, and one line in registry.cpp.

#include <yaml-cpp/yaml.h>

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.hpp"
#include "common/kernel/interfaces.hpp"
#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// What the process may do, for the start-up warnings about configured work
// that will fail.
struct Privileges {
  bool cap_net_admin = false;
  bool host_pid_namespace = true;
  bool verbs_device = true;  // some /dev/infiniband/uverbs* opens read-write
};

// What a collector is made from.
struct CollectorContext {
  KernelInterfaces& kernel;
  std::string sysfs_root;   // `sysfs.root`
  const std::any& options;  // the collector's options (its entry's type), or empty
  // The process collects once (--once): a collector that reads in the
  // background reads in collect() instead.
  bool one_collection = false;
};

struct CollectorEntry {
  std::string name;  // also its key in `collectors` and, with options, its section
  std::string help;  // one line: what it exports
  bool enabled_by_default = true;
  bool reads_rdma_netlink = true;  // false: it works without rdma netlink
  bool needs_kubernetes = false;   // true: it runs only with kubernetes.enabled

  // Its options, for a collector that has a configuration section named like
  // it: the defaults, the section's parser (one message per problem through
  // the walker), the checks that flags may also affect, and the start-up
  // warnings about configured work this process lacks the privileges for.
  std::function<std::any()> default_options;
  std::function<void(Walker&, const YAML::Node&, const std::string&, std::any&)> parse_options;
  std::function<std::vector<std::string>(const std::any&)> validate;
  std::function<std::vector<std::string>(const std::any&, const Privileges&)> privilege_problems;

  std::function<std::unique_ptr<Collector>(const CollectorContext&)> make;
};

// Typed options for an entry: Options is the collector's options struct.
template <typename Options>
void set_options(
    CollectorEntry& e,
    std::function<void(Walker&, const YAML::Node&, const std::string&, Options&)> parse,
    std::function<std::vector<std::string>(const Options&)> validate = nullptr) {
  e.default_options = [] { return std::any(Options{}); };
  e.parse_options = [parse](Walker& w, const YAML::Node& n, const std::string& path,
                            std::any& out) { parse(w, n, path, std::any_cast<Options&>(out)); };
  if (validate) {
    e.validate = [validate](const std::any& o) {
      return validate(std::any_cast<const Options&>(o));
    };
  }
}

// Every collector, in collection order.
const std::vector<CollectorEntry>& collector_registry();
const CollectorEntry* find_collector(std::string_view name);

// Which collectors run, and each one's options: every registered collector,
// at its default until the configuration says otherwise.
class CollectorSettings {
 public:
  CollectorSettings();

  bool enabled(std::string_view name) const { return setting(name).enabled; }
  void set_enabled(std::string_view name, bool on) { setting(name).enabled = on; }

  const std::any& options_of(std::string_view name) const { return setting(name).options; }
  std::any& options_of(std::string_view name) { return setting(name).options; }

  // The options of the collector Options::kCollector names.
  template <typename Options>
  Options& options() {
    return std::any_cast<Options&>(options_of(Options::kCollector));
  }
  template <typename Options>
  const Options& options() const {
    return std::any_cast<const Options&>(options_of(Options::kCollector));
  }

 private:
  struct Setting {
    bool enabled = true;
    std::any options;
  };
  Setting& setting(std::string_view name);
  const Setting& setting(std::string_view name) const;

  std::map<std::string, Setting, std::less<>> settings_;
};

}  // namespace rdma_exporter
