#pragma once
// Helpers for the collective tests: run one function per rank on its own thread
// (with a watchdog, so a hang fails instead of stalling ctest) and make test data.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tsr/comm/device/device_group.h"
#include "tsr/comm/group.h"
#include "tsr/dtype.h"
#include "tsr/error.h"

namespace tsr::detail {
// tests/support/fake_accelerator.cpp (its header would hide ::testing in tsr::).
const AcceleratorOps* fake_accelerator_ops();
}  // namespace tsr::detail

namespace tsr::test {

using detail::GroupImpl;
using detail::ReduceOp;

/** How one rank's function ended. */
struct RankResult {
  bool threw = false;      /**< it raised */
  bool comm_error = false; /**< what it raised was a CommError */
  std::string what;        /**< the message */
};

/** Runs fn(rank) for rank in [0, n) on n threads and returns how each ended. If they
 *  are not all done after `watchdog`, the test fails and the process exits: a hang
 *  must not stall the suite. */
inline std::vector<RankResult> run_ranks(
    int n, const std::function<void(int)>& fn,
    std::chrono::milliseconds watchdog = std::chrono::seconds(120)) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    std::vector<RankResult> results;
  };
  auto state = std::make_shared<State>();
  state->results.resize(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([state, fn, r] {
      RankResult res;
      try {
        fn(r);
      } catch (const CommError& e) {
        res = {true, true, e.what()};
      } catch (const std::exception& e) {
        res = {true, false, e.what()};
      }
      std::lock_guard lock(state->mu);
      state->results[r] = std::move(res);
      ++state->done;
      state->cv.notify_all();
    });
  }
  std::unique_lock lock(state->mu);
  if (!state->cv.wait_for(lock, watchdog, [&] { return state->done == n; })) {
    ADD_FAILURE() << "watchdog: only " << state->done << " of " << n << " ranks finished within "
                  << watchdog.count() << " ms; a collective hangs";
    std::fflush(stdout);
    std::_Exit(1);
  }
  lock.unlock();
  for (auto& t : threads) t.join();
  return state->results;
}

/** Success when `sub` occurs in `str`; otherwise a failure that prints both. */
inline ::testing::AssertionResult contains(const std::string& str, const std::string& sub) {
  if (str.find(sub) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << str << "\n  lacks:   " << sub;
}

/** Makes a group of the named backend ("threads" or "reference"). */
inline std::shared_ptr<GroupImpl> make_group(const std::string& backend, int n,
                                             int64_t timeout_ms = 0) {
  // The device groups over the fake accelerator's ops, which take host pointers too:
  // "device" puts every rank on one GPU (peers read in place), "device2" alternates
  // two GPUs (peers' data is staged first), "staged" wraps the threads group.
  if (backend == "device" || backend == "device2") {
    std::vector<detail::DeviceRank> ranks;
    for (int r = 0; r < n; ++r)
      ranks.push_back({{detail::fake_accelerator_ops(), nullptr}, backend == "device" ? 0 : r % 2});
    return detail::make_device_group(std::move(ranks), timeout_ms);
  }
  if (backend == "staged") {
    std::vector<detail::DeviceMemory> mems(static_cast<size_t>(n));
    for (int r = 0; r < n; r += 2)
      mems[static_cast<size_t>(r)] = {detail::fake_accelerator_ops(), nullptr};
    return detail::make_staged_group(detail::make_threads_group(n, timeout_ms), std::move(mems));
  }
  return backend == "threads" ? detail::make_threads_group(n, timeout_ms)
                              : detail::make_reference_group(n, timeout_ms);
}

/** The group backends compared with "reference". */
inline const std::vector<std::string>& fast_backends() {
  static const std::vector<std::string> kAll{"threads", "device", "device2", "staged"};
  return kAll;
}

/** `count` random elements of dt as bytes: full range for integers, 0/1 for bool,
 *  values in [-2, 2) with fractions for floats (no NaN, so results compare bytewise). */
inline std::vector<char> random_data(DType dt, int64_t count, uint64_t seed) {
  std::vector<char> out(count * itemsize(dt));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(out.data());
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(rng());
      } else if constexpr (std::is_same_v<T, double>) {
        p[i] = real(rng);
      } else {
        p[i] = T(static_cast<float>(real(rng)));
      }
    }
  });
  return out;
}

/** Every real DType (parameter lists of the dtype-sweeping tests; new dtypes join them).
 *  Group implementations see real dtypes only: the Group handle sends a complex value as
 *  its parts (tests/unit/complex_test.cpp). */
inline std::vector<DType> all_dtypes() {
  std::vector<DType> v;
  for (int k = 0; k < kNumDTypes; ++k)
    if (!is_complex(static_cast<DType>(k))) v.push_back(static_cast<DType>(k));
  return v;
}

/** Typed view of a byte vector. */
template <typename T>
T* as(std::vector<char>& bytes) {
  return reinterpret_cast<T*>(bytes.data());
}

}  // namespace tsr::test
