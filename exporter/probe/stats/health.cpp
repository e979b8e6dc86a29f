#include "exporter/probe/stats/health.hpp"

namespace rdma_exporter::probe {

void ProbeHealth::set_listening(bool listening) {
  const std::lock_guard lock(mutex_);
  listening_ = listening;
}

void ProbeHealth::set_loop_failed(std::string what) {
  const std::lock_guard lock(mutex_);
  loop_ = std::move(what);
}

void ProbeHealth::set_device_problem(std::string problem) {
  const std::lock_guard lock(mutex_);
  device_ = std::move(problem);
}

void ProbeHealth::set_memory_problem(std::string problem) {
  const std::lock_guard lock(mutex_);
  memory_ = std::move(problem);
}

void ProbeHealth::set_file_sd_problem(const std::string& path, std::string problem) {
  const std::lock_guard lock(mutex_);
  if (problem.empty()) {
    file_sd_.erase(path);
  } else {
    file_sd_[path] = std::move(problem);
  }
}

void ProbeHealth::forget_file_sd() {
  const std::lock_guard lock(mutex_);
  file_sd_.clear();
}

std::vector<std::string> ProbeHealth::problems() const {
  const std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  if (!loop_.empty()) out.push_back("the probe's event loop stopped: " + loop_);
  if (!listening_) out.emplace_back("the probe responder is not listening");
  if (!device_.empty()) out.push_back(device_);
  if (!memory_.empty()) out.push_back(memory_);
  for (const auto& [path, problem] : file_sd_) out.push_back(problem);
  return out;
}

}  // namespace rdma_exporter::probe
