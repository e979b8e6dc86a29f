#include "exporter/probe/verbs/device.hpp"

#include <endian.h>
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

bool ipv4_mapped(const uint8_t* raw) {
  for (int i = 0; i < 10; ++i) {
    if (raw[i] != 0) return false;
  }
  return raw[10] == 0xff && raw[11] == 0xff;
}

}  // namespace

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

uint32_t mtu_bytes(ibv_mtu mtu) {
  return 128u << static_cast<unsigned>(mtu);
}

double ticks_to_seconds(uint64_t ticks, uint64_t core_clock_khz) {
  if (core_clock_khz == 0) return 0;
  return static_cast<double>(ticks) / (static_cast<double>(core_clock_khz) * 1000.0);
}

Device::~Device() {
  if (parent_) ibv_dealloc_pd(parent_);
  if (td_) ibv_dealloc_td(td_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

Domain::~Domain() {
  if (parent_) ibv_dealloc_pd(parent_);
  if (pd_) ibv_dealloc_pd(pd_);
}

Result<std::unique_ptr<Domain>> Domain::create(const Device& device) {
  std::unique_ptr<Domain> d(new Domain());
  d->pd_ = ibv_alloc_pd(device.context());
  if (d->pd_ == nullptr) return verbs_error(errno, device.name() + ": allocating a session's PD");
  if (device.td() != nullptr) {
    ibv_parent_domain_init_attr attr{};
    attr.pd = d->pd_;
    attr.td = device.td();
    d->parent_ = ibv_alloc_parent_domain(device.context(), &attr);
  }
  return d;
}

Result<std::vector<DeviceId>> Device::list() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return verbs_error(errno, "listing RDMA devices");
  std::vector<DeviceId> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    out.push_back({ibv_get_device_name(list[i]), be64toh(ibv_get_device_guid(list[i]))});
  }
  ibv_free_device_list(list);
  return out;
}

std::vector<std::string> Device::uverbs_entries() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband_verbs", ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::shared_ptr<Device>> Device::open(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return verbs_error(errno, "listing RDMA devices");
  std::shared_ptr<Device> dev(new Device());
  for (int i = 0; i < n && dev->ctx_ == nullptr; ++i) {
    if (name != ibv_get_device_name(list[i])) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      const int err = errno;
      ibv_free_device_list(list);
      return verbs_error(err, "opening RDMA device " + name);
    }
    dev->ctx_ = ctx;
    dev->name_ = name;
    dev->guid_ = be64toh(ibv_get_device_guid(list[i]));
  }
  ibv_free_device_list(list);
  if (dev->ctx_ == nullptr) return Error{ENODEV, "no RDMA device named " + name};
  ibv_device_attr dattr{};
  if (int rc = ibv_query_device(dev->ctx_, &dattr); rc != 0) {
    return verbs_error(rc, "querying " + name);
  }
  dev->port_count_ = dattr.phys_port_cnt;
  const int flags = ::fcntl(dev->ctx_->async_fd, F_GETFL);
  if (flags < 0 || ::fcntl(dev->ctx_->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return verbs_error(errno, name + ": making the async event descriptor non-blocking");
  }
  dev->pd_ = ibv_alloc_pd(dev->ctx_);
  if (dev->pd_ == nullptr) return verbs_error(errno, dev->name_ + ": allocating a PD");

  ibv_td_init_attr td_attr{};
  dev->td_ = ibv_alloc_td(dev->ctx_, &td_attr);
  if (dev->td_ != nullptr) {
    ibv_parent_domain_init_attr pd_attr{};
    pd_attr.pd = dev->pd_;
    pd_attr.td = dev->td_;
    dev->parent_ = ibv_alloc_parent_domain(dev->ctx_, &pd_attr);
    if (dev->parent_ == nullptr) {
      ibv_dealloc_td(dev->td_);
      dev->td_ = nullptr;
    }
  }

  ibv_device_attr_ex attr{};
  if (ibv_query_device_ex(dev->ctx_, nullptr, &attr) == 0 && attr.completion_timestamp_mask != 0 &&
      attr.hca_core_clock != 0) {
    dev->core_clock_khz_ = attr.hca_core_clock;
    if (!dev->raw_clock()) dev->core_clock_khz_ = 0;
  }
  return dev;
}

bool Device::port_active(uint8_t port) const {
  ibv_port_attr pa{};
  return ibv_query_port(ctx_, port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

bool Device::port_ethernet(uint8_t port) const {
  ibv_port_attr pa{};
  return ibv_query_port(ctx_, port, &pa) == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET;
}

int Device::async_fd() const {
  return ctx_->async_fd;
}

std::vector<DeviceEvent> Device::take_events() {
  std::vector<DeviceEvent> out;
  ibv_async_event event{};
  while (ibv_get_async_event(ctx_, &event) == 0) {
    switch (event.event_type) {
      case IBV_EVENT_DEVICE_FATAL:
        out.push_back(DeviceEvent::fatal);
        break;
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_PORT_ERR:
      case IBV_EVENT_LID_CHANGE:
      case IBV_EVENT_GID_CHANGE:
      case IBV_EVENT_PKEY_CHANGE:
      case IBV_EVENT_SM_CHANGE:
      case IBV_EVENT_CLIENT_REREGISTER:
        out.push_back(DeviceEvent::ports);
        break;
      default:
        out.push_back(DeviceEvent::other);
        break;
    }
    ibv_ack_async_event(&event);
  }
  return out;
}

std::optional<uint64_t> Device::raw_clock() const {
  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  if (ibv_query_rt_values_ex(ctx_, &v) != 0 || (v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK) == 0) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(v.raw_clock.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(v.raw_clock.tv_nsec);
}

Result<PortInfo> Device::port(uint8_t port, int gid_index) const {
  const std::string where = name_ + " port " + std::to_string(port);
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx_, port, &pa); rc != 0)
    return verbs_error(rc, "querying " + where);
  PortInfo info;
  info.port = port;
  info.lid = pa.lid;
  info.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  info.active_mtu = mtu_bytes(pa.active_mtu);
  if (gid_index < 0 && info.ethernet) {
    ibv_device_attr dattr{};
    if (int rc = ibv_query_device(ctx_, &dattr); rc != 0)
      return verbs_error(rc, "querying " + name_);
    std::size_t total = 0;
    for (uint8_t p = 1; p <= dattr.phys_port_cnt; ++p) {
      ibv_port_attr a{};
      if (ibv_query_port(ctx_, p, &a) == 0) total += static_cast<std::size_t>(a.gid_tbl_len);
    }
    std::vector<ibv_gid_entry> entries(std::max<std::size_t>(total, 1));
    const ssize_t got = ibv_query_gid_table(ctx_, entries.data(), entries.size(), 0);
    if (got < 0) return verbs_error(static_cast<int>(-got), "reading the GID table of " + name_);
    for (ssize_t i = 0; i < got; ++i) {
      const auto& e = entries[static_cast<std::size_t>(i)];
      if (e.port_num == port && e.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4_mapped(e.gid.raw)) {
        info.gid_index = static_cast<int>(e.gid_index);
        std::memcpy(info.gid.data(), e.gid.raw, 16);
        return info;
      }
    }
    return Error{ENOENT, where + " has no RoCEv2 IPv4 GID (set the probe class's gid_index)"};
  }
  info.gid_index = gid_index < 0 ? 0 : gid_index;
  ibv_gid gid{};
  if (int rc = ibv_query_gid(ctx_, port, info.gid_index, &gid); rc != 0) {
    return verbs_error(rc, "reading GID " + std::to_string(info.gid_index) + " of " + where);
  }
  std::memcpy(info.gid.data(), gid.raw, 16);
  if (info.ethernet &&
      std::all_of(info.gid.begin(), info.gid.end(), [](uint8_t b) { return !b; })) {
    return Error{ENOENT, where + ": GID " + std::to_string(info.gid_index) + " is empty"};
  }
  return info;
}

}  // namespace rdma_exporter::probe
