#include "collectors/probe/plan/file_sd.hpp"

#include <cerrno>

#include "collectors/probe/plan/targets.hpp"
#include "common/errno_text.hpp"
#include "common/file.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

// A target file larger than this is refused rather than read into memory.
constexpr std::size_t kMaxFileSdBytes = 16u << 20;

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

}  // namespace

FileSdTargets::FileSdTargets(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats,
                             ProbeHealth& health, std::function<void(bool changed)> read)
    : stats_(std::move(stats)), health_(health), read_(std::move(read)), timer_(io) {}

void FileSdTargets::configure(const std::vector<std::string>& paths,
                              std::chrono::milliseconds refresh) {
  if (paths != paths_) {
    paths_ = paths;
    files_.clear();
    health_.forget_file_sd();
  }
  refresh_ = refresh;
}

void FileSdTargets::stop() {
  timer_.cancel();
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
  bool changed = false;
  for (const auto& path : paths_) changed = look(path, files_[path]) || changed;
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

bool FileSdTargets::look(const std::string& path, File& f) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const std::string problem = "file_sd " + path + ": " + errno_text(errno);
    if (!f.missing) {
      log::warn("probe: file_sd keeps its targets", {{"path", path}, {"err", problem}});
    }
    failed(path, problem);
    f.missing = true;
    f.seen = false;
    return false;
  }
  f.missing = false;
  if (f.seen && same_file(f.st, st)) return false;
  f.seen = true;
  f.st = st;
  if (static_cast<std::size_t>(st.st_size) > kMaxFileSdBytes) {
    const std::string problem = "file_sd " + path + ": " + std::to_string(st.st_size) +
                                " bytes, more than the " + std::to_string(kMaxFileSdBytes) +
                                " a target list may have";
    log::error("probe: file_sd keeps its previous targets", {{"path", path}, {"err", problem}});
    failed(path, problem);
    return false;
  }
  auto text = read_file(path, kMaxFileSdBytes, "reading " + path);
  auto parsed = text ? parse_file_sd(*text, path) : Result<std::vector<Target>>(text.error());
  if (!parsed) {
    const std::string problem = "file_sd: " + parsed.error().message;
    log::error("probe: file_sd keeps its previous targets", {{"path", path}, {"err", problem}});
    failed(path, problem);
    return false;
  }
  health_.set_file_sd_problem(path, "");
  stats_->file_sd_read(true);
  f.targets = std::move(parsed.value());
  return true;
}

}  // namespace rdma_exporter::probe
