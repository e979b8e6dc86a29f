#include "collectors/dcb/dcb_collector.hpp"

#include <linux/dcbnl.h>

#include <map>
#include <optional>

#include "collectors/registry.hpp"
#include "common/kernel/rtnetlink/dcb_codec.hpp"

namespace rdma_exporter {
namespace {

std::string tsa_name(uint8_t tsa) {
  switch (tsa) {
    case IEEE_8021QAZ_TSA_STRICT:
      return "strict";
    case IEEE_8021QAZ_TSA_CB_SHAPER:
      return "cbs";
    case IEEE_8021QAZ_TSA_ETS:
      return "ets";
    case IEEE_8021QAZ_TSA_VENDOR:
      return "vendor";
    default:
      return std::to_string(tsa);
  }
}

// DCB_CAP_DCBX_* flags as words: "lld_managed,ieee".
std::string dcbx_mode(uint8_t flags) {
  static const std::pair<uint8_t, const char*> kFlags[] = {
      {DCB_CAP_DCBX_HOST, "host"},     {DCB_CAP_DCBX_LLD_MANAGED, "lld_managed"},
      {DCB_CAP_DCBX_VER_CEE, "cee"},   {DCB_CAP_DCBX_VER_IEEE, "ieee"},
      {DCB_CAP_DCBX_STATIC, "static"},
  };
  std::string out;
  for (const auto& [bit, word] : kFlags) {
    if ((flags & bit) != 0) out += (out.empty() ? "" : ",") + std::string(word);
  }
  return out;
}

void export_config(const dcb::IeeeConfig& c, const Labels& base, const DcbOptions& options,
                   MetricSink& sink) {
  auto with = [&](const char* name, std::string value) {
    Labels l = base;
    l.emplace_back(name, std::move(value));
    return l;
  };
  if (c.pfc) {
    for (std::size_t p = 0; p < dcb::kMaxTcs; ++p) {
      sink.gauge("rdma_netdev_pfc_enabled",
                 "1 when priority flow control is enabled on the priority (IEEE 802.1Qbb), from "
                 "the netdev's DCB configuration.",
                 with("priority", std::to_string(p)), ((c.pfc->pfc_en >> p) & 1U) != 0 ? 1 : 0);
    }
  }
  if (c.ets) {
    for (std::size_t p = 0; p < dcb::kMaxTcs; ++p) {
      sink.gauge("rdma_netdev_priority_traffic_class",
                 "The traffic class a priority is mapped to (ETS prio_tc), from the netdev's DCB "
                 "configuration.",
                 with("priority", std::to_string(p)), c.ets->prio_tc[p]);
    }
    const std::size_t tcs =
        c.ets->ets_cap >= 1 && c.ets->ets_cap <= dcb::kMaxTcs ? c.ets->ets_cap : dcb::kMaxTcs;
    for (std::size_t tc = 0; tc < tcs; ++tc) {
      sink.gauge("rdma_netdev_ets_bandwidth_percent",
                 "Transmit bandwidth share of the traffic class in percent (ETS tc_tx_bw), from "
                 "the netdev's DCB configuration.",
                 with("traffic_class", std::to_string(tc)), c.ets->tc_tx_bw[tc]);
    }
    for (std::size_t tc = 0; tc < tcs; ++tc) {
      Labels l = with("traffic_class", std::to_string(tc));
      l.emplace_back("tsa", tsa_name(c.ets->tc_tsa[tc]));
      sink.info("rdma_netdev_ets_tsa_info",
                "Transmission selection algorithm of the traffic class: strict, ets, cbs, "
                "vendor (or its number), from the netdev's DCB configuration.",
                std::move(l));
    }
  }
  bool dscp = false;
  for (const auto& app : c.apps) {
    if (app.selector == IEEE_8021QAZ_APP_SEL_DSCP) dscp = true;
  }
  sink.info("rdma_netdev_qos_trust_info",
            "What the NIC classifies received packets by: dscp when the APP table maps DSCP "
            "values to priorities, pcp (the VLAN priority) otherwise.",
            with("trust", dscp ? "dscp" : "pcp"));
  if (options.dscp_priority) {
    std::map<uint16_t, uint8_t> map;
    for (const auto& app : c.apps) {
      if (app.selector == IEEE_8021QAZ_APP_SEL_DSCP && app.protocol < 64 && app.priority < 8) {
        map.emplace(app.protocol, app.priority);  // the first entry of a DSCP value wins
      }
    }
    for (const auto& [value, prio] : map) {
      sink.gauge("rdma_netdev_dscp_priority",
                 "The priority received packets with this DSCP value get (DCB APP table).",
                 with("dscp", std::to_string(value)), prio);
    }
  }
  if (c.dcbx) {
    sink.info("rdma_netdev_dcbx_info",
              "How DCB is negotiated: host or lld_managed (firmware), and the versions "
              "(ieee, cee) or static.",
              with("mode", dcbx_mode(*c.dcbx)));
  }
}

}  // namespace

std::vector<std::string> DcbCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  std::map<std::string, std::optional<dcb::IeeeConfig>> read;  // each netdev once
  for_each_port(*topology, [&](const PortRef& p) {
    const std::string* netdev = p.netdev();
    if (netdev == nullptr) return;  // InfiniBand
    auto it = read.find(*netdev);
    if (it == read.end()) {
      std::optional<dcb::IeeeConfig> config;
      auto reply = route_.exchange(dcb::build_ieee_get(*netdev));
      auto decoded = reply ? dcb::decode_ieee(*reply) : Result<dcb::IeeeConfig>(reply.error());
      if (decoded) {
        config = std::move(decoded).value();
      } else if (const int code = decoded.error().code; code != EOPNOTSUPP && code != ENODEV) {
        // EOPNOTSUPP: no DCB on this netdev (or in this kernel); ENODEV:
        // gone, or in another network namespace.
        errors.push_back(*netdev + " (" + p.name() + "): " + decoded.error().message);
      }
      it = read.emplace(*netdev, std::move(config)).first;
    }
    if (!it->second) return;
    Labels labels = p.labels();
    labels.emplace_back("netdev", *netdev);
    export_config(*it->second, labels, options_, sink);
  });
  return errors;
}

CollectorEntry dcb_entry() {
  CollectorEntry e;
  e.name = "dcb";
  e.help =
      "The DCB configuration (PFC, priority to traffic class, ETS, trust, DCBX) of the netdev "
      "behind each RoCE port, from rtnetlink.";
  set_options<DcbOptions>(e, parse_dcb_options);
  e.make = [](const CollectorContext& c) {
    return std::make_unique<DcbCollector>(*c.kernel.route,
                                          std::any_cast<const DcbOptions&>(c.options));
  };
  return e;
}

}  // namespace rdma_exporter
