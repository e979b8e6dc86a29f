#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

// Whether the probe itself works right now: what a user would call the probe
// being broken (no usable device, its event loop gone, the responder not
// listening, a file_sd file it cannot read). A target that does not answer
// is not one of them: rdma_probe_up and rdma_probe_errors_total say that.
// The probe's event loop writes it; the collecting thread reads it.
namespace rdma_exporter::probe {

class ProbeHealth {
 public:
  void set_listening(bool listening);
  // The event loop ended with this error (it does not run again).
  void set_loop_failed(std::string what);
  // Why the probe's RDMA device cannot be opened; "" once it is open.
  void set_device_problem(std::string problem);
  // Why the configured probe memory cannot be registered on the device; "" when it can.
  void set_memory_problem(std::string problem);
  // Why a file_sd file could not be read; "" once it was read.
  void set_file_sd_problem(const std::string& path, std::string problem);
  // The list of file_sd files changed: the old files' problems go.
  void forget_file_sd();

  // One line per problem: the event loop, the responder, the device, the
  // memory, then the file_sd files by path. Empty when the probe is healthy.
  std::vector<std::string> problems() const;

 private:
  mutable std::mutex mutex_;
  bool listening_ = false;
  std::string loop_;
  std::string device_;
  std::string memory_;
  std::map<std::string, std::string> file_sd_;  // by path, failing files only
};

}  // namespace rdma_exporter::probe
