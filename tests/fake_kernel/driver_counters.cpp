#include "tests/fake_kernel/driver_counters.hpp"

namespace rdma_exporter::testing {

const std::vector<std::string>& mlx5_port_counters() {
  static const std::vector<std::string> names = {
      "duplicate_request",
      "implied_nak_seq_err",
      "local_ack_timeout_err",
      "np_cnp_sent",
      "np_ecn_marked_roce_packets",
      "out_of_buffer",
      "out_of_sequence",
      "packet_seq_err",
      "req_cqe_error",
      "req_cqe_flush_error",
      "req_remote_access_errors",
      "req_remote_invalid_request",
      "resp_cqe_error",
      "resp_cqe_flush_error",
      "resp_local_length_error",
      "resp_remote_access_errors",
      "rnr_nak_retry_err",
      "roce_adp_retrans",
      "roce_adp_retrans_to",
      "roce_slow_restart",
      "roce_slow_restart_cnps",
      "roce_slow_restart_trans",
      "rp_cnp_handled",
      "rp_cnp_ignored",
      "rx_atomic_requests",
      "rx_icrc_encapsulated",
      "rx_read_requests",
      "rx_write_requests",
  };
  return names;
}

const std::vector<std::string>& mlx5_qp_counters() {
  static const std::vector<std::string> names = {
      "rx_write_requests",   "rx_read_requests",      "rx_atomic_requests", "out_of_buffer",
      "out_of_sequence",     "duplicate_request",     "rnr_nak_retry_err",  "packet_seq_err",
      "implied_nak_seq_err", "local_ack_timeout_err",
  };
  return names;
}

const std::vector<std::string>& rxe_port_counters() {
  static const std::vector<std::string> names = {
      "ack_deferred",       "completer_retry_err", "duplicate_request",  "link_downed",
      "out_of_seq_request", "rcvd_pkts",           "rcvd_rnr_err",       "rcvd_seq_err",
      "rdma_recvs",         "rdma_sends",          "retry_exceeded_err", "retry_rnr_exceeded_err",
      "send_err",           "send_rnr_err",        "sent_pkts",
  };
  return names;
}

}  // namespace rdma_exporter::testing
