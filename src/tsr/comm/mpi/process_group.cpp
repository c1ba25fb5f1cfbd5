// A group whose devices span processes: hierarchical. The ranks of this process meet
// in an in-process rendezvous (the threads group's); the lowest one, the leader,
// exchanges with the other processes' leaders over the MPI link; the local ranks
// share the in-process work (local reductions, copies into outputs) in blocks.
//
// One exchange: every leader sends every other a header (the call, and the bytes it
// sends to and expects from each process), small bodies inside it. Every leader
// judges all headers alike, so all proceed or all raise the same CommError; large
// bodies then move in place: MPI reads them from the inputs and writes them into the
// outputs through datatypes over their addresses, with no packing copy on either
// side. Reductions combine each process's partial in process order (each partial in
// rank order), so every replica gets bit-identical results.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <string_view>

#include "tsr/comm/calls.h"
#include "tsr/comm/mpi/link.h"
#include "tsr/comm/process.h"
#include "tsr/comm/reduce_kernels.h"
#include "tsr/comm/rendezvous.h"
#include "tsr/comm/threads/stream_copy.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {

using mpi::Link;
using mpi::Span;

// What a leader says about its process's call, ahead of any payload; compared across
// processes so mismatched collectives are errors, not garbage. Followed on the wire by
// the bytes it sends to, then expects from, each process of the group, then (for a
// failure) the reason.
struct Wire {
  uint64_t group = 0;  // the group's hash: a tag shared by two groups is caught
  uint64_t seq = 0;    // the group's exchange number: stale messages of a failed call skip
  int64_t count = 0;
  int32_t dtype = -1, reduce = -1, root = -1, failed = 0;
  uint64_t pairs_hash = 0;
  int64_t note_bytes = 0;  // a failure's reason, after the byte rows
  char op[24] = {};
};

// Bodies up to this size ride in their header's message (copied); larger ones move in
// place once every process agreed.
constexpr int64_t kEagerBytes = 64 << 10;
// A collective whose in-process work is below this many bytes runs on the leader
// alone: one sync instead of one per phase.
constexpr int64_t kSoloBytes = 256 << 10;
// Block of a task; reductions go through a stack scratch of this size.
constexpr int64_t kBlockBytes = 64 << 10;
// Above this many bytes written, outputs bypass the cache (as in the threads group).
constexpr int64_t kStreamingBytes = 24 << 20;
// all_reduce over 3+ processes is two rounds of chunks from this size on.
constexpr int64_t kChunkedAllReduceBytes = 256 << 10;

uint64_t hash_ids(const std::vector<int>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (int id : ids) {
    h ^= static_cast<uint64_t>(id) + 0x9e3779b97f4a7c15ull;
    h *= 1099511628211ull;
  }
  return h;
}

std::string show(const Wire& w) {
  std::ostringstream os;
  os << w.op << "(count=" << w.count;
  if (w.dtype >= 0) os << ", " << dtype_name(static_cast<DType>(w.dtype));
  if (w.reduce >= 0) os << ", " << reduce_op_name(static_cast<ReduceOp>(w.reduce));
  if (w.root >= 0) os << ", root=" << w.root;
  if (w.pairs_hash) os << ", pairs#" << (w.pairs_hash & 0xffff);
  return os.str() + ")";
}

bool same_call(const Wire& a, const Wire& b) {
  return std::strncmp(a.op, b.op, sizeof a.op) == 0 && a.count == b.count && a.dtype == b.dtype &&
         a.reduce == b.reduce && a.root == b.root && a.pairs_hash == b.pairs_hash;
}

const char* at(const void* p, int64_t off) { return static_cast<const char*>(p) + off; }
char* at(void* p, int64_t off) { return static_cast<char*>(p) + off; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
void copy(void* dst, const void* src, int64_t bytes, bool streaming = false) {
  if (bytes > 0 && dst != src) copy_bytes(dst, src, bytes, streaming);
}

// A header as received: the call, the bytes the sender sends to and expects from
// each process index, all_to_allv's pair signatures, a failure's reason, and a small
// body (the rest of the message).
struct Header {
  Wire w;
  std::vector<int64_t> sends, expects, send_sig, recv_sig;
  std::string note, body;
};

int64_t total(const std::vector<Span>& spans) {
  int64_t n = 0;
  for (const Span& s : spans) n += s.bytes;
  return n;
}

class ProcessGroup final : public GroupImpl {
 public:
  ProcessGroup(std::vector<int> ids, int per_process, int me)
      : ids_(std::move(ids)),
        me_(me),
        hash_(hash_ids(ids_)),
        rv_(local_count(ids_, per_process, me), 0, "mpi", local_ranks(ids_, per_process, me)) {
    const int n = static_cast<int>(ids_.size());
    for (int r = 0; r < n; ++r) {
      const int p = ids_[r] / per_process;
      proc_of_.push_back(p);
      if (std::find(procs_.begin(), procs_.end(), p) == procs_.end()) procs_.push_back(p);
    }
    std::sort(procs_.begin(), procs_.end());
    ranks_of_.resize(procs_.size());
    pos_.resize(n);
    for (int r = 0; r < n; ++r) {
      auto& rs = ranks_of_[pindex(proc_of_[r])];
      pos_[r] = static_cast<int>(rs.size());
      rs.push_back(r);
    }
    mine_ = pindex(me_);
    for (size_t q = 0; q < procs_.size(); ++q) {
      remote_start_.push_back(static_cast<int64_t>(remote_order_.size()));
      if (static_cast<int>(q) != mine_)
        remote_order_.insert(remote_order_.end(), ranks_of_[q].begin(), ranks_of_[q].end());
    }
    got_.resize(procs_.size());
    const int64_t slots = (Link::get().tag_ub() - mpi::kFirstGroupTag) / 2;
    tag_ = mpi::kFirstGroupTag + 2 * static_cast<int>(hash_ % static_cast<uint64_t>(slots));
  }

  int size() const override { return static_cast<int>(ids_.size()); }
  const char* backend() const override { return "mpi"; }

  // Each collective is a body every local rank runs (see Step): tasks() share the
  // in-process work, leader() runs the exchange with the other processes. Inputs stay
  // readable and outputs writable until the closing sync.
  void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                  ReduceOp op) override {
    const int64_t isz = itemsize(dt);
    const int64_t bytes = count * isz;
    const int np = static_cast<int>(procs_.size());
    const int64_t block = kBlockBytes / isz;
    // Large ones over 3+ processes: each process reduces one chunk (round 1: the
    // others' partials of it), then sends it to all (round 2). Each leader moves
    // 2(P-1)/P of the data instead of P-1 times it; chunks reduce in process order
    // either way, so the result is the same.
    const bool chunked = np > 2 && bytes >= kChunkedAllReduceBytes;
    auto lo = [&](int q) { return count * q / np; };
    run(rank, describe_reduce("all_reduce", in, out, count, dt, op), bytes * local_size(),
        [&](Step& s) {
          const Calls& c = s.calls;
          const int L = static_cast<int>(c.size());
          const bool streaming = 2 * L * bytes >= kStreamingBytes;
          // This process's partial, its ranks' inputs in rank order, goes into the
          // leader's output (each block's inputs are read before it is written).
          const void* own = L == 1 ? c[0].in : c[0].out;
          if (L > 1)
            s.tasks(ceil_div(count, block), [&](int64_t t) {
              const int64_t off = t * block * isz, m = std::min(block, count - t * block);
              reduce_pair(dt, op, at(c[0].out, off), at(c[0].in, off), at(c[1].in, off), m);
              for (int i = 2; i < L; ++i)
                reduce_accumulate(dt, op, at(c[0].out, off), at(c[i].in, off), m);
            });
          // scratch = the partials' elements [first, first + m) in process order; part(p,
          // first) is process p's.
          auto combine = [&](char* scratch, int64_t first, int64_t m, auto part) {
            reduce_pair(dt, op, scratch, part(0, first), part(1, first), m);
            for (int p = 2; p < np; ++p) reduce_accumulate(dt, op, scratch, part(p, first), m);
          };
          if (!chunked) {
            s.leader([&] {
              Plan pl = plan();
              for (int p = 0; p < np; ++p) {
                if (p == mine_) continue;
                pl.send[p] = {{own, bytes}};
                pl.recv[p] = {{buffer(p, bytes), bytes}};
              }
              exchange(c, pl);
            });
            s.tasks(ceil_div(count, block), [&](int64_t t) {
              alignas(64) char scratch[kBlockBytes];
              const int64_t first = t * block, m = std::min(block, count - first);
              combine(scratch, first, m, [&](int p, int64_t e) -> const void* {
                return p == mine_ ? at(own, e * isz) : got_[p].data() + e * isz;
              });
              for (int li = 0; li < L; ++li)
                copy(at(c[li].out, first * isz), scratch, m * isz, streaming);
            });
            return;
          }
          const int64_t mine_lo = lo(mine_), mine_n = lo(mine_ + 1) - mine_lo;
          s.leader([&] {
            Plan pl = plan();
            for (int q = 0; q < np; ++q) {
              if (q == mine_) continue;
              pl.send[q] = {{at(own, lo(q) * isz), (lo(q + 1) - lo(q)) * isz}};
              pl.recv[q] = {{buffer(q, mine_n * isz), mine_n * isz}};
            }
            exchange(c, pl);
          });
          s.tasks(ceil_div(mine_n, block), [&](int64_t t) {
            alignas(64) char scratch[kBlockBytes];
            const int64_t first = t * block, m = std::min(block, mine_n - first);
            combine(scratch, first, m, [&](int p, int64_t e) -> const void* {
              return p == mine_ ? at(own, (mine_lo + e) * isz) : got_[p].data() + e * isz;
            });
            copy(at(c[0].out, (mine_lo + first) * isz), scratch, m * isz);
          });
          s.leader([&] {
            Plan pl = plan();
            for (int q = 0; q < np; ++q) {
              if (q == mine_) continue;
              pl.send[q] = {{at(c[0].out, mine_lo * isz), mine_n * isz}};
              pl.recv[q] = {{at(c[0].out, lo(q) * isz), (lo(q + 1) - lo(q)) * isz}};
            }
            exchange(c, pl);
          });
          s.tasks(ceil_div(count, block), [&](int64_t t) {
            const int64_t off = t * block * isz, m = std::min(block, count - t * block);
            for (int li = 1; li < L; ++li)
              copy(at(c[li].out, off), at(c[0].out, off), m * isz, streaming);
          });
        });
  }

  void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);
    run(rank, describe_call("all_gather", in, out, count, dt), bytes * size() * local_size(),
        [&](Step& s) {
          const Calls& c = s.calls;
          const int L = static_cast<int>(c.size());
          const bool streaming = (L + 1) * size() * bytes >= kStreamingBytes;
          // Other processes' blocks land in the leader's output; the ranks copy them
          // and the local inputs into every other output.
          s.leader([&] {
            Plan pl = plan();
            for (size_t q = 0; q < procs_.size(); ++q) {
              if (static_cast<int>(q) == mine_) continue;
              for (const auto& call : c) pl.send[q].push_back({call.in, bytes});
              for (int r : ranks_of_[q]) pl.recv[q].push_back({at(c[0].out, r * bytes), bytes});
            }
            exchange(c, pl);
          });
          const int64_t pieces = ceil_div(bytes, kBlockBytes);
          s.tasks(size() * pieces, [&](int64_t t) {
            const int r = static_cast<int>(t / pieces);
            const int64_t off = (t % pieces) * kBlockBytes, m = std::min(kBlockBytes, bytes - off);
            const bool local = pindex(proc_of_[r]) == mine_;
            const void* src = local ? at(c[pos_[r]].in, off) : at(c[0].out, r * bytes + off);
            for (int li = local ? 0 : 1; li < L; ++li)
              copy(at(c[li].out, r * bytes + off), src, m, streaming);
          });
        });
  }

  void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                      ReduceOp op) override {
    const int64_t isz = itemsize(dt);
    const int64_t bytes = count * isz;  // one rank's block
    const int np = static_cast<int>(procs_.size());
    const int64_t block = kBlockBytes / isz;
    const int64_t blocks = ceil_div(count, block);
    run(rank, describe_reduce("reduce_scatter", in, out, count, dt, op),
        bytes * size() * local_size(), [&](Step& s) {
          const Calls& c = s.calls;
          const int L = static_cast<int>(c.size());
          const auto& mine = ranks_of_[mine_];
          // The other processes' blocks, reduced over this process's ranks, one run per
          // process (remote_order_); with one local rank they are read in place.
          const int64_t remote = static_cast<int64_t>(remote_order_.size());
          if (L > 1) {
            s.leader([&] { partial_.resize(static_cast<size_t>(remote * bytes)); });
            s.tasks(remote * blocks, [&](int64_t t) {
              const int64_t j = t / blocks, first = (t % blocks) * block;
              const int64_t m = std::min(block, count - first);
              const int64_t off = remote_order_[j] * bytes + first * isz;
              char* dst = partial_.data() + j * bytes + first * isz;
              reduce_pair(dt, op, dst, at(c[0].in, off), at(c[1].in, off), m);
              for (int i = 2; i < L; ++i) reduce_accumulate(dt, op, dst, at(c[i].in, off), m);
            });
          }
          s.leader([&] {
            Plan pl = plan();
            for (int q = 0; q < np; ++q) {
              if (q == mine_) continue;
              const auto& rs = ranks_of_[q];
              for (size_t k = 0; k < rs.size(); ++k)
                pl.send[q].push_back(
                    L > 1 ? Span{partial_.data() +
                                     (remote_start_[q] + static_cast<int64_t>(k)) * bytes,
                                 bytes}
                          : Span{at(c[0].in, rs[k] * bytes), bytes});
              pl.recv[q] = {{buffer(q, L * bytes), L * bytes}};
            }
            exchange(c, pl);
          });
          s.tasks(L * blocks, [&](int64_t t) {
            alignas(64) char scratch[kBlockBytes];
            alignas(64) char local[kBlockBytes];
            const int li = static_cast<int>(t / blocks);
            const int64_t first = (t % blocks) * block, m = std::min(block, count - first);
            const int64_t off = mine[li] * bytes + first * isz;
            // This process's partial of the block (its ranks in rank order), then all
            // partials in process order.
            auto part = [&](int p) -> const void* {
              if (p != mine_) return got_[p].data() + li * bytes + first * isz;
              if (L == 1) return at(c[0].in, off);
              reduce_pair(dt, op, local, at(c[0].in, off), at(c[1].in, off), m);
              for (int i = 2; i < L; ++i) reduce_accumulate(dt, op, local, at(c[i].in, off), m);
              return local;
            };
            reduce_pair(dt, op, scratch, part(0), part(1), m);
            for (int p = 2; p < np; ++p) reduce_accumulate(dt, op, scratch, part(p), m);
            copy(at(c[li].out, first * isz), scratch, m * isz);
          });
        });
  }

  void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);  // one block
    run(rank, describe_call("all_to_all", in, out, count, dt), bytes * size() * local_size(),
        [&](Step& s) {
          const Calls& c = s.calls;
          const int L = static_cast<int>(c.size());
          const auto& mine = ranks_of_[mine_];
          const bool streaming = 2 * L * size() * bytes >= kStreamingBytes;
          // Blocks between processes move straight from the inputs into the outputs.
          s.leader([&] {
            Plan pl = plan();
            for (size_t q = 0; q < procs_.size(); ++q) {
              if (static_cast<int>(q) == mine_) continue;
              for (const auto& call : c)
                for (int d : ranks_of_[q]) pl.send[q].push_back({at(call.in, d * bytes), bytes});
              for (int src : ranks_of_[q])
                for (const auto& call : c) pl.recv[q].push_back({at(call.out, src * bytes), bytes});
            }
            exchange(c, pl);
          });
          const int64_t pieces = ceil_div(bytes, kBlockBytes);
          s.tasks(L * L * pieces, [&](int64_t t) {
            const int64_t pair = t / pieces;
            const int ls = static_cast<int>(pair / L), ld = static_cast<int>(pair % L);
            const int64_t off = (t % pieces) * kBlockBytes, m = std::min(kBlockBytes, bytes - off);
            copy(at(c[ld].out, mine[ls] * bytes + off), at(c[ls].in, mine[ld] * bytes + off), m,
                 streaming);
          });
        });
  }

  void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) override {
    run(rank,
        describe_all_to_allv(size(), send, send_counts, send_displs, recv, recv_counts,
                             recv_displs),
        kWorkFromCounts, [&](Step& s) {
          const Calls& c = s.calls;
          const int L = static_cast<int>(c.size());
          const auto& mine = ranks_of_[mine_];
          s.leader([&] {
            Plan pl = plan();
            for (size_t q = 0; q < procs_.size(); ++q) {
              if (static_cast<int>(q) == mine_) continue;
              // Sender and receiver walk the pairs in one order (source, then
              // destination), so the signatures compare every pair's count.
              for (int li = 0; li < L; ++li)
                for (int d : ranks_of_[q]) {
                  const int64_t n = (*c[li].send_counts)[d];
                  pl.send[q].push_back({at(c[li].in, (*c[li].send_displs)[d]), n});
                  pl.send_sig[q] = mix(pl.send_sig[q], mine[li], d, n);
                }
              for (int src : ranks_of_[q])
                for (int li = 0; li < L; ++li) {
                  const int64_t n = (*c[li].recv_counts)[src];
                  pl.recv[q].push_back({at(c[li].out, (*c[li].recv_displs)[src]), n});
                  pl.recv_sig[q] = mix(pl.recv_sig[q], src, mine[li], n);
                }
            }
            exchange(c, pl);
          });
          s.tasks(L * L, [&](int64_t t) {
            const int ls = static_cast<int>(t / L), ld = static_cast<int>(t % L);
            copy(at(c[ld].out, (*c[ld].recv_displs)[mine[ls]]),
                 at(c[ls].in, (*c[ls].send_displs)[mine[ld]]), (*c[ld].recv_counts)[mine[ls]]);
          });
        });
  }

  void permute(int rank, const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) override {
    const int64_t bytes = count * itemsize(dt);
    run(rank, describe_permute(rank, size(), in, out, count, dt, pairs), bytes * local_size(),
        [&](Step& s) {
          const Calls& c = s.calls;
          s.leader([&] {
            Plan pl = plan();
            for (auto [src, dst] : pairs) {
              const int ps = pindex(proc_of_[src]), pd = pindex(proc_of_[dst]);
              if (ps == mine_ && pd != mine_) pl.send[pd].push_back({c[pos_[src]].in, bytes});
              if (pd == mine_ && ps != mine_) pl.recv[ps].push_back({c[pos_[dst]].out, bytes});
            }
            exchange(c, pl);
          });
          s.tasks(static_cast<int64_t>(c.size()), [&](int64_t li) {
            const int me = ranks_of_[mine_][li];
            auto it =
                std::find_if(pairs.begin(), pairs.end(), [&](auto p) { return p.second == me; });
            if (it == pairs.end()) {
              if (bytes) std::memset(c[li].out, 0, static_cast<size_t>(bytes));  // no source
            } else if (pindex(proc_of_[it->first]) == mine_) {
              copy(c[li].out, c[pos_[it->first]].in, bytes);
            }  // else it came in place
          });
        });
  }

  void broadcast(int rank, const void* in, void* out, int64_t count, DType dt, int root) override {
    const int64_t bytes = count * itemsize(dt);
    run(rank, describe_broadcast(rank, size(), in, out, count, dt, root), bytes * local_size(),
        [&](Step& s) {
          const Calls& c = s.calls;
          const int pr = pindex(proc_of_[root]);
          const bool streaming = (static_cast<int64_t>(c.size()) + 1) * bytes >= kStreamingBytes;
          s.leader([&] {
            Plan pl = plan();
            for (int q = 0; q < static_cast<int>(procs_.size()); ++q) {
              if (q == mine_) continue;
              if (pr == mine_) pl.send[q] = {{c[pos_[root]].in, bytes}};
              if (q == pr) pl.recv[q] = {{c[0].out, bytes}};
            }
            exchange(c, pl);
          });
          const void* src = pr == mine_ ? c[pos_[root]].in : c[0].out;
          const int64_t pieces = ceil_div(bytes, kBlockBytes);
          s.tasks(pieces, [&](int64_t t) {
            const int64_t off = t * kBlockBytes, m = std::min(kBlockBytes, bytes - off);
            for (const auto& call : c)
              if (call.out != src) copy(at(call.out, off), at(src, off), m, streaming);
          });
        });
  }

  void barrier(int rank) override {
    run(rank, describe_barrier(), 0,
        [&](Step& s) { s.leader([&] { exchange(s.calls, plan()); }); });
  }

  void fail(int rank, const std::string& op, const std::string& reason) override {
    run(rank, describe_failure(op, reason), 0, [](Step&) {});  // arrive() raises
  }

 private:
  using Calls = std::vector<CallDesc>;
  // run()'s work for all_to_allv: the local ranks' received bytes, read from the calls.
  static constexpr int64_t kWorkFromCounts = -1;

  // What the leader sends to and receives from each process (by index in procs_), in
  // message order.
  struct Plan {
    std::vector<std::vector<Span>> send, recv;
    std::vector<int64_t> send_sig, recv_sig;  // all_to_allv: the pairs' counts, hashed
  };
  Plan plan() const {
    const size_t np = procs_.size();
    return Plan{std::vector<std::vector<Span>>(np), std::vector<std::vector<Span>>(np),
                std::vector<int64_t>(np, 0), std::vector<int64_t>(np, 0)};
  }
  static int64_t mix(int64_t h, int src, int dst, int64_t n) {
    auto u = static_cast<uint64_t>(h);
    for (uint64_t v :
         {static_cast<uint64_t>(src), static_cast<uint64_t>(dst), static_cast<uint64_t>(n)}) {
      u ^= v + 0x9e3779b97f4a7c15ull + (u << 6) + (u >> 2);
    }
    return static_cast<int64_t>(u | 1);  // never 0: 0 means "no pairs compared"
  }

  // The leader's failure: every local rank raises error_ after the sync.
  struct Failed {};

  // One collective as the local ranks see it: phases separated by syncs. Below
  // kSoloBytes of work the leader runs every phase alone and the others only wait.
  struct Step {
    ProcessGroup& g;
    const Calls& calls;
    int li;
    bool together;
    const char* op;

    /** f(t) for t in [0, n), shared by the local ranks, then a sync. */
    template <typename F>
    void tasks(int64_t n, F&& f) {
      if (!together) {
        for (int64_t t = 0; t < n; ++t) f(t);
        return;
      }
      for (int64_t t = g.rv_.next_task(); t < n; t = g.rv_.next_task()) f(t);
      store_fence();
      g.rv_.sync(li, op);
    }
    /** f on the leader, then a sync; every rank raises the leader's failure. */
    template <typename F>
    void leader(F&& f) {
      if (li == 0) {
        try {
          f();
        } catch (const std::exception& e) {
          g.error_ = e.what();
        }
      }
      if (together) g.rv_.sync(li, op);
      if (!g.error_.empty()) throw Failed{};
    }
  };

  template <typename Body>
  void run(int rank, CallDesc desc, int64_t work, Body body) {
    const int li = pos_[rank];
    const std::string op = desc.op;
    const Calls* calls = nullptr;
    try {
      calls = &rv_.arrive(li, std::move(desc));
    } catch (const CommError& e) {
      // Every local rank raises; the leader tells the other processes so they do too.
      if (li == 0) send_failure(op, e.what());
      throw;
    }
    const bool alone = calls->size() == 1;
    if (work == kWorkFromCounts) {
      work = 0;
      for (const auto& call : *calls)
        for (int64_t n : *call.recv_counts) work += n;
    }
    Step s{*this, *calls, li, !alone && work >= kSoloBytes, op.c_str()};
    if (li == 0) error_.clear();  // read by the others only after a sync
    if (s.together || li == 0) {
      try {
        body(s);
      } catch (const Failed&) {
      }
    }
    store_fence();
    if (!alone) rv_.sync(li, op);
    if (!error_.empty()) throw CommError(error_);
  }

  static int local_count(const std::vector<int>& ids, int per_process, int me) {
    return static_cast<int>(
        std::count_if(ids.begin(), ids.end(), [&](int id) { return id / per_process == me; }));
  }
  static std::vector<int> local_ranks(const std::vector<int>& ids, int per_process, int me) {
    std::vector<int> out;
    for (int r = 0; r < static_cast<int>(ids.size()); ++r)
      if (ids[r] / per_process == me) out.push_back(r);
    return out;
  }
  int64_t local_size() const { return static_cast<int64_t>(ranks_of_[mine_].size()); }
  int pindex(int process) const {
    return static_cast<int>(std::lower_bound(procs_.begin(), procs_.end(), process) -
                            procs_.begin());
  }
  // got_[p] sized for n bytes from process index p (leader only; capacity is kept).
  char* buffer(int p, int64_t n) {
    got_[p].resize(static_cast<size_t>(n));
    return got_[p].data();
  }

  Wire wire_of(const CallDesc& c) const {
    Wire w;
    w.group = hash_;
    w.seq = seq_;
    w.count = c.count;
    w.dtype = c.dtype;
    w.reduce = c.reduce;
    w.root = c.root;
    w.pairs_hash = c.pairs_hash;
    w.failed = !c.error.empty();
    std::strncpy(w.op, c.op.c_str(), sizeof w.op - 1);
    return w;
  }

  std::string header_of(Wire w, const Plan& pl, const std::string& note) const {
    w.note_bytes = static_cast<int64_t>(note.size());
    const size_t np = procs_.size();
    std::vector<int64_t> sends(np, 0), expects(np, 0);
    for (size_t p = 0; p < np; ++p) {
      if (p < pl.send.size()) sends[p] = total(pl.send[p]);
      if (p < pl.recv.size()) expects[p] = total(pl.recv[p]);
    }
    std::string h(reinterpret_cast<const char*>(&w), sizeof w);
    auto row = [&](std::vector<int64_t> a) {
      a.resize(np, 0);
      h.append(reinterpret_cast<const char*>(a.data()), np * sizeof(int64_t));
    };
    row(sends);
    row(expects);
    row(pl.send_sig);
    row(pl.recv_sig);
    return h + note;
  }

  Header decode(const std::string& h) const {
    const size_t np = procs_.size();
    Header out;
    std::memcpy(&out.w, h.data(), std::min(h.size(), sizeof out.w));
    out.sends.assign(np, 0);
    out.expects.assign(np, 0);
    out.send_sig.assign(np, 0);
    out.recv_sig.assign(np, 0);
    const size_t row = np * sizeof(int64_t);
    if (h.size() < sizeof out.w + 4 * row) return out;
    size_t off = sizeof out.w;
    for (auto* v : {&out.sends, &out.expects, &out.send_sig, &out.recv_sig}) {
      std::memcpy(v->data(), h.data() + off, row);
      off += row;
    }
    const auto note = static_cast<size_t>(std::max<int64_t>(0, out.w.note_bytes));
    out.note = h.substr(off, note);
    if (off + note < h.size()) out.body = h.substr(off + note);
    return out;
  }

  // The next current header from process index p; a failed call's leftovers skip.
  Header read_header(int p, const char* op, mpi::Clock::time_point dl) {
    for (;;) {
      Header h = decode(Link::get().recv(procs_[p], tag_, op, dl));
      if (h.w.group == hash_ && h.w.seq < seq_) continue;
      return h;
    }
  }

  // Raises the same CommError on every process when any header says the processes
  // cannot go on: a failed process, different calls, or counts that do not match.
  void judge(const char* op, const std::vector<Header>& hs) const {
    const size_t np = procs_.size();
    std::string failures;
    for (size_t p = 0; p < np; ++p) {
      if (hs[p].w.group != hash_)
        throw CommError(std::string("[") + op + "] process " + std::to_string(procs_[p]) +
                        " sent a message of another group on this group's tag. Got group " +
                        std::to_string(hs[p].w.group) + "; expected " + std::to_string(hash_) +
                        ". Two device groups hash to one MPI tag; report this as a bug.");
      if (hs[p].w.failed)
        failures += (failures.empty() ? "" : "; ") + std::string("process ") +
                    std::to_string(procs_[p]) + ": " + hs[p].note;
    }
    if (!failures.empty())
      throw CommError(std::string("[") + op +
                      "] a process of the group failed before the collective: " + failures +
                      ". Every process of the group raises this error; fix the failing "
                      "process's error first.");
    bool agree = true;
    for (size_t p = 1; p < np; ++p) agree = agree && same_call(hs[p].w, hs[0].w);
    if (!agree) {
      std::ostringstream os;
      os << '[' << op << "] processes disagree on the collective. Got ";
      for (size_t p = 0; p < np; ++p)
        os << (p ? ", " : "") << "process " << procs_[p] << ": " << show(hs[p].w);
      os << "; expected the same call on every process. Every process must run the same "
            "program on the same shapes and dtypes.";
      throw CommError(os.str());
    }
    for (size_t a = 0; a < np; ++a)
      for (size_t b = 0; b < np; ++b) {
        if (a == b) continue;
        if (hs[a].sends[b] == hs[b].expects[a] && hs[a].send_sig[b] == hs[b].recv_sig[a]) continue;
        throw CommError(std::string("[") + op + "] process " + std::to_string(procs_[a]) +
                        " sends " + std::to_string(hs[a].sends[b]) + " bytes to process " +
                        std::to_string(procs_[b]) + " for its ranks. Got " +
                        std::to_string(hs[a].sends[b]) + " bytes; expected " +
                        std::to_string(hs[b].expects[a]) +
                        " (the receive counts there), pair by pair. Every pair's counts must "
                        "agree.");
      }
  }

  // The leader's exchange: headers (and small bodies) to and from every process, one
  // verdict everywhere, then the large bodies in place.
  void exchange(const Calls& calls, const Plan& pl) {
    Link& link = Link::get();
    const char* op = calls[0].op.c_str();
    link.check(op);
    ++seq_;
    const size_t np = procs_.size();
    auto dl = link.deadline();
    // A failed call may leave its small sends in flight: their buffers move to
    // orphans_ (never freed). Large bodies are only sent once every process agreed.
    auto pending = std::make_shared<Pending>();
    const std::string header = header_of(wire_of(calls[0]), pl, "");
    pending->messages.resize(np);
    std::vector<Header> hs(np);
    hs[mine_] = decode(header);
    for (size_t p = 0; p < np; ++p) {
      if (static_cast<int>(p) == mine_) continue;
      std::string& m = pending->messages[p];
      m = header;
      if (hs[mine_].sends[p] <= kEagerBytes)
        for (const Span& s : pl.send[p]) m.append(static_cast<const char*>(s.data), s.bytes);
      link.post_send(m.data(), m.size(), procs_[p], tag_, pending->reqs);
      pending->to.push_back(procs_[p]);
    }
    try {
      for (size_t p = 0; p < np; ++p)
        if (static_cast<int>(p) != mine_) hs[p] = read_header(static_cast<int>(p), op, dl);
      judge(op, hs);
      std::vector<void*> reqs;
      std::vector<int> peers;
      for (size_t p = 0; p < np; ++p) {
        if (static_cast<int>(p) == mine_) continue;
        if (hs[mine_].sends[p] > kEagerBytes) {
          link.post_send_spans(pl.send[p], procs_[p], tag_ + 1, reqs);
          peers.push_back(procs_[p]);
        }
        if (hs[p].sends[mine_] > kEagerBytes) {
          link.post_recv_spans(pl.recv[p], procs_[p], tag_ + 1, reqs);
          peers.push_back(procs_[p]);
        } else {
          const std::string& body = hs[p].body;
          if (static_cast<int64_t>(body.size()) != hs[p].sends[mine_])
            throw CommError(std::string("[") + op + "] process " + std::to_string(procs_[p]) +
                            " sent a body of " + std::to_string(body.size()) +
                            " bytes. Got that; expected " + std::to_string(hs[p].sends[mine_]) +
                            " (its header). Report this as a bug.");
          int64_t off = 0;
          for (const Span& s : pl.recv[p]) {
            copy(const_cast<void*>(s.data), body.data() + off, s.bytes);
            off += s.bytes;
          }
        }
      }
      link.wait(reqs, peers, op, dl, /*streaming=*/true);
      link.wait(pending->reqs, pending->to, op, dl);
    } catch (...) {
      if (!pending->reqs.empty()) orphans_.push_back(pending);
      throw;
    }
  }

  void send_failure(const std::string& op, const std::string& why) noexcept {
    try {
      Link& link = Link::get();
      ++seq_;
      CallDesc c;
      c.op = op;
      c.error = why;
      auto pending = std::make_shared<Pending>();
      pending->messages = {header_of(wire_of(c), plan(), why)};
      for (size_t p = 0; p < procs_.size(); ++p) {
        if (static_cast<int>(p) == mine_) continue;
        link.post_send(pending->messages[0].data(), pending->messages[0].size(), procs_[p], tag_,
                       pending->reqs);
      }
      orphans_.push_back(pending);  // the peers may never receive them
    } catch (...) {
    }
  }

  struct Pending {
    std::vector<std::string> messages;  // headers with their small bodies
    std::vector<void*> reqs;
    std::vector<int> to;
  };

  std::vector<int> ids_;
  int me_;
  uint64_t hash_;
  std::vector<int> proc_of_;                // by rank
  std::vector<int> procs_;                  // sorted processes of the group
  std::vector<std::vector<int>> ranks_of_;  // by index in procs_: their ranks, in order
  std::vector<int> pos_;                    // rank -> its index among its process's ranks
  std::vector<int> remote_order_;           // other processes' ranks, process by process
  std::vector<int64_t> remote_start_;       // by index in procs_: its first in remote_order_
  int mine_ = 0;                            // this process's index in procs_
  int tag_ = 0;
  Rendezvous rv_;
  uint64_t seq_ = 0;   // the leader's exchange count
  std::string error_;  // the leader's verdict, read by every local rank after a sync
  // Filled by the leader, read by every local rank after a sync:
  std::vector<std::vector<char>> got_;  // by index in procs_: partials received (reused)
  std::vector<char> partial_;           // reduce_scatter: other processes' blocks
  std::vector<std::shared_ptr<Pending>> orphans_;
};

}  // namespace

std::shared_ptr<GroupImpl> make_process_group(const std::vector<int>& device_ids,
                                              int devices_per_process, int this_process) {
  return std::make_shared<ProcessGroup>(device_ids, devices_per_process, this_process);
}

}  // namespace tsr::detail
