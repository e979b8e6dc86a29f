#pragma once

#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/background_reader.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::probe {

// The target files in Prometheus file_sd format, read again when they
// change (looked at every probe.file_sd_refresh). The files are looked at
// and read on the reader's thread, never on the loop. A file that cannot be
// read or parsed keeps the targets it had, and says why in the health and
// the read counter.
class FileSdTargets {
 public:
  // `read` runs on the loop after each look, true when some file's targets
  // changed.
  FileSdTargets(boost::asio::io_context& io, BackgroundReader& reader,
                std::shared_ptr<ProbeStats> stats, ProbeHealth& health,
                std::function<void(bool changed)> read);

  // The files and how often they are looked at. Another list of files
  // forgets the old files' targets and problems.
  void configure(const std::vector<std::string>& paths, std::chrono::milliseconds refresh);
  // Looks at the files now, and again after the refresh interval.
  void refresh();
  // Stops looking; a look under way is dropped.
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
  // What one look at a file found.
  struct Look {
    enum class Outcome { unchanged, missing, failed, read } outcome = Outcome::unchanged;
    struct stat st {};
    std::string problem;
    std::vector<Target> targets;
  };
  // On the reader's thread: stats the file, and reads it unless it is the
  // one read at `read_at`.
  static Look look(const std::string& path, const std::optional<struct stat>& read_at);
  // On the loop: the looks of one refresh, in the order of the files.
  void looked(std::uint64_t generation, std::vector<Look> looks);
  // Takes one look; true when the file's targets changed.
  bool take(const std::string& path, File& f, Look look);
  void failed(const std::string& path, const std::string& problem);

  std::shared_ptr<ProbeStats> stats_;
  ProbeHealth& health_;
  std::function<void(bool)> read_;
  boost::asio::steady_timer timer_;
  BackgroundReader& reader_;
  // Counts configure() and stop(): a look begun before either is dropped.
  std::uint64_t generation_ = 0;
  std::vector<std::string> paths_;
  std::chrono::milliseconds refresh_{std::chrono::seconds(5)};
  std::map<std::string, File> files_;
};

}  // namespace rdma_exporter::probe
