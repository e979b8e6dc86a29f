#pragma once

// The verbs latency probe: a subsystem of its own, and the one header of it
// the daemon includes.
//
// Every exporter with the probe enabled is a server, the responder, that
// peers probe, and runs clients, the probers, one for each target and probe
// class. A prober and a responder agree on a pair of RC queue pairs over a
// small TCP control protocol (protocol.hpp: a hello, a setup authenticated by
// HMAC, an accept or reject, keep-alives), then the prober times one RDMA
// send, write or read per interval. Targets come from the configuration and
// from file_sd files (targets.hpp). All of it runs on one thread and one Asio
// event loop of its own (ProbeService), so rendering a scrape never delays a
// probe; what it measures and whether it works are read from the collecting
// thread (ProbeService::collect).
//
// It uses only common/ and kernel access (libibverbs over the kernel's uverbs
// devices), never another collector.
//
// The daemon's side: ProbeOptions and parse_probe_options (the `probe`
// section of the configuration, options.hpp), ProbeService (start, update,
// stop, collect; service.hpp).

#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/service.hpp"
