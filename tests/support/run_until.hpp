#pragma once

// Driving an event loop in tests by events, never by time: the loop runs one
// handler at a time until the test's condition holds.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

namespace rdma_exporter::testing {

// Runs `io` until `done()`; fails the test if nothing at all happens for a
// minute (a hang, not a slow machine).
template <typename Done>
void run_until(boost::asio::io_context& io, Done done) {
  while (!done()) {
    ASSERT_GT(io.run_one_for(std::chrono::minutes(1)), 0u) << "the loop went idle";
  }
}

}  // namespace rdma_exporter::testing
