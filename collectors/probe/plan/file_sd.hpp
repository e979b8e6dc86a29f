#pragma once

#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/probe/plan/options.hpp"
#include "collectors/probe/stats/health.hpp"
#include "collectors/probe/stats/stats.hpp"

namespace rdma_exporter::probe {

// The target files in Prometheus file_sd format, read again when they
// change (looked at every probe.file_sd_refresh). A file that cannot be
// read or parsed keeps the targets it had, and says why in the health and
// the read counter.
class FileSdTargets {
 public:
  // `read` runs after each look, true when some file's targets changed.
  FileSdTargets(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats, ProbeHealth& health,
                std::function<void(bool changed)> read);

  // The files and how often they are looked at. Another list of files
  // forgets the old files' targets and problems.
  void configure(const std::vector<std::string>& paths, std::chrono::milliseconds refresh);
  // Looks at the files now, and again after the refresh interval.
  void refresh();
  void stop();

  // Every file's targets, in the order the files are listed.
  std::vector<Target> targets() const;

 private:
  struct File {
    bool seen = false;     // read at the current stat
    bool missing = false;  // the last stat failed
    struct stat st {};
    std::vector<Target> targets;
  };
  // Reads one file again when it changed; true when its targets changed.
  bool look(const std::string& path, File& f);
  void failed(const std::string& path, const std::string& problem);

  std::shared_ptr<ProbeStats> stats_;
  ProbeHealth& health_;
  std::function<void(bool)> read_;
  boost::asio::steady_timer timer_;
  std::vector<std::string> paths_;
  std::chrono::milliseconds refresh_{std::chrono::seconds(5)};
  std::map<std::string, File> files_;
};

}  // namespace rdma_exporter::probe
