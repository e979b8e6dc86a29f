// common/address: the source group a client counts in, which the HTTP
// server's per-source limits and the probe's responder both use.

#include "common/address.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter {
namespace {

using boost::asio::ip::make_address;

TEST(SourceGroup, IPv4ByAddressIPv6ByItsSlash64) {
  const struct {
    const char* address;
    const char* group;
  } cases[] = {
      {"192.0.2.7", "192.0.2.7"},
      {"192.0.2.8", "192.0.2.8"},
      {"127.0.0.1", "127.0.0.1"},
      {"::ffff:192.0.2.7", "192.0.2.7"},  // IPv4-mapped: the IPv4 address's group
      {"2001:db8:1:2::1", "2001:db8:1:2::/64"},
      {"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
      {"2001:DB8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
      {"2001:db8:1:3::1", "2001:db8:1:3::/64"},
      {"::1", "::/64"},
      {"fd00::1", "fd00::/64"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(source_group(make_address(c.address)), c.group) << c.address;
  }
}

}  // namespace
}  // namespace rdma_exporter
