#include <gtest/gtest.h>

#include "exporter/http/handlers.hpp"

namespace rdma_exporter {
namespace {

TEST(AcceptEncoding, GzipIsChosenOnlyWhenAccepted) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip"));
  EXPECT_TRUE(accepts_gzip("gzip;q=0.5, identity"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip(" br ,  gzip ; q=1"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("x-gzip-not"));
  EXPECT_FALSE(accepts_gzip("deflate"));
}

}  // namespace
}  // namespace rdma_exporter
