// exporter/http/auth_checks: the places of the bcrypt check queue, per
// source group and in all, and their return, without threads.

#include "exporter/http/auth_checks.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rdma_exporter {
namespace {

using boost::asio::ip::make_address;
using Place = AuthChecks::Place;

TEST(AuthChecks, TwoPerSourceGroupAndSixteenInAllByDefault) {
  AuthChecks checks;
  const auto a = make_address("192.0.2.1");
  std::vector<Place> held;
  for (int i = 0; i < 2; ++i) {
    auto place = checks.take(a);
    ASSERT_TRUE(place) << i;
    held.push_back(std::move(*place));
  }
  EXPECT_FALSE(checks.take(a));
  EXPECT_FALSE(checks.take(make_address("::ffff:192.0.2.1")));  // the same address, mapped
  // Seven more groups of two: sixteen in all; an eighth group finds none.
  for (int g = 2; g <= 8; ++g) {
    const auto source = make_address("192.0.2." + std::to_string(g));
    for (int i = 0; i < 2; ++i) {
      auto place = checks.take(source);
      ASSERT_TRUE(place) << g << " " << i;
      held.push_back(std::move(*place));
    }
  }
  EXPECT_EQ(checks.held(), 16);
  EXPECT_FALSE(checks.take(make_address("192.0.2.9")));
  EXPECT_EQ(checks.held(make_address("192.0.2.9")), 0);
  // One given back: one more, from any group under its cap.
  held.pop_back();
  EXPECT_TRUE(checks.take(make_address("192.0.2.9")));
}

TEST(AuthChecks, AnIPv6SubnetIsOneSource) {
  AuthChecks checks(2, 100);
  auto first = checks.take(make_address("2001:db8:1:2::1"));
  auto second = checks.take(make_address("2001:db8:1:2:ffff::9"));
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  EXPECT_EQ(checks.held(make_address("2001:db8:1:2::77")), 2);
  EXPECT_FALSE(checks.take(make_address("2001:db8:1:2:aaaa:bbbb:cccc:dddd")));
  EXPECT_TRUE(checks.take(make_address("2001:db8:1:3::1")));  // the next /64
}

TEST(AuthChecks, APlaceIsGivenBackExactlyOnce) {
  AuthChecks checks(2, 3);
  const auto a = make_address("192.0.2.1");
  {
    auto place = checks.take(a);
    ASSERT_TRUE(place);
    EXPECT_TRUE(place->held());
    Place moved(std::move(*place));
    EXPECT_FALSE(place->held());  // NOLINT(bugprone-use-after-move): moved-from holds nothing
    EXPECT_TRUE(moved.held());
    EXPECT_EQ(checks.held(), 1);
    EXPECT_EQ(checks.held(a), 1);
    Place assigned;
    assigned = std::move(moved);
    EXPECT_EQ(checks.held(a), 1);
    auto other = checks.take(a);
    ASSERT_TRUE(other);
    assigned = std::move(*other);  // assigning over a place gives it back
    EXPECT_EQ(checks.held(a), 1);
    EXPECT_EQ(checks.held(), 1);
  }
  EXPECT_EQ(checks.held(), 0);
  EXPECT_EQ(checks.held(a), 0);
  // All of the group's places are there again.
  auto p1 = checks.take(a);
  auto p2 = checks.take(a);
  EXPECT_TRUE(p1 && p2);
  EXPECT_FALSE(checks.take(a));
}

}  // namespace
}  // namespace rdma_exporter
