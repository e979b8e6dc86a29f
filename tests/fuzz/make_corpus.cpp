// Writes the fuzz harnesses' seed corpora: real requests answered by the
// fake kernel in the kernel's wire format, the ethtool answers it builds,
// probe messages from the protocol's encoder, the shipped configuration
// files and a few texts. Usage: fuzz_make_corpus <source dir> <corpus dir>.

#include <linux/ethtool.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "common/kernel/netdev/codec.hpp"
#include "common/kernel/netdev/netlink_codec.hpp"
#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "common/kernel/nldev/optional_counter_codec.hpp"
#include "common/kernel/rtnetlink/dcb_codec.hpp"
#include "exporter/probe/wire/datagram.hpp"
#include "exporter/probe/wire/protocol.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethnl.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_module.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;
using namespace rdma_exporter::testing;
namespace fs = std::filesystem;

namespace {

fs::path out_dir;

void write(const std::string& harness, const std::string& name, const std::vector<uint8_t>& bytes) {
  const fs::path dir = out_dir / harness;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> with_selector(uint8_t selector, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> out{selector};
  out.insert(out.end(), bytes.begin(), bytes.end());
  return out;
}

std::vector<uint8_t> text_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << file << "\n";
    std::exit(1);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void reply(const std::string& harness, const std::string& name, netlink::Transport& kernel,
           const std::vector<uint8_t>& request, uint8_t selector = 0, bool selected = false) {
  auto r = kernel.exchange(request);
  if (!r) {
    std::cerr << name << ": " << r.error().message << "\n";
    std::exit(1);
  }
  const auto bytes = fuzz::reply_bytes(*r);
  write(harness, name, selected ? with_selector(selector, bytes) : bytes);
}

FakeNldev fake_nldev() {
  FakeNldev k;
  k.messages_per_datagram = 2;
  FakeDevice dev;
  dev.index = 3;
  dev.name = "mlx5_0";
  dev.fw_version = "20.31.1014";
  dev.node_guid = 0x0c42a10300aabbccULL;
  dev.sys_image_guid = 0x0c42a10300aabbccULL;
  dev.resources = {{"qp", 12}, {"cq", 20}, {"mr", 4}, {"pd", 3}};
  FakePort port;
  port.index = 1;
  port.netdev = "ens1f0np0";
  port.netdev_index = 4;
  port.counters = {{"rx_write_requests", 1234}, {"out_of_sequence", 2}, {"np_cnp_sent", 77}};
  port.optional_counters = mlx5_optional_counters();
  if (!port.optional_counters.empty()) port.optional_counters.front().enabled = true;
  port.counter_mode = RDMA_COUNTER_MODE_AUTO;
  port.auto_mask = RDMA_COUNTER_MASK_QP_TYPE;
  dev.ports.push_back(port);
  FakePort ib;
  ib.index = 2;
  ib.lid = 7;
  ib.sm_lid = 1;
  ib.lmc = 0;
  ib.counters = {{"rx_write_requests", 5}};
  dev.ports.push_back(ib);
  k.devices.push_back(dev);
  k.create_qp(3, 1, 2, 4242);
  k.create_qp(3, 1, 4, std::nullopt, "ib_core");
  return k;
}

void nldev_corpus() {
  FakeNldev k = fake_nldev();
  reply("nldev", "devices", k, nldev::build_device_dump());
  reply("nldev", "ports", k, nldev::build_port_dump(3));
  reply("nldev", "port_counters", k, nldev::build_port_counters_get(3, 1));
  reply("nldev", "resources", k, nldev::build_resource_summary_dump());
  reply("nldev", "counter_mode", k, nldev::build_counter_mode_get(3, 1));
  reply("nldev", "counter_sets", k, nldev::build_counter_sets_dump(3));
  reply("nldev", "qps", k, nldev::build_qp_dump(3));
  reply("nldev", "counter_status", k, nldev::build_counter_status_get(3, 1));
  reply("nldev", "set_optional", k, nldev::build_set_optional_counters(3, 1, {3, 4}));
  reply("nldev", "set_auto_mode", k, nldev::build_set_auto_mode(3, 1, 0));
  reply("nldev", "bind_qp_refused", k, nldev::build_bind_qp(3, 1, 100, std::nullopt));
  k.devices[0].qps.clear();
  k.devices[0].counter_sets.clear();
  const uint32_t lqpn = k.create_qp(3, 1, 2, 99);
  reply("nldev", "bind_qp", k, nldev::build_bind_qp(3, 1, lqpn, std::nullopt));
  const uint32_t counter = k.devices[0].qps.back().counter_id.value_or(1);
  reply("nldev", "unbind_qp", k, nldev::build_unbind_qp(3, 1, counter, lqpn));
  k.interrupt_next_dumps = 1;
  reply("nldev", "devices_interrupted", k, nldev::build_device_dump());
  k.devices[0].ports[0].stat_error = EOPNOTSUPP;
  reply("nldev", "port_counters_error", k, nldev::build_port_counters_get(3, 1));
  netlink::Reply err;
  err.datagrams.push_back(error_message(-EINVAL, "Invalid attribute", 0, nldev::build_qp_dump(3),
                                        /*capped=*/false));
  write("nldev", "error_extack", fuzz::reply_bytes(err));

  // A counter set whose QPs are listed as ranges and single numbers, the
  // QP-number entries' two forms.
  NlMessage sets(nldev_type(RDMA_NLDEV_CMD_STAT_GET), NLM_F_MULTI);
  sets.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3)
      .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")
      .begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 2)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL)
      .begin_nest(RDMA_NLDEV_ATTR_RES_QP)
      .begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY)
      .u32(RDMA_NLDEV_ATTR_MIN_RANGE, 10)
      .u32(RDMA_NLDEV_ATTR_MAX_RANGE, 13)
      .end_nest()
      .begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY)
      .u32(RDMA_NLDEV_ATTR_RES_LQPN, 99)
      .end_nest()
      .end_nest()
      .begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
      .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "rx_write_requests")
      .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 7)
      .end_nest()
      .end_nest()
      .end_nest()
      .end_nest();
  write("nldev", "counter_sets_ranges",
        fuzz::reply_bytes(netlink::Reply{{datagram({sets.bytes(), done_message()})}}));
}

void kernel_codecs_corpus() {
  FakeDcb dcb;
  dcb.netdevs["ens1f0np0"] = mlx5_dcb();
  FakeDcbNetdev veth;
  veth.dcb = false;
  dcb.netdevs["veth0"] = veth;
  reply("kernel_codecs", "dcb_mlx5", dcb, dcb::build_ieee_get("ens1f0np0"), 0, true);
  reply("kernel_codecs", "dcb_none", dcb, dcb::build_ieee_get("veth0"), 0, true);

  const auto veth_stats = veth_netdev();
  std::vector<std::string> names;
  std::vector<uint64_t> values;
  for (const auto& [name, value] : veth_stats.stats) {
    names.push_back(name);
    values.push_back(value);
  }
  write("kernel_codecs", "ethtool_drvinfo", with_selector(1, drvinfo_answer("mlx5_core", 3)));
  write("kernel_codecs", "ethtool_count", with_selector(1, stats_count_answer(names.size())));
  write("kernel_codecs", "ethtool_no_count", with_selector(1, stats_count_answer(std::nullopt)));
  write("kernel_codecs", "ethtool_names",
        with_selector(1, stat_names_answer(names, ethtool::room_for(names.size()))));
  write("kernel_codecs", "ethtool_values",
        with_selector(1, stat_values_answer(values, ethtool::room_for(values.size()))));

  FakeEthnl ethnl;
  FakeEthnlNetdev fec;
  fec.down_events = 3;
  fec.fec = true;
  fec.active = 50;  // RS
  fec.corrected = {10, 4, 6};
  fec.uncorrectable = {1};
  ethnl.netdevs["ens1f0np0"] = fec;
  FakeEthnlNetdev down;
  down.link = 0;
  down.ext_state = 4;
  down.ext_substate = 2;
  ethnl.netdevs["veth0"] = down;
  const uint16_t family = FakeEthnl::kFamily;
  reply("kernel_codecs", "ethnl_family", ethnl, ethnl::build_get_family(), 2, true);
  reply("kernel_codecs", "ethnl_linkstate", ethnl, ethnl::build_linkstate_get(family, "veth0"), 2,
        true);
  reply("kernel_codecs", "ethnl_fec", ethnl, ethnl::build_fec_get(family, "ens1f0np0"), 2, true);
  reply("kernel_codecs", "ethnl_fec_unsupported", ethnl, ethnl::build_fec_get(family, "veth0"), 2,
        true);
  ethnl.netdevs["ens1f0np0"].module = qsfp28_module();
  reply("kernel_codecs", "ethnl_module_eeprom", ethnl,
        ethnl::build_module_eeprom_get(family, "ens1f0np0", ethnl::EepromRead{}), 2, true);
}

// module_eeprom: selector 0, then records of a key byte (0x80: A2h, 0x40:
// upper half, the rest the page) and 128 bytes; selector 1, then the legacy
// type and a flat image.
void module_eeprom_corpus() {
  auto records = [](const ModuleHalves& halves) {
    std::vector<uint8_t> out = {0};
    for (const auto& [key, bytes] : halves) {
      out.push_back(static_cast<uint8_t>((key.address == module_eeprom::kAddressA2 ? 0x80 : 0) |
                                         (key.upper ? 0x40 : 0) | (key.page & 0x3F)));
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
    return out;
  };
  write("module_eeprom", "sfp", records(sfp_module()));
  write("module_eeprom", "qsfp28", records(qsfp28_module()));
  write("module_eeprom", "qsfp_dd", records(qsfp_dd_module()));
  auto flat = [](uint32_t type, const std::vector<uint8_t>& image) {
    std::vector<uint8_t> out = {1, static_cast<uint8_t>(type)};
    out.insert(out.end(), image.begin(), image.end());
    return out;
  };
  write("module_eeprom", "flat_sff8472",
        flat(ETH_MODULE_SFF_8472, flat_image(sfp_module(), ETH_MODULE_SFF_8472, 512)));
  write("module_eeprom", "flat_sff8636",
        flat(ETH_MODULE_SFF_8636, flat_image(qsfp28_module(), ETH_MODULE_SFF_8636, 640)));
}

void text_values_corpus() {
  const std::vector<std::pair<std::string, std::string>> texts{
      {"counter", "18446744073709551615\n"},
      {"rate_edr", "100 Gb/sec (4X EDR)\n"},
      {"rate_sdr", "2.5 Gb/sec (1X SDR)\n"},
      {"not_available", "N/A (no PMA)\n"},
      {"duration", "1m30s"},
      {"duration_ms", "500ms"},
      {"listen_v6", "[::1]:10910"},
      {"listen_any", ":10910"},
      {"pattern_device", "^mlx5_[0-9]+$"},
      {"pattern_stat", "(rx|tx)_vport_rdma_(unicast|multicast)_(packets|bytes)"},
      {"pattern_class", "[[:alpha:]]+_\\d{1,3}(?:x|y)*"},
      {"aer_fatal", "Undefined 0\nDLP 3\nSDES 0\nTLP 1\nTOTAL_ERR_FATAL 2\n"},
      {"aer_spelled_out", "Receiver Error 2\nBad TLP 0\nRELAY_NUM Rollover 0\nTOTAL_ERR_COR 2\n"},
      {"pcie_speed", "16.0 GT/s PCIe\n"},
      {"pcie_width", "16\n"},
  };
  for (const auto& [name, text] : texts) write("text_values", name, text_bytes(text));
}

void probe_corpus() {
  using namespace probe::wire;
  Hello hello;
  hello.nonce = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  hello.keys = 1;
  PortAd a;
  a.device = "mlx5_0";
  a.port = 1;
  a.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  a.rail = "rail0";
  PortAd b = a;
  b.device = "mlx5_1";
  b.rail = "rail1";
  b.ethernet = false;
  hello.ports = {a, b};
  write("probe_protocol", "hello", encode(hello));
  Hello empty;
  write("probe_protocol", "hello_no_ports", encode(empty));
  Setup setup;
  setup.op = probe::Op::read;
  setup.size = 4096;
  setup.tclass = 106;
  setup.sl = 3;
  setup.mtu = 4096;
  setup.peer = {0x1234, 0x777, 0, a.gid, 0xabcd, 0x7f0000001000ULL};
  setup.device = "mlx5_0";
  setup.rail = "rail0";
  setup.nonce.fill(0xa5);
  setup.dialled = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9}, 10911};
  setup.macs = {{}, {}};
  setup.macs[0].fill(0x5a);
  setup.macs[1].fill(0x6b);
  write("probe_protocol", "setup", encode(setup));
  Setup by_rail = setup;
  by_rail.device.clear();
  write("probe_protocol", "setup_by_rail", encode(by_rail));
  Accept accept;
  accept.peer = {0x4321, 0x999, 0, a.gid, 0x1, 0x2};
  accept.mac.fill(0x3c);
  write("probe_protocol", "accept", encode(accept));
  Reject reject;
  reject.code = RejectCode::capacity;
  reject.reason = "session cap reached (64)";
  write("probe_protocol", "reject", encode(reject));
  write("probe_protocol", "keepalive", encode(Keepalive{}));
  UdSetup ud;
  ud.size = 64;
  ud.tclass = 106;
  ud.peer = {0x11, 0x1234567, 0, a.gid};
  ud.device = "mlx5_0";
  ud.nonce.fill(0xc3);
  ud.dialled = setup.dialled;
  ud.macs = {{}};
  ud.macs[0].fill(0x5a);
  write("probe_protocol", "ud_setup", encode(ud));
  UdSetup ud_by_rail = ud;
  ud_by_rail.device.clear();
  ud_by_rail.rail = "rail0";
  write("probe_protocol", "ud_setup_by_rail", encode(ud_by_rail));
  UdAccept ud_accept;
  ud_accept.peer = {0x12, 0x7654321, 0, b.gid};
  ud_accept.mac.fill(0x4b);
  write("probe_protocol", "ud_accept", encode(ud_accept));

  // Sessions: the end under test (0 a responder, 4 one with a secret, 1 a
  // keep-alive loop, 2 a prober), then what its peer says in order.
  const auto session = [](uint8_t end, const std::vector<Message>& said,
                          const std::vector<uint8_t>& tail = {}) {
    std::vector<uint8_t> out = {end};
    for (const auto& m : said) {
      const auto bytes = encode(m);
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  };
  write("probe_session", "responder_setup", session(0, {setup}));
  write("probe_session", "responder_ud_setup_with_secret", session(4, {ud}));
  write("probe_session", "responder_keepalive_first", session(0, {Keepalive{}, setup}));
  write("probe_session", "keepalives_then_reject",
        session(1, {Keepalive{}, Keepalive{}, Keepalive{}, reject}));
  write("probe_session", "keepalives_then_cut", session(1, {Keepalive{}, Keepalive{}}, {'R', 'X'}));
  Hello lists_port;
  lists_port.nonce = hello.nonce;
  lists_port.ports = {a};
  UdAccept unsigned_accept = ud_accept;
  unsigned_accept.mac = {};
  write("probe_session", "prober_accepted",
        session(2, {lists_port, unsigned_accept, Keepalive{}, Keepalive{}, reject}));
  write("probe_session", "prober_rejected", session(2, {lists_port, reject}));
  write("probe_session", "prober_secret_required", session(2, {hello, ud_accept}));

  // A UD receive: 40 bytes of GRH area, then the datagram padded to 64.
  const auto receive = [](const std::vector<uint8_t>& grh, const Datagram& d) {
    std::vector<uint8_t> out = grh;
    out.resize(40);
    std::vector<uint8_t> payload(64);
    encode_datagram(d, payload);
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
  };
  std::vector<uint8_t> ipv4(40);  // RoCE v2 over IPv4: 10.0.0.2 -> 10.0.0.1
  const uint8_t header[20] = {0x45, 0, 0,  92, 0, 0, 0x40, 0, 64, 17,
                              0,    0, 10, 0,  0, 2, 10,   0, 0,  1};
  std::copy(std::begin(header), std::end(header), ipv4.begin() + 20);
  std::vector<uint8_t> grh(40);  // InfiniBand / RoCE over IPv6: a GRH
  grh[0] = 0x60;
  std::copy(b.gid.begin(), b.gid.end(), grh.begin() + 8);
  Datagram request;
  request.session = 7;
  request.seq = 42;
  request.path = 3;
  request.tclass = 106;
  write("probe_datagram", "request_ipv4", receive(ipv4, request));
  Datagram reply = request;
  reply.kind = DatagramKind::reply;
  reply.flags = kDelayDeviceClock;
  reply.responder_delay_ns = 12345;
  write("probe_datagram", "reply_grh", receive(grh, reply));
}

void config_corpus(const fs::path& source) {
  write("config", "rdma_exporter_yml",
        with_selector(0, text_bytes(read_text(source / "config" / "rdma_exporter.yml"))));
  write("config", "minimal",
        with_selector(0, text_bytes("web:\n  listen_address: \"[::1]:10910\"\n"
                                    "devices:\n  include: ['^mlx5_.*']\n"
                                    "collectors:\n  dcb: true\n  ethtool: true\n"
                                    "probe:\n  enabled: true\n  targets: [{address: "
                                    "'peer-a:10911', labels: {rack: r1}}]\n")));
  write("config", "file_sd_json",
        with_selector(
            1, text_bytes("[{\"targets\": [\"10.0.0.2:10911\", \"[fd00::2]:10911\"],\n"
                          "  \"labels\": {\"rack\": \"r12\", \"__rail__\": \"rail0\"}}]\n")));
  write("config", "file_sd_yaml",
        with_selector(1, text_bytes("- targets: [peer-a:10911, peer-b:10911]\n"
                                    "  labels:\n    zone: a\n")));
  write("config", "web_config_yml",
        with_selector(2, text_bytes(read_text(source / "config" / "web-config.yml"))));
  write("config", "web_config_users",
        with_selector(2,
                      text_bytes("basic_auth_users:\n  prometheus: $2y$10$" + std::string(53, 'x') +
                                 "\nhttp_server_config:\n"
                                 "  headers:\n    X-Frame-Options: deny\n")));
}

void http_corpus() {
  const std::vector<std::pair<std::string, std::string>> requests{
      {"metrics_gzip",
       "GET /metrics HTTP/1.1\r\nHost: h:10910\r\nAccept-Encoding: gzip;q=0.5, *;q=0\r\n\r\n"},
      {"metrics_head", "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"},
      {"healthz_auth",
       "GET /healthz HTTP/1.1\r\nAuthorization: Basic cHJvbWV0aGV1czpzZWNyZXQ=\r\n\r\n"},
      {"reload", "POST /-/reload HTTP/1.1\r\nContent-Length: 0\r\n\r\n"},
      {"not_allowed", "DELETE / HTTP/1.1\r\n\r\n"},
      {"chunked", "PUT /-/reload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
  };
  for (const auto& [name, text] : requests) write("http_request", name, text_bytes(text));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_make_corpus <source dir> <corpus dir>\n";
    return 2;
  }
  out_dir = argv[2];
  nldev_corpus();
  kernel_codecs_corpus();
  text_values_corpus();
  module_eeprom_corpus();
  probe_corpus();
  config_corpus(argv[1]);
  http_corpus();
  return 0;
}
