#include "collectors/probe/service.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>
#include <future>

#include "collectors/probe/auth.hpp"
#include "collectors/probe/prober.hpp"
#include "collectors/probe/responder.hpp"
#include "collectors/probe/targets.hpp"
#include "collectors/probe/verbs_device.hpp"
#include "collectors/probe/verbs_memory.hpp"
#include "common/file.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr std::chrono::seconds kDeviceRetry{10};
constexpr const char* kLoopback = "loopback";
// A target file larger than this is refused rather than read into memory.
constexpr std::size_t kMaxFileSdBytes = 16u << 20;

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

std::string key_of(const std::string& address, const ProbeClass& cls, const Labels& labels) {
  std::string key = address + '\n' + cls.name;
  for (const auto& [k, v] : labels) key += '\n' + k + '=' + v;
  return key;
}

}  // namespace

Labels series_labels(const std::string& target, const ProbeClass& cls,
                     const std::map<std::string, std::string>& target_labels) {
  Labels l = {{"target", target},
              {"op", op_name(cls.op)},
              {"size", std::to_string(cls.size)},
              {"tclass", std::to_string(cls.tclass)}};
  for (const auto& [k, v] : target_labels) l.emplace_back(k, v);
  return l;
}

ProbeService::ProbeService(ProbeOptions options) : options_(std::move(options)) {}

ProbeService::~ProbeService() {
  stop();
}

Status ProbeService::start() {
  if (!options_.secret_file.empty()) {
    auto secret = read_secret_file(options_.secret_file);
    if (!secret) return secret.error();
    secret_ = std::move(secret.value());
  }
  ResponderSettings rs;
  rs.listen_address = options_.listen_address;
  rs.max_sessions = options_.max_sessions;
  rs.max_sessions_per_source = options_.max_sessions_per_source;
  rs.setups_per_minute_per_source = options_.setups_per_minute_per_source;
  rs.max_message_size = options_.max_message_size;
  rs.idle_timeout = options_.idle_timeout;
  rs.secret = secret_;
  rs.memory = options_.memory;
  rs.port = options_.port;
  rs.gid_index = options_.gid_index;
  responder_ = std::make_unique<Responder>(io_, rs, stats_);
  if (Status s = responder_->start(); !s) return s;
  port_ = responder_->port();
  health_.set_listening(true);
  boost::asio::post(io_, [this] {
    open_device();
    refresh_files();
  });
  loop_running_ = true;
  thread_ = std::thread([this] {
    try {
      io_.run();
    } catch (const std::exception& e) {
      log::error(std::string("probe stopped: ") + e.what());
      health_.set_loop_failed(e.what());
    }
    loop_running_ = false;
  });
  log::info("probe responder listening on port " + std::to_string(port_));
  return ok_status();
}

void ProbeService::stop() {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this] {
    device_timer_.cancel();
    files_timer_.cancel();
    for (auto& [key, p] : probers_) p->stop();
    probers_.clear();
    if (responder_) responder_->stop();
  });
  // Handlers of the stopped sessions finish; then the loop is stopped.
  boost::asio::post(io_, [this] { io_.stop(); });
  thread_.join();
  health_.set_listening(false);
}

std::vector<std::string> ProbeService::collect(MetricSink& sink) const {
  stats_->add_metrics(sink);
  return health_.problems();
}

void ProbeService::settle() {
  if (!loop_running_) return;
  auto done = std::make_shared<std::promise<void>>();
  auto ran = done->get_future();
  boost::asio::post(io_, [done] { done->set_value(); });
  // A loop that ends meanwhile never runs the handler.
  while (ran.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (!loop_running_) return;
  }
}

void ProbeService::update(ProbeOptions options) {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this, options = std::move(options)]() mutable {
    if (options.device != options_.device || options.listen_address != options_.listen_address ||
        options.secret_file != options_.secret_file || options.memory != options_.memory ||
        options.max_sessions != options_.max_sessions ||
        options.max_sessions_per_source != options_.max_sessions_per_source ||
        options.setups_per_minute_per_source != options_.setups_per_minute_per_source ||
        options.max_message_size != options_.max_message_size ||
        options.idle_timeout != options_.idle_timeout) {
      log::warn(
          "reload: probe device, listen address, secret, memory and responder limits change at "
          "the next start");
    }
    options_.classes = std::move(options.classes);
    options_.targets = std::move(options.targets);
    options_.loopback = options.loopback;
    options_.connect_timeout = options.connect_timeout;
    options_.backoff_initial = options.backoff_initial;
    options_.backoff_max = options.backoff_max;
    options_.port = options.port;
    options_.gid_index = options.gid_index;
    if (options.file_sd != options_.file_sd) {
      options_.file_sd = std::move(options.file_sd);
      files_.clear();
      health_.forget_file_sd();
    }
    options_.file_sd_refresh = options.file_sd_refresh;
    // Settings a running prober was made with: start them all anew.
    for (auto& [key, p] : probers_) p->stop();
    probers_.clear();
    files_timer_.cancel();
    refresh_files();
  });
}

void ProbeService::open_device() {
  auto device = Device::open(options_.device);
  if (!device) {
    health_.set_device_problem(device.error().message);
    if (!device_warned_) {
      log::warn("probe: " + device.error().message + "; looking again every " +
                std::to_string(kDeviceRetry.count()) + " s");
      device_warned_ = true;
    }
    device_timer_.expires_after(kDeviceRetry);
    device_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) open_device();
    });
    return;
  }
  device_ = std::move(device.value());
  device_warned_ = false;
  health_.set_device_problem("");
  // Memory is made per session; trying one buffer now turns a device or
  // kernel that cannot register this kind into one clear line at start.
  if (auto trial = Memory::create(*device_, 64, options_.memory); !trial) {
    const std::string problem = "probe.memory " + options_.memory + " cannot be used on " +
                                device_->name() + ": " + trial.error().message;
    log::error("probe: " + problem + "; every probe session will fail with reason \"setup\"");
    health_.set_memory_problem(problem);
  }
  responder_->set_device(device_);
  stats_->set_device(device_->name(), device_->thread_domain(), device_->completion_timestamps(),
                     options_.memory);
  log::info(std::string("probe: using ") + device_->name() + " (" +
            (device_->thread_domain() ? "thread domain" : "plain PD") + ", " +
            (device_->completion_timestamps() ? "completion timestamps" : "host clock") + ")");
  apply();
}

void ProbeService::refresh_files() {
  bool changed = false;
  for (const auto& path : options_.file_sd) {
    FileState& f = files_[path];
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const std::string problem = "file_sd " + path + ": " + std::strerror(errno);
      if (!f.missing) log::warn("probe " + problem + "; keeping its targets");
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      f.missing = true;
      f.seen = false;
      continue;
    }
    f.missing = false;
    if (f.seen && same_file(f.st, st)) continue;
    f.seen = true;
    f.st = st;
    if (static_cast<std::size_t>(st.st_size) > kMaxFileSdBytes) {
      const std::string problem = "file_sd " + path + ": " + std::to_string(st.st_size) +
                                  " bytes, more than the " + std::to_string(kMaxFileSdBytes) +
                                  " a target list may have";
      log::error("probe " + problem + "; keeping its previous targets");
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      continue;
    }
    auto text = read_file(path, kMaxFileSdBytes, "reading " + path);
    auto parsed = text ? parse_file_sd(*text, path) : Result<std::vector<Target>>(text.error());
    if (!parsed) {
      const std::string problem = "file_sd: " + parsed.error().message;
      log::error("probe " + problem + "; keeping its previous targets");
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      continue;
    }
    health_.set_file_sd_problem(path, "");
    stats_->file_sd_read(true);
    f.targets = std::move(parsed.value());
    changed = true;
  }
  if (changed || probers_.empty()) apply();
  if (!options_.file_sd.empty()) {
    files_timer_.expires_after(options_.file_sd_refresh);
    files_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) refresh_files();
    });
  }
}

void ProbeService::apply() {
  // Every (target, class) wanted now.
  struct Wanted {
    std::string address;
    std::string target;  // label value
    const ProbeClass* cls;
    std::map<std::string, std::string> labels;
  };
  const std::vector<ProbeClass> classes = effective_classes(options_);
  std::vector<Wanted> wanted;
  std::map<std::string, int> by_source;
  auto add = [&](const std::string& source, const std::string& address, const std::string& name,
                 const Target& t) {
    ++by_source[source];
    for (const auto& cls : classes) {
      if (!t.classes.empty() &&
          std::find(t.classes.begin(), t.classes.end(), cls.name) == t.classes.end()) {
        continue;
      }
      wanted.push_back(Wanted{address, name, &cls, t.labels});
    }
  };
  for (const auto& t : options_.targets) add("static", t.address, t.address, t);
  for (const auto& [path, f] : files_) {
    for (const auto& t : f.targets) add("file_sd", t.address, t.address, t);
  }
  if (options_.loopback) {
    add(kLoopback, "127.0.0.1:" + std::to_string(port_), kLoopback, Target{});
  }
  stats_->set_targets(by_source);
  if (!device_) return;  // probers start once the device is there

  ProberSettings ps;
  ps.connect_timeout = options_.connect_timeout;
  ps.backoff_initial = options_.backoff_initial;
  ps.backoff_max = options_.backoff_max;
  ps.secret = secret_;
  ps.memory = options_.memory;
  ps.port = options_.port;
  ps.gid_index = options_.gid_index;

  std::map<std::string, std::shared_ptr<Prober>> next;
  std::vector<std::shared_ptr<SeriesStats>> keep;
  for (const auto& w : wanted) {
    const Labels labels = series_labels(w.target, *w.cls, w.labels);
    const std::string key = key_of(w.address, *w.cls, labels);
    auto series = stats_->series(labels);
    keep.push_back(series);
    if (next.contains(key)) continue;  // the same target twice
    if (auto it = probers_.find(key); it != probers_.end()) {
      next[key] = it->second;
      probers_.erase(it);
      continue;
    }
    auto p = std::make_shared<Prober>(io_, device_, w.address, *w.cls, ps, series);
    p->start();
    next[key] = std::move(p);
  }
  for (auto& [key, p] : probers_) p->stop();
  probers_ = std::move(next);
  stats_->retain(keep);
}

}  // namespace rdma_exporter::probe
