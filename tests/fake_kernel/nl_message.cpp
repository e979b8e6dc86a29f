#include "tests/fake_kernel/nl_message.hpp"

#include <rdma/rdma_netlink.h>

#include <cstring>

namespace rdma_exporter::testing {

NlMessage::NlMessage(uint16_t type, uint16_t flags, uint32_t seq) : buf_(64 * 1024) {
  nlh_ = mnl_nlmsg_put_header(buf_.data());
  nlh_->nlmsg_type = type;
  nlh_->nlmsg_flags = flags;
  nlh_->nlmsg_seq = seq;
}

NlMessage& NlMessage::family_header(const void* data, std::size_t len) {
  std::memcpy(mnl_nlmsg_put_extra_header(nlh_, len), data, len);
  return *this;
}

NlMessage& NlMessage::u8(uint16_t attr, uint8_t v) {
  mnl_attr_put_u8(nlh_, attr, v);
  return *this;
}
NlMessage& NlMessage::u32(uint16_t attr, uint32_t v) {
  mnl_attr_put_u32(nlh_, attr, v);
  return *this;
}
NlMessage& NlMessage::u64(uint16_t attr, uint64_t v) {
  mnl_attr_put_u64(nlh_, attr, v);
  return *this;
}
NlMessage& NlMessage::str(uint16_t attr, const std::string& v) {
  mnl_attr_put_strz(nlh_, attr, v.c_str());
  return *this;
}
NlMessage& NlMessage::raw(uint16_t attr, const void* data, std::size_t len) {
  mnl_attr_put(nlh_, attr, len, data);
  return *this;
}
NlMessage& NlMessage::begin_nest(uint16_t attr) {
  nests_.push_back(mnl_attr_nest_start(nlh_, attr));
  return *this;
}
NlMessage& NlMessage::end_nest() {
  mnl_attr_nest_end(nlh_, nests_.back());
  nests_.pop_back();
  return *this;
}

Bytes NlMessage::bytes() const {
  return Bytes(buf_.begin(), buf_.begin() + nlh_->nlmsg_len);
}

uint16_t nldev_type(uint16_t cmd) {
  return RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
}

Bytes done_message(int error, uint32_t seq) {
  NlMessage m(NLMSG_DONE, NLM_F_MULTI, seq);
  void* p = mnl_nlmsg_put_extra_header(m.header(), sizeof(int));
  std::memcpy(p, &error, sizeof error);
  return m.bytes();
}

Bytes ack_message(uint32_t seq) {
  return error_message(0, "", seq);
}

Bytes error_message(int error, const std::string& extack, uint32_t seq, const Bytes& original,
                    bool capped) {
  uint16_t flags = capped ? NLM_F_CAPPED : 0;
  if (!extack.empty()) flags |= NLM_F_ACK_TLVS;
  NlMessage m(NLMSG_ERROR, flags, seq);
  nlmsghdr orig{};
  if (original.size() >= sizeof(nlmsghdr)) std::memcpy(&orig, original.data(), sizeof orig);
  const std::size_t extra =
      sizeof(nlmsgerr) +
      (capped || original.size() < sizeof(nlmsghdr) ? 0 : original.size() - sizeof(nlmsghdr));
  auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(m.header(), extra));
  err->error = error;
  err->msg = orig;
  if (!capped && original.size() > sizeof(nlmsghdr)) {
    std::memcpy(reinterpret_cast<uint8_t*>(err) + sizeof(nlmsgerr),
                original.data() + sizeof(nlmsghdr), original.size() - sizeof(nlmsghdr));
  }
  if (!extack.empty()) m.str(NLMSGERR_ATTR_MSG, extack);
  return m.bytes();
}

netlink::Reply failure_reply(int err, std::span<const uint8_t> request, const std::string& extack) {
  netlink::Reply r;
  r.datagrams.push_back(error_message(-err, extack, 0, Bytes(request.begin(), request.end())));
  return r;
}

std::vector<const nlattr*> attributes(const nlmsghdr* nlh) {
  std::vector<const nlattr*> out;
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload(nlh));
  auto len = static_cast<int>(mnl_nlmsg_get_payload_len(nlh));
  while (mnl_attr_ok(a, len)) {
    out.push_back(a);
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
    a = mnl_attr_next(a);
  }
  return out;
}

Bytes datagram(std::initializer_list<Bytes> messages) {
  return datagram(std::vector<Bytes>(messages));
}

Bytes datagram(const std::vector<Bytes>& messages) {
  Bytes out;
  for (const auto& m : messages) {
    out.insert(out.end(), m.begin(), m.end());
    out.resize(MNL_ALIGN(out.size()), 0);
  }
  return out;
}

}  // namespace rdma_exporter::testing
