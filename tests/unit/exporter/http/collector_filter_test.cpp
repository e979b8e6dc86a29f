// collect[] and exclude[]: the query string, the filter, and what a filtered
// snapshot keeps of a whole collection (tagged by collector).

#include "exporter/http/collector_filter.hpp"

#include <gtest/gtest.h>

#include "exporter/collection.hpp"
#include "exporter/http/router.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using testing::has_family;
using testing::sample;
using Params = std::vector<std::pair<std::string, std::string>>;

TEST(QueryParameters, DecodedInOrder) {
  EXPECT_EQ(*query_parameters("/metrics"), Params{});
  EXPECT_EQ(*query_parameters("/metrics?"), Params{});
  EXPECT_EQ(*query_parameters("/metrics?collect%5B%5D=sysfs&collect[]=probe&&x=a+b%21&flag"),
            (Params{{"collect[]", "sysfs"}, {"collect[]", "probe"}, {"x", "a b!"}, {"flag", ""}}));
  EXPECT_EQ(*query_parameters("/metrics?a=%2B%2f%41#frag"), (Params{{"a", "+/A"}}));
  EXPECT_EQ(query_parameters("/metrics?a=%zz").error().message,
            "malformed percent escape in the query string: \"%zz\"");
  EXPECT_EQ(query_parameters("/metrics?a=%4").error().message,
            "malformed percent escape in the query string: \"%4\"");
}

TEST(CollectorFilter, Parameters) {
  auto f = parse_collector_filter("/metrics");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->mode, CollectorFilter::Mode::all);
  f = parse_collector_filter("/metrics?x=1");
  EXPECT_EQ(f->mode, CollectorFilter::Mode::all);
  f = parse_collector_filter("/metrics?collect%5B%5D=sysfs&collect[]=probe&collect[]=sysfs");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->mode, CollectorFilter::Mode::only);
  EXPECT_EQ(f->names, (std::set<std::string, std::less<>>{"probe", "sysfs"}));
  f = parse_collector_filter("/metrics?exclude[]=qp_counters");
  EXPECT_EQ(f->mode, CollectorFilter::Mode::except);
  EXPECT_EQ(f->names, (std::set<std::string, std::less<>>{"qp_counters"}));
}

TEST(CollectorFilter, BadParametersAreErrors) {
  EXPECT_EQ(parse_collector_filter("/metrics?collect[]=sysfs&exclude[]=dcb").error().message,
            "collect[] and exclude[] cannot be used in one request");
  EXPECT_EQ(parse_collector_filter("/metrics?collect[]=sysf").error().message,
            "unknown collector \"sysf\" in collect[] (collectors: devices, hw_counters, "
            "optional_counters, resources, qp_counters, ethtool, dcb, sysfs, pcie, link, "
            "transceiver, pods, probe)");
  EXPECT_EQ(parse_collector_filter("/metrics?exclude[]=").error().message.substr(0, 39),
            "unknown collector \"\" in exclude[] (coll");
  EXPECT_EQ(parse_collector_filter("/metrics?collect[]=%g1").error().message,
            "malformed percent escape in the query string: \"%g1\"");
}

TEST(MetricSinkTags, EverySampleCarriesTheTagSetWhenItWasAdded) {
  MetricSink sink;
  sink.gauge("a", "", {{"x", "1"}}, 1);
  sink.set_tag(2);
  sink.gauge("b", "", {}, 2);
  sink.gauge("a", "", {{"x", "2"}}, 3);
  sink.counter("b", "", {}, 4);  // another type: rejected, so no tag either
  sink.set_tag(5);
  prometheus::MetricFamily merged{"b", "", prometheus::MetricType::Gauge, {}};
  merged.metric.resize(2);
  sink.family(merged);
  const auto tags = sink.take_tags();
  const auto families = sink.take();
  ASSERT_EQ(families.size(), 2U);
  EXPECT_EQ(tags, (std::vector<std::vector<uint16_t>>{{0, 2}, {2, 5, 5}}));
  EXPECT_EQ(families[1].metric.size(), 3U);
}

// A collection over the fake kernel (netlink collectors) and a sysfs tree
// (the sysfs collector).
class FilteredSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeDevice mlx{.index = 1, .name = "mlx5_0", .protocol = "roce"};
    mlx.ports.push_back(testing::FakePort{
        .index = 1, .netdev = "ens1f0", .netdev_index = 4, .counters = {{"out_of_sequence", 17}}});
    kernel_->devices = {mlx};
    config_.sysfs.root = testing::make_sysfs_fixture("mlx5:1:1");
  }

  std::shared_ptr<const Snapshot> collect() {
    Collection collection(config_, std::move(kernel_));
    return collection.collect();
  }

  Config config_;
  std::unique_ptr<testing::FakeNldev> kernel_ = std::make_unique<testing::FakeNldev>();
};

TEST_F(FilteredSnapshotTest, CollectKeepsTheNamedCollectorsAndTheExportersOwn) {
  const auto all = collect();
  ASSERT_TRUE(has_family(*all, "rdma_port_hw_out_of_sequence_total"));  // hw_counters
  ASSERT_TRUE(has_family(*all, "rdma_port_pma_symbol_error_total"));    // sysfs
  ASSERT_EQ(all->tags.size(), all->families.size());

  auto f = parse_collector_filter("/metrics?collect[]=sysfs");
  auto only = apply_collector_filter(*f, *all);
  ASSERT_TRUE(only) << only.error().message;
  const Snapshot& s = **only;
  EXPECT_TRUE(has_family(s, "rdma_port_pma_symbol_error_total"));
  EXPECT_FALSE(has_family(s, "rdma_port_hw_out_of_sequence_total"));
  EXPECT_FALSE(has_family(s, "rdma_port_state"));  // devices
  EXPECT_EQ(sample(s, "rdma_exporter_collector_success", {{"collector", "sysfs"}}), 1.0);
  EXPECT_EQ(testing::series_count(s, "rdma_exporter_collector_success"), 1U);
  EXPECT_EQ(testing::series_count(s, "rdma_exporter_collector_duration_seconds"), 1U);
  EXPECT_EQ(testing::series_count(s, "rdma_exporter_collector_failures_total"), 1U);
  EXPECT_EQ(sample(s, "rdma_exporter_collections_total"), 1.0);
  EXPECT_TRUE(has_family(s, "rdma_exporter_build_info"));
  ASSERT_EQ(s.outcomes.size(), 1U);
  EXPECT_EQ(s.outcomes[0].name, "sysfs");
  EXPECT_NE(s.text.find("rdma_exporter_collector_success{collector=\"sysfs\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(s.text.find("collector=\"devices\""), std::string::npos);
  EXPECT_EQ(s.text.find("rdma_port_hw_"), std::string::npos);
  EXPECT_TRUE(s.gzip.empty());
}

TEST_F(FilteredSnapshotTest, ExcludeDropsTheNamedCollectors) {
  const auto all = collect();
  auto f = parse_collector_filter("/metrics?exclude[]=sysfs&exclude[]=devices");
  auto rest = apply_collector_filter(*f, *all);
  ASSERT_TRUE(rest) << rest.error().message;
  const Snapshot& s = **rest;
  EXPECT_FALSE(has_family(s, "rdma_port_pma_symbol_error_total"));
  EXPECT_FALSE(has_family(s, "rdma_port_state"));
  EXPECT_EQ(sample(s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}}), 17.0);
  EXPECT_TRUE(std::isnan(sample(s, "rdma_exporter_collector_success", {{"collector", "sysfs"}})));
  EXPECT_EQ(sample(s, "rdma_exporter_collector_success", {{"collector", "hw_counters"}}), 1.0);
  EXPECT_EQ(testing::series_count(s, "rdma_exporter_collector_success"), all->outcomes.size() - 2);
  EXPECT_EQ(sample(s, "rdma_exporter_netlink_available"), 1.0);
}

TEST_F(FilteredSnapshotTest, ACollectorThatDoesNotRunIsAnError) {
  config_.collectors.set_enabled("dcb", false);
  const auto all = collect();
  auto f = parse_collector_filter("/metrics?collect[]=sysfs&collect[]=dcb");
  EXPECT_EQ(apply_collector_filter(*f, *all).error().message,
            "collector \"dcb\" in collect[] is not enabled");
  f = parse_collector_filter("/metrics?exclude[]=probe");
  EXPECT_EQ(apply_collector_filter(*f, *all).error().message,
            "collector \"probe\" in exclude[] is not enabled");
}

}  // namespace
}  // namespace rdma_exporter
