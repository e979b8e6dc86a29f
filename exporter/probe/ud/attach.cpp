#include "exporter/probe/ud/attach.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "exporter/probe/ud/port.hpp"

namespace rdma_exporter::probe {
namespace {

// UD datagrams per port: room for this many in flight each way.
constexpr uint32_t kUdQueueDepth = 256;

}  // namespace

UdAttacher::UdAttacher(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats,
                       std::string memory, int gid_index)
    : io_(io), stats_(std::move(stats)), memory_(std::move(memory)), gid_index_(gid_index) {}

void UdAttacher::attach(std::vector<LocalPort>& ports, const std::vector<LocalPort>& previous) {
  std::vector<std::shared_ptr<UdPortStats>> keep;
  for (LocalPort& p : ports) {
    for (const auto& old : previous) {
      if (old.device == p.device && old.info.port == p.info.port && old.info.gid == p.info.gid &&
          old.ud && old.ud->working()) {
        p.ud = old.ud;
      }
    }
    auto stats =
        stats_->ud_port({{"device", p.device->name()}, {"port", std::to_string(p.info.port)}});
    keep.push_back(stats);
    if (p.ud) continue;
    UdPortSettings us;
    us.max_size = std::min<uint32_t>(p.info.active_mtu, 4096);
    us.recv_depth = kUdQueueDepth;
    us.send_depth = kUdQueueDepth;
    us.memory = memory_;
    us.gid_index = gid_index_;
    us.stalls = stats_->stalls();
    auto ud = UdPort::create(io_, p, us, stats);
    if (!ud) {
      if (failed_[p.name()] != ud.error().message) {
        log::warn(
            "probe: no UD queue pair; UD probes from and to the port fail with reason "
            "\"setup\"",
            {{"port", p.name()}, {"err", ud.error().message}});
      }
      failed_[p.name()] = ud.error().message;
      continue;
    }
    failed_.erase(p.name());
    p.ud = std::shared_ptr<UdPort>(std::move(ud.value()));
  }
  stats_->retain_ud_ports(keep);
}

}  // namespace rdma_exporter::probe
