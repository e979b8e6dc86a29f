#pragma once

#include <boost/asio/ip/address.hpp>
#include <list>
#include <map>
#include <optional>
#include <string>

namespace rdma_exporter {

class HttpSessionBase;
class HttpConnectionSlot;

// The places of the server's connections, overall and per source group
// (web.max_connections, web.max_connections_per_source; a group is an IPv4
// address or an IPv6 /64: source_group(), common/address.hpp), and the order
// in which they may be evicted for a new connection: those closing after
// their last response first, then those waiting for a request's headers, a
// TLS handshake or a password check, the one waiting longest first. A
// connection serving a request is not in the order. No I/O: each session
// holds its HttpConnectionSlot, the server asks whom to evict. Event loop
// only; every slot is released before this is destroyed (sessions hold the
// server's state).
class HttpConnectionSlots {
 public:
  enum class Verdict { admitted, max_connections, max_connections_per_source };
  struct Admission {
    Verdict verdict = Verdict::admitted;
    // Admitted at a cap: the connection to evict first; it gives its place
    // back then (HttpSessionBase::evict releases its slot).
    HttpSessionBase* evict = nullptr;
  };

  HttpConnectionSlots() = default;
  HttpConnectionSlots(const HttpConnectionSlots&) = delete;
  HttpConnectionSlots& operator=(const HttpConnectionSlots&) = delete;

  // Whether a new connection from `source` may have a place. At
  // `max_per_source` from its group, the group's connection that has
  // waited longest (or is closing) makes room for it; at
  // `max_connections`, the first of every group's. Refused only when no
  // connection may be evicted for it: all those it would replace are
  // serving a request.
  Admission admit(const boost::asio::ip::address& source, int max_connections,
                  int max_per_source) const;
  // Registers a connection from `source`, not yet in the eviction order.
  // `connection` is what next_to_evict() names for it.
  HttpConnectionSlot acquire(const boost::asio::ip::address& source, HttpSessionBase* connection);

  // Places held, overall and from the group of `source`.
  int held() const { return static_cast<int>(entries_.size()); }
  int held(const boost::asio::ip::address& source) const;
  // The front of the eviction order; null when it is empty.
  HttpSessionBase* next_to_evict() const;

 private:
  friend class HttpConnectionSlot;
  int held(const std::string& group) const;
  struct Entry {
    std::string group;  // source_group() of its address
    HttpSessionBase* connection = nullptr;
    std::optional<std::list<Entry*>::iterator> queued;  // its rank in order_
  };

  std::list<Entry> entries_;               // one per slot held
  std::map<std::string, int> per_source_;  // by group
  std::list<Entry*> order_;                // the next to evict first
};

// One connection's place among HttpConnectionSlots, and its rank in the
// eviction order. The session holds it from accept until it is evicted or
// torn down; the place is given back exactly once, by release() or by the
// destructor, whichever comes first. Move-only; a moved-from or released
// slot holds nothing and ignores every call.
class HttpConnectionSlot {
 public:
  HttpConnectionSlot() = default;
  HttpConnectionSlot(HttpConnectionSlot&& other) noexcept;
  HttpConnectionSlot& operator=(HttpConnectionSlot&& other) noexcept;
  HttpConnectionSlot(const HttpConnectionSlot&) = delete;
  HttpConnectionSlot& operator=(const HttpConnectionSlot&) = delete;
  ~HttpConnectionSlot() { release(); }

  // Waiting for a request's headers, a TLS handshake or a password check:
  // joins the eviction order behind the connections already in it, unless it
  // is in it already (a TLS connection keeps its rank from accept to its
  // first request).
  void queue();
  // Closing after its last response: goes to the front, the first to go.
  void queue_first();
  // Serving a request, or its socket closed: leaves the eviction order; a
  // connection out of it is never evicted.
  void unqueue();
  // Gives the place back and leaves the eviction order.
  void release();

  bool held() const { return slots_ != nullptr; }

 private:
  friend class HttpConnectionSlots;
  using Entry = HttpConnectionSlots::Entry;
  HttpConnectionSlot(HttpConnectionSlots* slots, std::list<Entry>::iterator entry)
      : slots_(slots), entry_(entry) {}

  HttpConnectionSlots* slots_ = nullptr;  // null: holds nothing
  std::list<Entry>::iterator entry_;
};

}  // namespace rdma_exporter
