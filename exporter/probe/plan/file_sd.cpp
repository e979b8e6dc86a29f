#include "exporter/probe/plan/file_sd.hpp"

#include <cerrno>

#include "common/errno_text.hpp"
#include "common/file.hpp"
#include "common/log.hpp"
#include "exporter/probe/plan/targets.hpp"

namespace rdma_exporter::probe {
namespace {

// A target file larger than this is refused rather than read into memory.
constexpr std::size_t kMaxFileSdBytes = 16u << 20;

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

}  // namespace

FileSdTargets::FileSdTargets(boost::asio::io_context& io, BackgroundReader& reader,
                             std::shared_ptr<ProbeStats> stats, ProbeHealth& health,
                             std::function<void(bool changed)> read)
    : stats_(std::move(stats)),
      health_(health),
      read_(std::move(read)),
      timer_(io),
      reader_(reader) {}

void FileSdTargets::configure(const std::vector<std::string>& paths,
                              std::chrono::milliseconds refresh) {
  if (paths != paths_) {
    paths_ = paths;
    files_.clear();
    health_.forget_file_sd();
    ++generation_;
  }
  refresh_ = refresh;
}

void FileSdTargets::stop() {
  timer_.cancel();
  ++generation_;
}

std::vector<Target> FileSdTargets::targets() const {
  std::vector<Target> all;
  for (const auto& path : paths_) {
    if (const auto f = files_.find(path); f != files_.end()) {
      all.insert(all.end(), f->second.targets.begin(), f->second.targets.end());
    }
  }
  return all;
}

void FileSdTargets::refresh() {
  std::vector<std::pair<std::string, std::optional<struct stat>>> files;
  for (const auto& path : paths_) {
    const File& f = files_[path];
    files.emplace_back(path, f.seen ? std::optional<struct stat>(f.st) : std::nullopt);
  }
  reader_.run(
      [files = std::move(files)] {
        std::vector<Look> looks;
        for (const auto& [path, read_at] : files) looks.push_back(look(path, read_at));
        return looks;
      },
      [this, generation = generation_](std::vector<Look> looks) {
        looked(generation, std::move(looks));
      });
}

void FileSdTargets::looked(std::uint64_t generation, std::vector<Look> looks) {
  if (generation != generation_) return;
  bool changed = false;
  for (std::size_t i = 0; i < looks.size(); ++i) {
    changed = take(paths_[i], files_[paths_[i]], std::move(looks[i])) || changed;
  }
  if (read_) read_(changed);
  if (paths_.empty()) return;
  timer_.expires_after(refresh_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) refresh();
  });
}

void FileSdTargets::failed(const std::string& path, const std::string& problem) {
  health_.set_file_sd_problem(path, problem);
  stats_->file_sd_read(false);
}

FileSdTargets::Look FileSdTargets::look(const std::string& path,
                                        const std::optional<struct stat>& read_at) {
  Look l;
  if (::stat(path.c_str(), &l.st) != 0) {
    l.outcome = Look::Outcome::missing;
    l.problem = "file_sd " + path + ": " + errno_text(errno);
    return l;
  }
  if (read_at && same_file(*read_at, l.st)) return l;
  auto text = read_file(path, kMaxFileSdBytes, "file_sd " + path);
  if (!text) {
    l.outcome = Look::Outcome::failed;
    l.problem = text.error().message;
    return l;
  }
  auto parsed = parse_file_sd(*text, path);
  if (!parsed) {
    l.outcome = Look::Outcome::failed;
    l.problem = "file_sd: " + parsed.error().message;
    return l;
  }
  l.outcome = Look::Outcome::read;
  l.targets = std::move(parsed.value());
  return l;
}

bool FileSdTargets::take(const std::string& path, File& f, Look look) {
  using Outcome = Look::Outcome;
  const bool was_missing = f.missing;
  f.missing = look.outcome == Outcome::missing;
  if (look.outcome == Outcome::unchanged) return false;
  f.seen = look.outcome != Outcome::missing;
  f.st = look.st;
  if (look.outcome == Outcome::missing) {
    if (!was_missing) {
      log::warn("probe: file_sd keeps its targets", {{"path", path}, {"err", look.problem}});
    }
    failed(path, look.problem);
    return false;
  }
  if (look.outcome == Outcome::failed) {
    log::error("probe: file_sd keeps its previous targets",
               {{"path", path}, {"err", look.problem}});
    failed(path, look.problem);
    return false;
  }
  health_.set_file_sd_problem(path, "");
  stats_->file_sd_read(true);
  f.targets = std::move(look.targets);
  return true;
}

}  // namespace rdma_exporter::probe
