#include "compiler/report/process_pool.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace symtensor::compiler {
namespace {

// Answers start with 'o' (work's text) or 'e' (an exception's message).
std::string answer_of(const std::function<std::string(std::size_t)>& work, std::size_t i) {
  std::string text;
  try {
    text = "o" + work(i);
  } catch (const std::exception& e) {
    text = std::string("e") + e.what();
  }
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text + "\n";
}

bool write_all(int fd, const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one line (without its newline); false at end of file or on an error.
bool read_line(int fd, std::string& buffer, std::string& line) {
  for (;;) {
    if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[65536];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

[[noreturn]] void worker_main(int tasks, int answers, const std::function<std::string(std::size_t)>& work) {
  std::string buffer, line;
  while (read_line(tasks, buffer, line)) {
    const std::size_t i = std::stoul(line);
    if (!write_all(answers, answer_of(work, i))) break;
  }
  ::_exit(0);  // no destructors or stdio flushes of the parent's state
}

// A worker that died leaves a pipe without a reader: writing to it must fail, not kill us.
class IgnoreBrokenPipes {
 public:
  IgnoreBrokenPipes() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &saved_);
  }
  ~IgnoreBrokenPipes() { ::sigaction(SIGPIPE, &saved_, nullptr); }
  IgnoreBrokenPipes(const IgnoreBrokenPipes&) = delete;
  IgnoreBrokenPipes& operator=(const IgnoreBrokenPipes&) = delete;

 private:
  struct sigaction saved_ {};
};

struct Worker {
  pid_t pid = -1;
  int tasks = -1, answers = -1;  // the parent's ends
  std::string buffer;
  long long busy_with = -1;      // index, or -1 when idle
};

// The workers, stopped however run_in_workers ends (a throw included): their pipes
// closed, which ends their loop, and the processes reaped.
struct Workers {
  explicit Workers(std::size_t n) : all(n) {}
  ~Workers() {
    for (Worker& w : all) {
      if (w.tasks >= 0) ::close(w.tasks);
      if (w.answers >= 0) ::close(w.answers);
      if (w.pid > 0) ::waitpid(w.pid, nullptr, 0);
    }
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  std::vector<Worker> all;
};

}  // namespace

int default_jobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void run_in_workers(const std::vector<std::size_t>& order, int jobs, const std::function<std::string(std::size_t)>& work,
                    const std::function<void(std::size_t, const std::string&)>& done,
                    const std::function<void(std::size_t, const std::string&)>& failed) {
  auto deliver = [&](std::size_t i, const std::string& answer) {
    if (!answer.empty() && answer[0] == 'o') done(i, answer.substr(1));
    else failed(i, answer.empty() ? "no answer" : answer.substr(1));
  };
  if (jobs <= 1 || order.size() <= 1) {
    for (std::size_t i : order) {
      std::string a = answer_of(work, i);
      a.pop_back();
      deliver(i, a);
    }
    return;
  }
  const IgnoreBrokenPipes guard;
  Workers pool(std::min<std::size_t>(static_cast<std::size_t>(jobs), order.size()));
  std::vector<Worker>& workers = pool.all;
  for (std::size_t k = 0; k < workers.size(); ++k) {
    int to_worker[2], from_worker[2];
    if (::pipe(to_worker) != 0) throw std::runtime_error(std::string("workers: pipe: ") + std::strerror(errno));
    if (::pipe(from_worker) != 0) {
      ::close(to_worker[0]), ::close(to_worker[1]);
      throw std::runtime_error(std::string("workers: pipe: ") + std::strerror(errno));
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(to_worker[1]), ::close(from_worker[0]);
      for (std::size_t j = 0; j < k; ++j) ::close(workers[j].tasks), ::close(workers[j].answers);
      worker_main(to_worker[0], from_worker[1], work);
    }
    ::close(to_worker[0]), ::close(from_worker[1]);
    if (pid < 0) {
      ::close(to_worker[1]), ::close(from_worker[0]);
      throw std::runtime_error(std::string("workers: fork: ") + std::strerror(errno));
    }
    workers[k] = Worker{pid, to_worker[1], from_worker[0], {}, -1};
  }
  std::size_t next = 0, answered = 0;
  auto hand_out = [&](Worker& w) {
    if (next >= order.size()) return;
    w.busy_with = static_cast<long long>(order[next++]);
    if (!write_all(w.tasks, std::to_string(w.busy_with) + "\n"))
      throw std::runtime_error("workers: a worker stopped taking work");
  };
  for (Worker& w : workers) hand_out(w);
  while (answered < order.size()) {
    std::vector<pollfd> fds;
    for (const Worker& w : workers) fds.push_back({w.answers, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("workers: poll: ") + std::strerror(errno));
    }
    for (std::size_t k = 0; k < workers.size(); ++k) {
      Worker& w = workers[k];
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)) || w.busy_with < 0) continue;
      std::string line;
      if (!read_line(w.answers, w.buffer, line)) {
        throw std::runtime_error("workers: the worker on piece " + std::to_string(w.busy_with) + " died without answering");
      }
      const auto i = static_cast<std::size_t>(w.busy_with);
      w.busy_with = -1;
      ++answered;
      deliver(i, line);
      hand_out(w);
    }
  }
}

}  // namespace symtensor::compiler
