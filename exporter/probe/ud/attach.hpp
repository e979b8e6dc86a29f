#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exporter/probe/local_ports/local_port.hpp"
#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::probe {

// Gives every local port its UD queue pair, which answers UD probes and
// sends this host's: the one the port had while it works, or a new one.
class UdAttacher {
 public:
  UdAttacher(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats, std::string memory,
             int gid_index);

  // Sets each port's `ud`; `previous` are the ports in use until now. A port
  // whose queue pair cannot be made keeps none (warned about once per
  // reason); the UD statistics of ports no longer listed are dropped.
  void attach(std::vector<LocalPort>& ports, const std::vector<LocalPort>& previous);

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<ProbeStats> stats_;
  std::string memory_;
  int gid_index_;
  std::map<std::string, std::string> failed_;  // why a port has no UD queue pair, by port
};

}  // namespace rdma_exporter::probe
