// A group whose devices span processes: hierarchical. The ranks of this process meet
// in an in-process rendezvous (the threads group's), the lowest one, the leader, packs
// what each other process needs from this one into one message, exchanges it with
// their leaders over the MPI link, and writes every local rank's output from the local
// inputs and the messages received. Reductions combine each process's partial in
// process order, so every replica gets bit-identical results.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <string_view>

#include "tsr/comm/calls.h"
#include "tsr/comm/mpi/link.h"
#include "tsr/comm/process.h"
#include "tsr/comm/reduce_kernels.h"
#include "tsr/comm/rendezvous.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {

using mpi::Link;

// What a leader says about its process's call, ahead of the payload; compared across
// processes so mismatched collectives are errors, not garbage.
struct Wire {
  uint64_t group = 0;  // the group's hash: a tag shared by two groups is caught
  uint64_t seq = 0;    // the group's call number: stale messages of a failed call skip
  int64_t count = 0;
  int32_t dtype = -1, reduce = -1, root = -1, failed = 0;
  uint64_t pairs_hash = 0;
  char op[24] = {};
};

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

// all_reduce over 3+ processes is two rounds of chunks from this size on.
constexpr int64_t kChunkedAllReduceBytes = 256 << 10;

const char* at(const void* p, int64_t off) { return static_cast<const char*>(p) + off; }
char* at(void* p, int64_t off) { return static_cast<char*>(p) + off; }

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
    packs_.resize(procs_.size());
    const int64_t slots = (Link::get().tag_ub() - mpi::kFirstGroupTag) / 2;
    tag_ = mpi::kFirstGroupTag + 2 * static_cast<int>(hash_ % static_cast<uint64_t>(slots));
  }

  int size() const override { return static_cast<int>(ids_.size()); }
  const char* backend() const override { return "mpi"; }

  // Each collective: pack(c, q) is what this process sends process index q (the
  // leader runs it), prepare(c) runs on the leader once the messages are in, and
  // write(c, li) fills local rank li's output (every local rank runs its own, in
  // parallel). Inputs stay readable until the closing sync.
  void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                  ReduceOp op) override {
    const int64_t isz = itemsize(dt);
    const int64_t bytes = count * isz;
    const int np = static_cast<int>(procs_.size());
    // Large ones over 3+ processes: each process reduces one chunk (round 1: the
    // others' partials of it), then sends it to all (round 2). Each leader moves
    // 2(P-1)/P of the data instead of P-1 times it; chunks reduce in process order
    // either way, so the result is the same.
    const bool chunked = np > 2 && bytes >= kChunkedAllReduceBytes;
    auto lo = [&](int q) { return count * q / np; };
    auto chunk = [&](const std::string& b, int q) {
      return std::string_view(b.data() + lo(q) * isz,
                              static_cast<size_t>((lo(q + 1) - lo(q)) * isz));
    };
    run(
        rank, describe_reduce("all_reduce", in, out, count, dt, op),
        [&](const Calls& c, int q) -> std::string_view {
          if (partial_.empty() && bytes) partial_ = reduce_local(c, 0, count, dt, op);
          return chunked ? chunk(partial_, q) : std::string_view(partial_);
        },
        [&](const Calls& c) {
          if (!bytes) return;
          if (!chunked) {
            total_ = combine(partial_, 0, count, dt, op);
            return;
          }
          // This process's chunk, reduced over processes in order.
          total_.resize(static_cast<size_t>(bytes));
          const int64_t n = lo(mine_ + 1) - lo(mine_);
          char* acc = total_.data() + lo(mine_) * isz;
          for (int p = 0; p < np; ++p) {
            const char* part = p == mine_ ? partial_.data() + lo(mine_) * isz : got_[p].data();
            if (p == 0)
              std::memcpy(acc, part, static_cast<size_t>(n * isz));
            else
              reduce_accumulate(dt, op, acc, part, n);
          }
          auto send_mine = [&](const Calls&, int) { return chunk(total_, mine_); };
          exchange(c, send_mine);
          for (int p = 0; p < np; ++p)
            if (p != mine_)
              copy(total_.data() + lo(p) * isz, got_[p].data(), (lo(p + 1) - lo(p)) * isz);
        },
        [&](const Calls& c, size_t li) { copy(c[li].out, total_.data(), bytes); });
  }

  void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);
    run(
        rank, describe_call("all_gather", in, out, count, dt),
        [&](const Calls& c, int) -> std::string_view {
          if (partial_.empty())
            for (const auto& call : c) partial_.append(at(call.in, 0), static_cast<size_t>(bytes));
          return partial_;
        },
        [](const Calls&) {},
        [&](const Calls& c, size_t li) {
          for (int r = 0; r < size(); ++r)
            copy(at(c[li].out, r * bytes), input_of(c, r, bytes), bytes);
        });
  }

  void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                      ReduceOp op) override {
    const int64_t bytes = count * itemsize(dt);
    run(
        rank, describe_reduce("reduce_scatter", in, out, count, dt, op),
        [&](const Calls& c, int q) -> std::string_view {
          if (partial_.empty() && bytes) partial_ = reduce_local(c, 0, count * size(), dt, op);
          std::string& block = pack_for(q);
          for (int r : ranks_of_[q]) block.append(partial_.data() + r * bytes, bytes);
          return block;
        },
        [](const Calls&) {},
        [&](const Calls& c, size_t li) {
          if (!bytes) return;
          const int r = ranks_of_[mine_][li];
          // This process's partial of rank r's block, then the others' in process order.
          std::string acc;
          for (size_t p = 0; p < procs_.size(); ++p) {
            const char* part = static_cast<int>(p) == mine_
                                   ? partial_.data() + r * bytes
                                   : got_[p].data() + static_cast<int64_t>(li) * bytes;
            if (p == 0)
              acc.assign(part, static_cast<size_t>(bytes));
            else
              reduce_accumulate(dt, op, acc.data(), part, count);
          }
          copy(c[li].out, acc.data(), bytes);
        });
  }

  void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);
    run(
        rank, describe_call("all_to_all", in, out, count, dt),
        [&](const Calls& c, int q) -> std::string_view {
          std::string& packed = pack_for(q);
          for (const auto& call : c)
            for (int d : ranks_of_[q]) packed.append(at(call.in, d * bytes), bytes);
          return packed;
        },
        [](const Calls&) {},
        [&](const Calls& c, size_t li) {
          const auto& mine = ranks_of_[mine_];
          const int d = mine[li];
          for (int s = 0; s < size(); ++s) {
            const int ps = pindex(proc_of_[s]);
            const void* src = ps == mine_
                                  ? at(c[pos_[s]].in, d * bytes)
                                  : got_[ps].data() + (pos_[s] * static_cast<int64_t>(mine.size()) +
                                                       static_cast<int64_t>(li)) *
                                                          bytes;
            copy(at(c[li].out, s * bytes), src, bytes);
          }
        });
  }

  void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) override {
    run(
        rank,
        describe_all_to_allv(size(), send, send_counts, send_displs, recv, recv_counts,
                             recv_displs),
        [&](const Calls& c, int q) -> std::string_view {
          std::string& packed = pack_for(q);
          for (const auto& call : c)
            for (int d : ranks_of_[q])
              packed.append(at(call.in, (*call.send_displs)[d]),
                            static_cast<size_t>((*call.send_counts)[d]));
          return packed;
        },
        [&](const Calls& c) {
          // Where each remote source's bytes for each local destination start.
          const auto& mine = ranks_of_[mine_];
          starts_.assign(static_cast<size_t>(size()), std::vector<int64_t>(mine.size()));
          for (size_t p = 0; p < procs_.size(); ++p) {
            if (static_cast<int>(p) == mine_) continue;
            int64_t off = 0;
            for (int s : ranks_of_[p])
              for (size_t li = 0; li < mine.size(); ++li) {
                starts_[s][li] = off;
                off += (*c[li].recv_counts)[s];
              }
            if (off != static_cast<int64_t>(got_[p].size()))
              throw CommError("[all_to_allv] process " + std::to_string(procs_[p]) + " sent " +
                              std::to_string(got_[p].size()) + " bytes to process " +
                              std::to_string(me_) + ". Got " + std::to_string(got_[p].size()) +
                              "; expected " + std::to_string(off) +
                              " (the receive counts here). Every pair's counts must agree.");
          }
        },
        [&](const Calls& c, size_t li) {
          const auto& mine = ranks_of_[mine_];
          const auto& call = c[li];
          for (int s = 0; s < size(); ++s) {
            const int64_t n = (*call.recv_counts)[s];
            if (n == 0) continue;
            const int ps = pindex(proc_of_[s]);
            const void* src = ps == mine_ ? at(c[pos_[s]].in, (*c[pos_[s]].send_displs)[mine[li]])
                                          : got_[ps].data() + starts_[s][li];
            copy(at(call.out, (*call.recv_displs)[s]), src, n);
          }
        });
  }

  void permute(int rank, const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) override {
    const int64_t bytes = count * itemsize(dt);
    run(
        rank, describe_permute(rank, size(), in, out, count, dt, pairs),
        [&](const Calls& c, int q) -> std::string_view {
          std::string& packed = pack_for(q);
          for (auto [s, d] : pairs)
            if (pindex(proc_of_[s]) == mine_ && pindex(proc_of_[d]) == q)
              packed.append(at(c[pos_[s]].in, 0), bytes);
          return packed;
        },
        [](const Calls&) {},
        [&](const Calls& c, size_t li) {
          const int me = ranks_of_[mine_][li];
          // The k-th pair from process p to this process is block k of p's message.
          std::vector<int64_t> next(procs_.size(), 0);
          for (auto [s, d] : pairs) {
            const int ps = pindex(proc_of_[s]);
            if (pindex(proc_of_[d]) != mine_) continue;
            if (d == me) {
              copy(c[li].out, ps == mine_ ? c[pos_[s]].in : got_[ps].data() + bytes * next[ps],
                   bytes);
              return;
            }
            if (ps != mine_) ++next[ps];
          }
          if (bytes) std::memset(c[li].out, 0, static_cast<size_t>(bytes));  // no source
        });
  }

  void broadcast(int rank, const void* in, void* out, int64_t count, DType dt, int root) override {
    const int64_t bytes = count * itemsize(dt);
    run(
        rank, describe_broadcast(rank, size(), in, out, count, dt, root),
        [&](const Calls& c, int) -> std::string_view {
          if (pindex(proc_of_[root]) != mine_) return {};
          return {at(c[pos_[root]].in, 0), static_cast<size_t>(bytes)};
        },
        [](const Calls&) {},
        [&](const Calls& c, size_t li) {
          const int pr = pindex(proc_of_[root]);
          const void* src = pr == mine_ ? c[pos_[root]].in : got_[pr].data();
          if (c[li].out != src) copy(c[li].out, src, bytes);
        });
  }

  void barrier(int rank) override {
    run(
        rank, describe_barrier(), [](const Calls&, int) { return std::string_view(); },
        [](const Calls&) {}, [](const Calls&, size_t) {});
  }

  void fail(int rank, const std::string& op, const std::string& reason) override {
    run(
        rank, describe_failure(op, reason), [](const Calls&, int) { return std::string_view(); },
        [](const Calls&) {}, [](const Calls&, size_t) {});
  }

 private:
  using Calls = std::vector<CallDesc>;

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
  // The message for process index q, emptied (its capacity stays: no new pages).
  std::string& pack_for(int q) {
    std::string& b = packs_[static_cast<size_t>(q)];
    b.clear();
    return b;
  }
  int pindex(int process) const {
    return static_cast<int>(std::lower_bound(procs_.begin(), procs_.end(), process) -
                            procs_.begin());
  }
  static void copy(void* dst, const void* src, int64_t bytes) {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, static_cast<size_t>(bytes));
  }

  // The reduction over this process's ranks, in rank order, of count elements at
  // element offset `first` of each input.
  static std::string reduce_local(const Calls& c, int64_t first, int64_t count, DType dt,
                                  ReduceOp op) {
    const int64_t isz = itemsize(dt);
    std::string acc(at(c[0].in, first * isz), static_cast<size_t>(count * isz));
    for (size_t i = 1; i < c.size(); ++i)
      reduce_accumulate(dt, op, acc.data(), at(c[i].in, first * isz), count);
    return acc;
  }
  // The reduction over processes, in process order, of each one's partial: this
  // process's `mine`, the others' at byte `offset` of their messages.
  std::string combine(const std::string& mine, int64_t offset, int64_t count, DType dt,
                      ReduceOp op) const {
    std::string acc;
    for (size_t p = 0; p < procs_.size(); ++p) {
      const char* part = static_cast<int>(p) == mine_ ? mine.data() : got_[p].data() + offset;
      if (p == 0) {
        acc.assign(part, static_cast<size_t>(count * itemsize(dt)));
      } else {
        reduce_accumulate(dt, op, acc.data(), part, count);
      }
    }
    return acc;
  }
  // Rank r's input: a local rank's buffer or its block of its process's message.
  const void* input_of(const Calls& c, int r, int64_t bytes) const {
    const int p = pindex(proc_of_[r]);
    return p == mine_ ? c[pos_[r]].in : got_[p].data() + pos_[r] * bytes;
  }

  // One collective: local arrival, the leader's exchange and writes, a closing sync.
  template <typename Pack, typename Prepare, typename Write>
  void run(int rank, CallDesc desc, Pack pack, Prepare prepare, Write write) {
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
    if (li == 0) {
      error_.clear();
      partial_.clear();
      try {
        exchange(*calls, pack);
        prepare(*calls);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    }
    const bool alone = calls->size() == 1;
    if (!alone) rv_.sync(li, op);
    if (!error_.empty()) throw CommError(error_);
    write(*calls, static_cast<size_t>(li));
    if (!alone) rv_.sync(li, op);
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

  template <typename Pack>
  void exchange(const Calls& calls, Pack& pack) {
    Link& link = Link::get();
    const char* op = calls[0].op.c_str();
    link.check(op);
    ++seq_;
    const Wire me = wire_of(calls[0]);
    auto dl = link.deadline();
    // Everything this call sends lives until its sends complete; on a failure the
    // sends may still be in flight, so their buffers move to orphans_ (never freed).
    auto pending = std::make_shared<Pending>();
    pending->header.assign(reinterpret_cast<const char*>(&me), sizeof me);
    pending->payloads.resize(procs_.size());
    for (size_t p = 0; p < procs_.size(); ++p) {
      if (static_cast<int>(p) == mine_) continue;
      std::string_view v = pack(calls, static_cast<int>(p));
      // partial_ and packs_ live until the next call: sent in place; anything else is
      // copied.
      auto inside = [&](const std::string& b) {
        return !b.empty() && v.data() >= b.data() && v.data() + v.size() <= b.data() + b.size();
      };
      const bool shared = v.empty() || inside(partial_) || inside(packs_[p]);
      if (!shared) pending->payloads[p] = std::string(v);
      pending->uses_partial = pending->uses_partial || shared;
      const char* body = shared ? v.data() : pending->payloads[p].data();
      link.post_send(pending->header.data(), pending->header.size(), procs_[p], tag_,
                     pending->reqs);
      link.post_send(body, v.size(), procs_[p], tag_ + 1, pending->reqs);
      pending->to.push_back(procs_[p]);
      pending->to.push_back(procs_[p]);
    }
    try {
      got_.resize(procs_.size());
      std::vector<std::pair<int, Wire>> seen{{me_, me}};
      std::string failures;
      for (size_t p = 0; p < procs_.size(); ++p) {
        if (static_cast<int>(p) == mine_) continue;
        Wire w;
        std::string note;
        for (;;) {
          std::string h = link.recv(procs_[p], tag_, op, dl);
          std::memcpy(&w, h.data(), std::min(h.size(), sizeof w));
          note = h.size() > sizeof w ? h.substr(sizeof w) : "";
          link.recv_into(procs_[p], tag_ + 1, op, dl, got_[p]);
          if (w.group == hash_ && w.seq < seq_) continue;  // a failed call's leftover
          break;
        }
        if (w.group != hash_)
          throw CommError(std::string("[") + op + "] process " + std::to_string(procs_[p]) +
                          " sent a message of another group on this group's tag. Got group " +
                          std::to_string(w.group) + "; expected " + std::to_string(hash_) +
                          ". Two device groups hash to one MPI tag; report this as a bug.");
        if (w.failed)
          failures += (failures.empty() ? "" : "; ") + std::string("process ") +
                      std::to_string(procs_[p]) + ": " + note;
        seen.emplace_back(procs_[p], w);
      }
      if (!failures.empty())
        throw CommError(std::string("[") + op +
                        "] a process of the group failed before the "
                        "collective: " +
                        failures +
                        ". Every process of the group raises this "
                        "error; fix the failing process's error first.");
      std::sort(seen.begin(), seen.end(), [](auto& a, auto& b) { return a.first < b.first; });
      bool agree = std::all_of(seen.begin(), seen.end(),
                               [&](auto& s) { return same_call(s.second, seen[0].second); });
      if (!agree) {
        std::ostringstream os;
        os << '[' << op << "] processes disagree on the collective. Got ";
        for (size_t i = 0; i < seen.size(); ++i)
          os << (i ? ", " : "") << "process " << seen[i].first << ": " << show(seen[i].second);
        os << "; expected the same call on every process. Every process must run the same "
              "program on the same shapes and dtypes.";
        throw CommError(os.str());
      }
      link.wait_sends(pending->reqs, pending->to, op, dl);
    } catch (...) {
      if (!pending->reqs.empty()) {  // sends may still read their buffers: keep them
        if (pending->uses_partial) {
          pending->keep = std::move(partial_);
          pending->keep_packs = std::move(packs_);
          packs_.assign(procs_.size(), {});
        }
        orphans_.push_back(pending);
      }
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
      Wire w = wire_of(c);
      auto pending = std::make_shared<Pending>();
      pending->header.assign(reinterpret_cast<const char*>(&w), sizeof w);
      pending->header += why;
      for (size_t p = 0; p < procs_.size(); ++p) {
        if (static_cast<int>(p) == mine_) continue;
        link.post_send(pending->header.data(), pending->header.size(), procs_[p], tag_,
                       pending->reqs);
        link.post_send(nullptr, 0, procs_[p], tag_ + 1, pending->reqs);
      }
      orphans_.push_back(pending);  // the peers may never receive them
    } catch (...) {
    }
  }

  struct Pending {
    std::string header;
    std::vector<std::string> payloads;
    bool uses_partial = false;            // a send reads partial_ or packs_
    std::string keep;                     // partial_, moved here when such a send is orphaned
    std::vector<std::string> keep_packs;  // packs_, likewise
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
  int mine_ = 0;                            // this process's index in procs_
  int tag_ = 0;
  Rendezvous rv_;
  uint64_t seq_ = 0;   // the leader's call count
  std::string error_;  // the leader's verdict, read by every local rank
  // Shared between the local ranks of one call (the leader fills them before the sync):
  std::vector<std::vector<char>> got_;        // by index in procs_: their messages (reused)
  std::string partial_;                       // this process's partial or packed inputs
  std::vector<std::string> packs_;            // by index in procs_: what goes there
  std::string total_;                         // all_reduce's result
  std::vector<std::vector<int64_t>> starts_;  // all_to_allv: offsets in the messages
  std::vector<std::shared_ptr<Pending>> orphans_;
};

}  // namespace

std::shared_ptr<GroupImpl> make_process_group(const std::vector<int>& device_ids,
                                              int devices_per_process, int this_process) {
  return std::make_shared<ProcessGroup>(device_ids, devices_per_process, this_process);
}

}  // namespace tsr::detail
