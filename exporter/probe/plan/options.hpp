#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exporter/probe/plan/limits.hpp"
#include "exporter/probe/wire/qp_params.hpp"

namespace YAML {
class Node;
}

namespace rdma_exporter {
class Walker;  // common/yaml_walker.hpp
}

namespace rdma_exporter::probe {

// One kind of probe: an operation at one message size on one priority (its
// QpParams), how often it is sent and how long it may take. A target is
// probed with every class it names (all of them by default).
struct ProbeClass : QpParams {
  std::string name;
  std::optional<uint8_t> port;   // only local ports with this number (default: every port)
  std::optional<int> gid_index;  // default: probe.gid_index
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds timeout{std::chrono::seconds(1)};
  // How long to spin on the completion queue before sleeping on its
  // completion channel.
  std::chrono::microseconds busy_poll{100};
  // UD: how many flow labels (RoCE v2: UDP source ports, so ECMP paths)
  // successive probes cycle through.
  uint8_t flows = 4;

  bool operator==(const ProbeClass&) const = default;
};

// A peer to probe: the address of its probe control port (a host: its
// ports are discovered) and labels that every series of the target carries.
struct Target {
  std::string address;  // host:port
  std::map<std::string, std::string> labels;
  std::vector<std::string> classes;  // empty: every class
  std::string rail;                  // only the target's ports on this rail (default: all)

  bool operator==(const Target&) const = default;
};

// Which targets this host probes in each epoch (docs/probe.md, "Pinglists").
struct PinglistOptions {
  std::string group_label = "rack";  // the target label that names a host's group
  std::size_t remote_per_rail = 4;   // hosts of other groups per local rail and epoch
  std::chrono::milliseconds epoch{std::chrono::seconds(60)};
  std::string group;  // this host's group when the target list does not name it

  bool operator==(const PinglistOptions&) const = default;
};

// The `probe` section of the configuration.
struct ProbeOptions {
  bool enabled = false;
  // Which local ports probe and answer: devices whose whole name matches the
  // regular expression (empty: every device), ports with this number (unset:
  // every port), of this link layer ("ethernet", "infiniband"; empty: both).
  std::string device;
  std::optional<uint8_t> port;
  std::string link_layer;
  int gid_index = -1;  // -1: the port's RoCEv2 IPv4 GID (InfiniBand: 0)
  // Rail labels by "device/port" or "device"; a port not named here is on
  // the rail of its GID's subnet.
  std::map<std::string, std::string> rails;
  bool cross_rail = false;  // probe every port of a target, not only the same rail's
  // How often a target is asked which ports it has.
  std::chrono::milliseconds discovery_interval{std::chrono::seconds(30)};
  // Where the responder accepts control connections; the prober also uses
  // its port for the loopback target.
  std::string listen_address = ":10911";
  std::vector<ProbeClass> classes;
  std::vector<Target> targets;
  std::vector<std::string> file_sd;  // files in Prometheus file_sd format
  PinglistOptions pinglist;
  // UD classes' latency histograms: per (local port, target group) ("group"),
  // or per pair as RC classes have them ("target"; for small fleets).
  std::string histograms = "group";
  // UD pairs' own series: their counters and last success ("all"), or only
  // their window's sent, lost and failed while it holds a loss or failure
  // ("failing", the sparse shape).
  std::string pair_series = "all";
  std::chrono::milliseconds file_sd_refresh{std::chrono::seconds(5)};
  bool loopback = false;  // probe this host through its own device
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(3)};
  std::chrono::milliseconds backoff_initial{std::chrono::milliseconds(500)};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(30)};
  std::string secret_file;  // shared secret: both ends of a session prove it by HMAC
  // After a reload that changes the secret, the previous one is still
  // accepted and used for this long.
  std::chrono::milliseconds secret_grace{std::chrono::minutes(10)};
  // The responder's budgets (limits.hpp): `probe.max_sessions`,
  // `probe.idle_timeout`, ... in the configuration.
  ResponderLimits responder;
  // Memory for probe buffers: "host" (page-aligned heap) or "udmabuf"
  // (a dma-buf made by /dev/udmabuf, registered with ibv_reg_dmabuf_mr).
  std::string memory = "host";

  bool operator==(const ProbeOptions&) const = default;
};

// Reads the `probe` section at `path` into `out`, reporting every problem
// through `w` (defaults stay for keys that are absent).
void parse_probe_options(Walker& w, const YAML::Node& node, const std::string& path,
                         ProbeOptions& out);

// One line per problem ("probe.classes[0].mtu: ..."); empty when valid.
std::vector<std::string> validate_probe_options(const ProbeOptions& options);

// The classes in use: the configured ones, or one 64-byte UD probe.
std::vector<ProbeClass> effective_classes(const ProbeOptions& options);

}  // namespace rdma_exporter::probe
