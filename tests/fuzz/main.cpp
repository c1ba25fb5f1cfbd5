// tsr_fuzz: differential fuzzer CLI. The parent never touches the library: it forks
// one child per batch of cases; each child calls tsr::init, runs its cases and streams
// one result line per case through a pipe. A child that dies names its current case
// (re-run alone to confirm); one silent past --timeout-ms is killed (a hang).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz.h"
#include "support/fake_accelerator.h"

namespace {

struct Options {
  uint64_t seed = 1;
  int64_t count = 100;
  int64_t first = 0;
  std::optional<int64_t> one_case;
  bool summary = false;
  int timeout_ms = 20000;
  int batch = 250;
  bool quiet_child = true;
  int show = 40;                  // failing cases listed
  bool list = false;              // print every case's row
  std::optional<double> ad_rate;  // derivative checks of agreeing cases (default: all)
};

constexpr double kDefaultAdRate = 1.0;

struct Row {
  int64_t index;
  std::string verdict, ops, detail;
  std::string ad;  // the derivative check's outcome ("" when not run)
};

std::string ops_of(const fuzz::Case& c) { return c.ops(); }

/** Starts the runtime: 8 CPU devices, or with a GPU (or TSR_TEST_FAKE_ACCELERATOR=1) 8
 *  virtual CUDA devices as the default platform, so the same cases run there. */
void start_runtime() {
  const char* fake = std::getenv("TSR_TEST_FAKE_ACCELERATOR");
  if (fake && std::string(fake) == "1") tsr::testing::install_fake_accelerator();
  setenv("TSR_CUDA_VIRTUAL_DEVICES", "8", /*overwrite=*/0);
  tsr::init({.num_cpu_devices = 8});
}

/** Child body: runs cases [a, b) and writes a line per case to fd. */
[[noreturn]] void child(const Options& o, int64_t a, int64_t b, int fd) {
  if (o.quiet_child) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 2);
      dup2(devnull, 1);
    }
  }
  start_runtime();
  for (int64_t i = a; i < b; ++i) {
    std::string line;
    {
      // Announce first, so that the parent knows the ops of a case that dies.
      fuzz::Case c;
      std::string ops = "?";
      try {
        c = fuzz::generate(o.seed, i);
        ops = ops_of(c);
      } catch (const std::exception& e) {
        line = "R\t" + std::to_string(i) + "\tUNTYPED\tgenerator\t\tgenerator threw: " + e.what() +
               "\n";
      }
      std::string ann = "S\t" + std::to_string(i) + "\t" + ops + "\n";
      if (write(fd, ann.data(), ann.size()) < 0) _exit(3);
      // Self-test of crash detection: TSR_FUZZ_CRASH_AT=I aborts while running case I.
      if (const char* at = std::getenv("TSR_FUZZ_CRASH_AT"); at && std::stoll(at) == i)
        std::abort();
      if (line.empty()) {
        fuzz::Result r = fuzz::run_case(c, nullptr, o.ad_rate.value_or(kDefaultAdRate));
        line = "R\t" + std::to_string(i) + "\t" + fuzz::verdict_name(r.verdict) + "\t" + ops +
               "\t" + r.ad + "\t" + r.detail + "\n";
      }
    }
    if (write(fd, line.data(), line.size()) < 0) _exit(3);
  }
  _exit(0);
}

/** Runs [a, b) in forked children; appends rows. Returns nothing; handles crash/hang. */
void run_range(const Options& o, int64_t a, int64_t b, std::vector<Row>& rows, bool confirm);

/** One child over [a, b): stops at the first crash/hang and returns its index (or b). */
int64_t run_child(const Options& o, int64_t a, int64_t b, std::vector<Row>& rows, Row* dead) {
  int p[2];
  if (pipe(p) != 0) {
    perror("pipe");
    std::exit(2);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child(o, a, b, p[1]);
  }
  close(p[1]);
  std::string buf;
  int64_t current = a;
  std::string current_ops = "?";
  bool hang = false;
  char tmp[4096];
  for (;;) {
    pollfd pf{p[0], POLLIN, 0};
    int n = poll(&pf, 1, o.timeout_ms);
    if (n == 0) {
      hang = true;
      kill(pid, SIGKILL);
      break;
    }
    ssize_t got = read(p[0], tmp, sizeof tmp);
    if (got <= 0) break;
    buf.append(tmp, static_cast<size_t>(got));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      std::vector<std::string> f;
      std::stringstream ss(line);
      std::string part;
      while (std::getline(ss, part, '\t')) f.push_back(part);
      if (f.size() >= 3 && f[0] == "S") {
        current = std::stoll(f[1]);
        current_ops = f[2];
      } else if (f.size() >= 4 && f[0] == "R") {
        rows.push_back(
            Row{std::stoll(f[1]), f[2], f[3], f.size() > 5 ? f[5] : "", f.size() > 4 ? f[4] : ""});
        current = std::stoll(f[1]) + 1;
        current_ops = "?";
      }
    }
  }
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!hang && WIFEXITED(status) && WEXITSTATUS(status) == 0 && current >= b) return b;
  dead->index = current;
  dead->ops = current_ops;
  if (hang) {
    dead->verdict = "HANG";
    dead->detail = "no result within " + std::to_string(o.timeout_ms) + " ms";
  } else {
    dead->verdict = "CRASH";
    dead->detail = WIFSIGNALED(status) ? std::string("signal ") + strsignal(WTERMSIG(status))
                                       : "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return current;
}

void run_range(const Options& o, int64_t a, int64_t b, std::vector<Row>& rows, bool confirm) {
  int64_t next = a;
  while (next < b) {
    int64_t end = std::min(b, next + o.batch);
    Row dead;
    int64_t at = run_child(o, next, end, rows, &dead);
    if (at >= end) {
      next = end;
      continue;
    }
    if (confirm) {
      // Re-run the culprit alone: does it fail without the cases before it?
      std::vector<Row> alone;
      Row d2;
      Options o1 = o;
      int64_t r = run_child(o1, at, at + 1, alone, &d2);
      if (r >= at + 1)
        dead.detail += " (only after earlier cases of its batch; alone: " +
                       (alone.empty() ? std::string("?") : alone[0].verdict) + ")";
    }
    rows.push_back(dead);
    next = at + 1;
  }
}

bool failing(const std::string& v) {
  return v == "MISMATCH" || v == "UNTYPED" || v == "CRASH" || v == "HANG";
}

int usage() {
  std::cerr << "usage: tsr_fuzz [--seed S] [--count N] [--first I] [--case I] [--summary]\n"
               "                [--timeout-ms T] [--batch B] [--show K] [--list] [--child-stderr]\n"
               "                [--ad-rate P]\n";
  return 2;
}

/** Prints the failing cases and the summary of `rows`; returns the exit status. Under
 *  mpirun only process 0 prints the summary (every process its failures). */
int report(const Options& o, const std::vector<Row>& rows, double secs) {
  const bool lead = tsr::process_count() == 1 || tsr::process_index() == 0;
  const std::string who =
      tsr::process_count() > 1 ? "process " + std::to_string(tsr::process_index()) + ": " : "";
  std::map<std::string, int> per_class, per_ad;
  std::map<std::string, std::map<std::string, int>> per_op, per_op_ad;
  std::map<std::string, int> ad_refusals;  // derivative refusals by message
  int bad = 0;
  for (const auto& r : rows) {
    per_class[r.verdict]++;
    if (!r.ad.empty()) {
      per_ad[r.ad]++;
      if (r.ad == "typed-error" || r.ad == "both-refuse")
        ad_refusals[r.ad + ": " + r.detail.substr(0, 160)]++;
    }
    std::stringstream ss(r.ops);
    std::string op;
    std::set<std::string> seen;
    while (std::getline(ss, op, ','))
      if (seen.insert(op).second) {
        per_op[op][r.verdict]++;
        if (!r.ad.empty()) per_op_ad[op][r.ad]++;
      }
    if (o.list)
      std::cout << r.index << "\t" << r.verdict << "\t" << r.ops << "\t" << r.ad << "\t" << r.detail
                << "\n";
    if (failing(r.verdict)) {
      if (bad < o.show)
        std::cout << who << r.verdict << " seed=" << o.seed << " case=" << r.index
                  << " ops=" << r.ops << ": " << r.detail << "\n";
      ++bad;
    }
  }
  if (!lead) return bad ? 1 : 0;
  std::cout << "tsr_fuzz seed=" << o.seed << " cases=" << rows.size() << " in " << secs << " s:";
  for (const auto& [k, n] : per_class) std::cout << " " << k << "=" << n;
  std::cout << "\n";
  int checked = 0;
  for (const auto& [k, n] : per_ad) checked += n;
  std::cout << "derivatives checked=" << checked << ":";
  for (const auto& [k, n] : per_ad) std::cout << " " << k << "=" << n;
  std::cout << "\n";
  if (o.summary) {
    std::cout << "per op (a case counts once for each op in it; ad: its derivative checks):\n";
    for (const auto& [op, m] : per_op) {
      std::cout << "  " << op << ":";
      for (const auto& [k, n] : m) std::cout << " " << k << "=" << n;
      if (per_op_ad.count(op)) {
        std::cout << " | ad:";
        for (const auto& [k, n] : per_op_ad[op]) std::cout << " " << k << "=" << n;
      }
      std::cout << "\n";
    }
    if (!ad_refusals.empty()) {
      std::cout << "derivative refusals (the primal agreed; eager and jit refuse alike):\n";
      for (const auto& [k, n] : ad_refusals) std::cout << "  " << n << " x " << k << "\n";
    }
  }
  if (bad)
    std::cout << bad << " failing case(s); reproduce one with: tsr_fuzz --seed " << o.seed
              << " --case I\n";
  return bad ? 1 : 0;
}

/** Under mpirun: every process runs every case in order, in this process (a process
 *  joins MPI once, so no forked children), on 8 / N devices, so every 8-device mesh
 *  spans processes. A crash ends the run (mpirun reports it); a process out of step
 *  raises CommError within TSR_COMM_TIMEOUT, which counts as UNTYPED. */
int mpi_main(const Options& o, int np) {
  tsr::distributed::initialize({.local_device_count = 8 / np});
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  const int64_t a = o.one_case ? *o.one_case : o.first;
  const int64_t b = o.one_case ? *o.one_case + 1 : o.first + o.count;
  for (int64_t i = a; i < b; ++i) {
    Row row{i, "UNTYPED", "?", "generator threw", ""};
    try {
      fuzz::Case c = fuzz::generate(o.seed, i);
      row.ops = ops_of(c);
      std::string log;  // --case: the whole story, from every process
      fuzz::Result r =
          fuzz::run_case(c, o.one_case ? &log : nullptr, o.ad_rate.value_or(kDefaultAdRate));
      if (o.one_case) std::cout << "process " << tsr::process_index() << ":\n" << log;
      row = Row{i, fuzz::verdict_name(r.verdict), row.ops, r.detail, r.ad};
    } catch (const std::exception& e) {
      row.detail = std::string("escaped run_case: ") + e.what();
    }
    rows.push_back(row);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int rc = report(o, rows, secs);
  tsr::distributed::shutdown();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed")
      o.seed = std::stoull(val());
    else if (a == "--count")
      o.count = std::stoll(val());
    else if (a == "--first")
      o.first = std::stoll(val());
    else if (a == "--case")
      o.one_case = std::stoll(val());
    else if (a == "--summary")
      o.summary = true;
    else if (a == "--timeout-ms")
      o.timeout_ms = std::stoi(val());
    else if (a == "--batch")
      o.batch = std::max(1, std::stoi(val()));
    else if (a == "--show")
      o.show = std::stoi(val());
    else if (a == "--child-stderr")
      o.quiet_child = false;
    else if (a == "--list")
      o.list = true;
    else if (a == "--ad-rate")
      o.ad_rate = std::stod(val());
    else
      return usage();
  }

  if (const char* np = std::getenv("OMPI_COMM_WORLD_SIZE"); np && std::stoi(np) > 1)
    return mpi_main(o, std::stoi(np));

  if (o.one_case) {
    // In-process, with the whole story printed.
    start_runtime();
    fuzz::Case c = fuzz::generate(o.seed, *o.one_case);
    std::string log;
    fuzz::Result r = fuzz::run_case(c, &log, o.ad_rate.value_or(1.0));
    std::cout << log << "verdict: " << fuzz::verdict_name(r.verdict) << ": " << r.detail << "\n";
    if (!r.ad.empty()) std::cout << "derivatives: " << r.ad << "\n";
    return failing(fuzz::verdict_name(r.verdict)) ? 1 : 0;
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  run_range(o, o.first, o.first + o.count, rows, true);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  return report(o, rows, secs);
}
