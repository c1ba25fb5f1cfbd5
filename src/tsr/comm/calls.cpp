#include "tsr/comm/calls.h"

#include <algorithm>
#include <sstream>
#include <string_view>

namespace tsr::detail {
namespace {

// The group ranks of call positions: calls[i] is rank ranks[i]'s (i's when empty).
std::vector<int> group_ranks(const std::vector<int>& positions, const std::vector<int>& ranks) {
  if (ranks.empty()) return positions;
  std::vector<int> out;
  for (int i : positions) out.push_back(ranks[static_cast<size_t>(i)]);
  return out;
}

// "[op] ranks disagree on <what>. Got rank 0: 1024, rank 3: 512; expected ..." or ""
// when every rank has the same key. Ranks are grouped by key, in order of first use,
// and show() prints a group from its first call.
template <typename Key, typename Show>
std::string disagreement(const std::vector<CallDesc>& calls, const std::vector<int>& ranks,
                         const char* what, Key key, Show show) {
  const int n = static_cast<int>(calls.size());
  int r = 1;
  while (r < n && key(calls[r]) == key(calls[0])) ++r;
  if (r == n) return "";  // the common case allocates nothing
  std::vector<std::vector<int>> groups;
  for (r = 0; r < n; ++r) {
    auto it = groups.begin();
    while (it != groups.end() && !(key(calls[it->front()]) == key(calls[r]))) ++it;
    if (it == groups.end()) {
      groups.push_back({r});
    } else {
      it->push_back(r);
    }
  }
  std::ostringstream os;
  os << '[' << calls[0].op << "] ranks disagree on the " << what << ". Got ";
  for (size_t g = 0; g < groups.size(); ++g) {
    os << (g ? ", " : "") << rank_list(group_ranks(groups[g], ranks)) << ": "
       << show(calls[groups[g].front()]);
  }
  os << "; expected the same " << what << " on every rank. Call the collective with matching "
     << "arguments on every rank.";
  return os.str();
}

std::string show_pairs(const std::vector<std::pair<int, int>>* pairs) {
  if (pairs == nullptr) return "[]";
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < pairs->size(); ++i) {
    if (i == 8) {
      os << ", ... (" << pairs->size() << " pairs)";
      break;
    }
    os << (i ? ", " : "") << '(' << (*pairs)[i].first << ", " << (*pairs)[i].second << ')';
  }
  os << ']';
  return os.str();
}

// The failures posted by fail() or by a rank's own argument checks, or "".
std::string failures(const std::vector<CallDesc>& calls, const std::vector<int>& ranks) {
  auto has_error = [](const CallDesc& c) { return !c.error.empty(); };
  if (std::none_of(calls.begin(), calls.end(), has_error)) return "";
  // Ranks grouped by reason, so eight ranks with one bad argument read as one line.
  std::vector<int> bad;
  std::vector<std::vector<int>> by_reason;
  for (int r = 0; r < static_cast<int>(calls.size()); ++r) {
    if (!has_error(calls[r])) continue;
    bad.push_back(r);
    auto same = [&](const std::vector<int>& g) { return calls[g[0]].error == calls[r].error; };
    auto it = std::find_if(by_reason.begin(), by_reason.end(), same);
    if (it == by_reason.end()) {
      by_reason.push_back({r});
    } else {
      it->push_back(r);
    }
  }
  const CallDesc& first = calls[bad[0]];
  std::ostringstream os;
  os << '[' << first.op << "] " << rank_list(group_ranks(bad, ranks))
     << (first.failed ? " failed before the collective: " : " passed invalid arguments: ");
  for (size_t g = 0; g < by_reason.size(); ++g) {
    if (by_reason.size() > 1)
      os << (g ? "; " : "") << rank_list(group_ranks(by_reason[g], ranks)) << ": ";
    os << calls[by_reason[g][0]].error;
  }
  os << ". Every rank of the group raises this error; fix the failing "
     << (bad.size() == 1 ? "rank" : "ranks") << " and call the collective again.";
  return os.str();
}

// all_to_allv: rank s's send count to d must equal rank d's receive count from s.
// calls[i] is rank ranks[i]'s (rank i's when `ranks` is empty).
std::string pair_counts(const std::vector<CallDesc>& calls, const std::vector<int>& ranks) {
  const int n = static_cast<int>(calls.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const int s = ranks.empty() ? i : ranks[i], d = ranks.empty() ? j : ranks[j];
      int64_t sent = (*calls[i].send_counts)[d];
      int64_t received = (*calls[j].recv_counts)[s];
      if (sent == received) continue;
      std::ostringstream os;
      os << "[all_to_allv] ranks disagree on how many bytes rank " << s << " sends to rank " << d
         << ". Got send_counts[" << d << "] = " << sent << " on rank " << s << ", recv_counts[" << s
         << "] = " << received << " on rank " << d
         << "; expected them equal for every pair of ranks. Compute the counts from the same "
         << "data on every rank.";
      return os.str();
    }
  }
  return "";
}

uint64_t hash_pairs(const std::vector<std::pair<int, int>>& pairs) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t x) { h = (h ^ x) * 1099511628211ull; };
  mix(pairs.size());
  for (const auto& [src, dst] : pairs) mix(static_cast<uint64_t>(src) << 32 | uint32_t(dst));
  return h;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) os << ',';
    os << ranks[i];
    if (j > i) os << '-' << ranks[j];
    i = j + 1;
  }
  return os.str();
}

CallDesc describe_call(const char* op, const void* in, void* out, int64_t count, DType dt) {
  CallDesc c;
  c.op = op;
  c.count = count;
  c.dtype = static_cast<int>(dt);
  c.in = in;
  c.out = out;
  if (count < 0) {
    c.error = "the element count is " + std::to_string(count) + " (negative)";
  } else if (count > 0 && (in == nullptr || out == nullptr)) {
    c.error = std::string("the ") + (in == nullptr ? "input" : "output") + " buffer is null for " +
              std::to_string(count) + " elements";
  }
  return c;
}

CallDesc describe_reduce(const char* op, const void* in, void* out, int64_t count, DType dt,
                         ReduceOp reduce) {
  CallDesc c = describe_call(op, in, out, count, dt);
  c.reduce = static_cast<int>(reduce);
  return c;
}

CallDesc describe_broadcast(int rank, int size, const void* in, void* out, int64_t count, DType dt,
                            int root) {
  // Only the root's input is read, so the others may pass none.
  CallDesc c = describe_call("broadcast", rank == root ? in : out, out, count, dt);
  c.in = in;
  c.root = root;
  if (c.error.empty() && (root < 0 || root >= size)) {
    c.error = "root " + std::to_string(root) + " is not a rank of the group of " +
              std::to_string(size) + " ranks";
  }
  return c;
}

CallDesc describe_permute(int rank, int size, const void* in, void* out, int64_t count, DType dt,
                          const std::vector<std::pair<int, int>>& pairs) {
  bool sends = false;
  for (const auto& [src, dst] : pairs) sends = sends || src == rank;
  CallDesc c = describe_call("permute", sends ? in : out, out, count, dt);
  c.in = in;
  c.pairs = &pairs;
  c.pairs_hash = hash_pairs(pairs);
  if (!c.error.empty()) return c;
  std::vector<uint8_t> seen(2 * size, 0);  // sources, then destinations
  for (const auto& [src, dst] : pairs) {
    const char* wrong = nullptr;
    if (src < 0 || src >= size || dst < 0 || dst >= size) {
      wrong = " names a rank outside the group";
    } else if (seen[src]++ || seen[size + dst]++) {
      wrong = " repeats a source or a destination; each rank may send and receive at most once";
    }
    if (wrong != nullptr) {
      c.error = "pair (" + std::to_string(src) + ", " + std::to_string(dst) + ")" + wrong +
                " (the group has " + std::to_string(size) + " ranks)";
      break;
    }
  }
  return c;
}

CallDesc describe_all_to_allv(int size, const void* send, const std::vector<int64_t>& send_counts,
                              const std::vector<int64_t>& send_displs, void* recv,
                              const std::vector<int64_t>& recv_counts,
                              const std::vector<int64_t>& recv_displs) {
  CallDesc c;
  c.op = "all_to_allv";
  c.in = send;
  c.out = recv;
  c.send_counts = &send_counts;
  c.send_displs = &send_displs;
  c.recv_counts = &recv_counts;
  c.recv_displs = &recv_displs;
  const std::vector<int64_t>* vs[4] = {&send_counts, &send_displs, &recv_counts, &recv_displs};
  const char* names[4] = {"send_counts", "send_displs", "recv_counts", "recv_displs"};
  for (int k = 0; k < 4 && c.error.empty(); ++k) {
    if (static_cast<int>(vs[k]->size()) != size) {
      c.error = std::string(names[k]) + " has " + std::to_string(vs[k]->size()) +
                " entries, not one per rank (" + std::to_string(size) + ")";
    } else if (std::any_of(vs[k]->begin(), vs[k]->end(), [](int64_t x) { return x < 0; })) {
      c.error = std::string(names[k]) + " has a negative entry";
    }
  }
  if (!c.error.empty()) return c;
  auto total = [](const std::vector<int64_t>& v) {
    int64_t t = 0;
    for (int64_t x : v) t += x;
    return t;
  };
  if (total(send_counts) > 0 && send == nullptr) c.error = "the send buffer is null";
  if (total(recv_counts) > 0 && recv == nullptr) c.error = "the receive buffer is null";
  return c;
}

CallDesc describe_barrier() {
  CallDesc c;
  c.op = "barrier";
  return c;
}

CallDesc describe_failure(const std::string& op, const std::string& reason) {
  CallDesc c;
  c.op = op;
  c.error = reason.empty() ? "no reason given" : reason;
  c.failed = true;
  return c;
}

std::string check_calls(const std::vector<CallDesc>& calls, const std::vector<int>& ranks) {
  // Order matters: a failed rank explains every other difference.
  std::string msg = failures(calls, ranks);
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "collective", [](const CallDesc& c) { return std::string_view(c.op); },
        [](const CallDesc& c) { return std::string(c.op); });
  }
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "element count", [](const CallDesc& c) { return c.count; },
        [](const CallDesc& c) { return std::to_string(c.count); });
  }
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "dtype", [](const CallDesc& c) { return c.dtype; },
        [](const CallDesc& c) {
          return std::string(c.dtype < 0 ? "none" : dtype_name(static_cast<DType>(c.dtype)));
        });
  }
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "reduction", [](const CallDesc& c) { return c.reduce; },
        [](const CallDesc& c) {
          return std::string(c.reduce < 0 ? "none" : reduce_op_name(ReduceOp(c.reduce)));
        });
  }
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "root", [](const CallDesc& c) { return c.root; },
        [](const CallDesc& c) { return std::to_string(c.root); });
  }
  if (msg.empty()) {
    msg = disagreement(
        calls, ranks, "pairs", [](const CallDesc& c) { return c.pairs_hash; },
        [](const CallDesc& c) { return show_pairs(c.pairs); });
  }
  if (msg.empty() && calls[0].send_counts != nullptr) msg = pair_counts(calls, ranks);
  return msg;
}

}  // namespace tsr::detail
