// Ingest rate of baton-collector's store: realistic task events written through StoreWriter::Ingest
// (the collector's own write path) in batches of about 1000 rows, the collector's read batch.
//
//   collector_ingest --store sqlite:///path/stats.db [--events 1000000] [--batch 1000]
//                    [--rate 20000 | --span-hours H] [--seed 1]
//   collector_ingest --store URL --fill N [--span-hours 24] [--ids-out FILE]
//
// The events are what the functions write (docs/keyspace.md, "Event entry"), for 4 namespaces and
// 11 types, produced by a simulation in stream time order, each entry one ~UUIDv7-keyed batch:
//   new -> queued     one entry per enqueue batch of 100 tasks (worker "", attempt 0);
//   queued -> active  one entry per dequeue batch (1..32 tasks, one consumer), attempt 1;
//   active -> done    one entry per ack batch (1..16 tasks of one dequeue batch, one run time);
//   ~5% of the tasks fail their first attempt: active -> retry (one entry each, with an error,
//   kind and, for half of them, a stack), retry -> queued (the promoter, 1-5 s later),
//   queued -> active (attempt 2), then active -> done, or for a fifth of them active -> dead.
// The simulated stream runs at --rate events/s (default 20000: a busy deployment, so that one
// batch covers about 50 ms of it) and ends now; --span-hours spreads the events over that many
// hours instead (--fill's default: 24 h, what an API over a day of history reads).
//
// Prints the events/s and batches/s of the time spent in Ingest (the store's rate; the simulation
// is not counted) and the p50/p99 latency of one batch. --fill N only loads N events (progress on
// stderr), for the API benchmark, through StoreWriter::Ingest as well; --ids-out writes "namespace
// type task_id" lines for 1000 tasks picked at random among those stored (bench/collector_api.py
// reads their timelines).
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "event_row.h"
#include "sql_database.h"
#include "store_schema.h"
#include "store_writer.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::collector::EventRow;

struct Options {
  std::string store;
  std::int64_t events = 1000000;
  bool fill = false;
  std::size_t batch = 1000;
  double rate = 20000;    // simulated events per second of stream time
  double span_hours = 0;  // > 0: spread the events over this many hours instead
  std::uint64_t seed = 1;
  std::string ids_out;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "collector_ingest: %s\n", what.c_str());
  std::exit(1);
}

// splitmix64: fast, good enough for a workload generator, and reproducible from --seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::int64_t Between(std::int64_t lo, std::int64_t hi) {                    // [lo, hi]
    return lo + static_cast<std::int64_t>(Next() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t state_;
};

// A UUIDv7-like id: 48 bits of Unix ms, version 7, 74 random bits (RFC 9562 layout).
std::string UuidV7(std::int64_t ms, Rng& rng) {
  using U = unsigned long long;
  const U t = static_cast<U>(ms), a = rng.Next(), b = rng.Next();
  char out[40];
  std::snprintf(out, sizeof out, "%08llx-%04llx-7%03llx-%04llx-%012llx", (t >> 16) & 0xffffffffULL,
                t & 0xffffULL, a & 0xfffULL, 0x8000ULL | ((a >> 12) & 0x3fffULL),
                b & 0xffffffffffffULL);
  return out;
}

// One (namespace, type): its share of the traffic, its run times and its workers.
struct Queue {
  std::string ns, type;
  double share;   // of all tasks
  double run_ms;  // typical run time
  std::vector<std::string> workers;
  double next_enqueue_ms = 0;
  double interval_ms = 0;  // mean time between two enqueue batches of 100
};

std::vector<Queue> MakeQueues() {
  struct Spec {
    const char* ns;
    const char* type;
    double share, run_ms;
    const char* service;
  };
  const Spec specs[] = {
      {"emails", "send", 0.30, 40, "mailer"},
      {"emails", "digest", 0.05, 400, "mailer"},
      {"billing", "charge", 0.12, 120, "payments"},
      {"billing", "refund", 0.02, 150, "payments"},
      {"billing", "invoice", 0.06, 800, "payments"},
      {"media", "thumbnail", 0.18, 25, "imaging"},
      {"media", "transcode", 0.03, 9000, "imaging"},
      {"media", "scan", 0.08, 3, "imaging"},
      {"reports", "daily", 0.01, 25000, "reporting"},
      {"reports", "export", 0.05, 1500, "reporting"},
      {"reports", "notify", 0.10, 8, "reporting"},
  };
  static const char* kLanguages[] = {"python", "go", "node", "java", "cpp"};
  std::vector<Queue> queues;
  int pid = 4100;
  for (const Spec& s : specs) {
    Queue q{s.ns, s.type, s.share, s.run_ms, {}};
    for (int w = 0; w < 4; ++w) {  // 4 worker processes per type, one language each
      ++pid;
      char name[160];
      std::snprintf(name, sizeof name, "%s:%s-%d:%d:%06x:%s", s.service, s.ns, w + 1, pid,
                    (static_cast<unsigned>(pid) * 2654435761u) & 0xffffffu,
                    kLanguages[(queues.size() + static_cast<std::size_t>(w)) % 5]);
      q.workers.push_back(name);
    }
    queues.push_back(std::move(q));
  }
  return queues;
}

const char* const kErrors[] = {
    "TimeoutError: upstream did not answer within 30s",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "ValueError: invalid account id",
    "HTTPError 503: Service Unavailable from partner API",
    "KeyError: 'customer_email'",
    "timeout: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
    "java.sql.SQLTransientConnectionException: pool exhausted after 5000ms",
    "RateLimited: 429 Too Many Requests, retry after 2s",
};

// One events-stream entry, not yet given its id.
struct Entry {
  int queue = 0;
  std::string from, to, worker, error, kind, stack;
  std::vector<std::string> ids;
  std::vector<std::int64_t> attempts;
};

struct Scheduled {
  std::int64_t at_ms;
  std::uint64_t order;  // FIFO among entries of the same ms
  Entry entry;
  bool operator>(const Scheduled& o) const {
    return at_ms != o.at_ms ? at_ms > o.at_ms : order > o.order;
  }
};

// Produces the entries of every namespace's events stream in time order and turns them into
// EventRows as the collector's decoder would.
class Workload {
 public:
  Workload(std::int64_t start_ms, double events_per_s, std::uint64_t seed)
      : queues_(MakeQueues()), rng_(seed) {
    // Rows per task: 3 (enqueue, start, end) + 3 more for the 5% that retry (retry, promote,
    // start again).
    const double tasks_per_ms = events_per_s / (3.0 + 0.05 * 3.0) / 1000.0;
    for (auto& q : queues_) {
      q.interval_ms = 100.0 / (tasks_per_ms * q.share);
      q.next_enqueue_ms = static_cast<double>(start_ms) + rng_.Uniform() * q.interval_ms;
    }
  }

  // Appends the rows of the next entry to `rows`.
  void NextEntry(std::vector<EventRow>& rows) {
    Queue* q = &queues_[0];
    for (auto& c : queues_) {
      if (c.next_enqueue_ms < q->next_enqueue_ms) q = &c;
    }
    const auto enqueue_ms = static_cast<std::int64_t>(q->next_enqueue_ms);
    if (!pending_.empty() && pending_.top().at_ms <= enqueue_ms) {
      Scheduled s = pending_.top();
      pending_.pop();
      Emit(s.at_ms, s.entry, rows);
      return;
    }
    q->next_enqueue_ms += q->interval_ms * (0.5 + rng_.Uniform());
    Enqueue(static_cast<int>(q - queues_.data()), enqueue_ms, rows);
  }

  // "ns type id" of up to 1000 tasks enqueued so far, picked uniformly (reservoir sampling).
  const std::vector<std::string>& sample() const { return sample_; }

 private:
  void Schedule(std::int64_t at_ms, Entry entry) {
    pending_.push({at_ms, order_++, std::move(entry)});
  }

  std::int64_t RunMs(const Queue& q) {
    // Log-uniform around the type's typical run time (x0.25 .. x4).
    return std::max<std::int64_t>(
        0, static_cast<std::int64_t>(q.run_ms * std::exp2(rng_.Uniform() * 4.0 - 2.0)));
  }

  Entry Failure(int queue, const std::string& worker, const std::string& id, std::int64_t attempt,
                const char* to) {
    Entry e{queue, "active", to,   worker,   kErrors[rng_.Next() % std::size(kErrors)],
            "",    "",       {id}, {attempt}};
    e.kind = e.error.find("imeout") != std::string::npos ? "timeout" : "error";
    if (std::string(to) == "dead" || rng_.Uniform() < 0.5) {
      e.stack =
          "Traceback (most recent call last):\n  File \"/app/tasks.py\", line 214, in run\n"
          "    result = handler(payload)\n  File \"/app/handlers/" +
          queues_[queue].type + ".py\", line 57, in handle\n    resp = client.post(url, " +
          "json=body, timeout=30)\n" + e.error;
    }
    return e;
  }

  void Enqueue(int queue, std::int64_t at_ms, std::vector<EventRow>& rows) {
    const Queue& q = queues_[queue];
    Entry enq{queue, "new", "queued", "", "", "", "", {}, {}};
    for (int i = 0; i < 100; ++i) {
      enq.ids.push_back(UuidV7(at_ms, rng_));
      enq.attempts.push_back(0);
      ++enqueued_;
      const std::string line = q.ns + " " + q.type + " " + enq.ids.back();
      if (sample_.size() < 1000) {
        sample_.push_back(line);
      } else if (const auto k = rng_.Next() % static_cast<std::uint64_t>(enqueued_); k < 1000) {
        sample_[k] = line;
      }
    }
    // The worker's fetches: dequeue batches of 1..32, each started a little after the previous.
    std::int64_t start_ms = at_ms + rng_.Between(1, 30);
    for (std::size_t first = 0; first < enq.ids.size();) {
      const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(rng_.Between(1, 32)),
                                                  enq.ids.size() - first);
      const std::string& worker = q.workers[rng_.Next() % q.workers.size()];
      Entry start{queue, "queued", "active", worker, "", "", "", {}, {}};
      std::vector<std::string> succeeded;
      for (std::size_t i = first; i < first + n; ++i) {
        start.ids.push_back(enq.ids[i]);
        start.attempts.push_back(1);
        if (rng_.Uniform() < 0.05) {
          Retry(queue, worker, enq.ids[i], start_ms);
        } else {
          succeeded.push_back(enq.ids[i]);
        }
      }
      // The acks: batches of 1..16 tasks of this fetch, each batch one run time.
      for (std::size_t a = 0; a < succeeded.size();) {
        const std::size_t m = std::min<std::size_t>(static_cast<std::size_t>(rng_.Between(1, 16)),
                                                    succeeded.size() - a);
        Entry done{queue, "active", "done", worker, "", "", "", {}, {}};
        for (std::size_t i = a; i < a + m; ++i) {
          done.ids.push_back(succeeded[i]);
          done.attempts.push_back(1);
        }
        Schedule(start_ms + RunMs(q), std::move(done));
        a += m;
      }
      Schedule(start_ms, std::move(start));
      first += n;
      start_ms += rng_.Between(0, 20);
    }
    Emit(at_ms, enq, rows);
  }

  // A first attempt that fails: retry, promoted 1-5 s later, run again, done or (1 in 5) dead.
  void Retry(int queue, const std::string& worker, const std::string& id, std::int64_t start_ms) {
    const Queue& q = queues_[queue];
    const std::int64_t failed_ms = start_ms + RunMs(q);
    Schedule(failed_ms, Failure(queue, worker, id, 1, "retry"));
    const std::int64_t promoted_ms = failed_ms + rng_.Between(1000, 5000);
    Schedule(promoted_ms, Entry{queue, "retry", "queued", "", "", "", "", {id}, {1}});
    const std::string& again = q.workers[rng_.Next() % q.workers.size()];
    const std::int64_t restart_ms = promoted_ms + rng_.Between(1, 50);
    Schedule(restart_ms, Entry{queue, "queued", "active", again, "", "", "", {id}, {2}});
    const std::int64_t end_ms = restart_ms + RunMs(q);
    if (rng_.Uniform() < 0.2) {
      Schedule(end_ms, Failure(queue, again, id, 2, "dead"));
    } else {
      Schedule(end_ms, Entry{queue, "active", "done", again, "", "", "", {id}, {2}});
    }
  }

  // Gives the entry its stream id (ms of the Redis clock, sequence within the ms, per stream) and
  // appends one row per task, as DecodeEventEntry + AddFailureDetails would.
  void Emit(std::int64_t at_ms, const Entry& e, std::vector<EventRow>& rows) {
    const Queue& q = queues_[e.queue];
    auto& [last_ms, seq] = last_id_[q.ns];
    if (at_ms < last_ms) at_ms = last_ms;  // a stream's ids only grow
    seq = at_ms == last_ms ? seq + 1 : 0;
    last_ms = at_ms;
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      EventRow r;
      r.ns = q.ns;
      r.entry_ms = at_ms;
      r.entry_seq = seq;
      r.idx = static_cast<std::int64_t>(i);
      r.task_id = e.ids[i];
      r.type = q.type;
      r.from = e.from;
      r.to = e.to;
      r.attempt = e.attempts[i];
      r.worker = e.worker;
      r.error = e.error;
      r.kind = e.kind;
      r.stack = e.stack;
      rows.push_back(std::move(r));
    }
  }

  std::vector<Queue> queues_;
  Rng rng_;
  std::priority_queue<Scheduled, std::vector<Scheduled>, std::greater<>> pending_;
  std::uint64_t order_ = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> last_id_;
  std::int64_t enqueued_ = 0;
  std::vector<std::string> sample_;
};

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Options Parse(int argc, char** argv) {
  Options o;
  bool rate_given = false, events_given = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) Die("missing value for " + k);
    const std::string v = argv[i + 1];
    if (k == "--store") {
      o.store = v;
    } else if (k == "--events") {
      o.events = std::atoll(v.c_str());
      events_given = true;
    } else if (k == "--fill") {
      o.fill = true;
      o.events = std::atoll(v.c_str());
    } else if (k == "--batch") {
      o.batch = static_cast<std::size_t>(std::atoll(v.c_str()));
    } else if (k == "--rate") {
      o.rate = std::atof(v.c_str());
      rate_given = true;
    } else if (k == "--span-hours") {
      o.span_hours = std::atof(v.c_str());
    } else if (k == "--seed") {
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--ids-out") {
      o.ids_out = v;
    } else {
      Die("unknown option " + k +
          " (usage: --store URL [--events N | --fill N] [--batch 1000] [--rate 20000 | "
          "--span-hours H] [--seed 1] [--ids-out FILE])");
    }
  }
  if (o.store.empty()) Die("--store is required (sqlite:///path/stats.db or postgresql://...)");
  if (o.fill && events_given) Die("--fill N and --events N exclude each other");
  if (o.events <= 0 || o.batch == 0 || o.rate <= 0) Die("counts and rates must be positive");
  if (o.fill && !rate_given && o.span_hours <= 0) o.span_hours = 24;
  if (o.span_hours > 0) o.rate = static_cast<double>(o.events) / (o.span_hours * 3600.0);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace baton::collector;
  const Options o = Parse(argc, argv);
  std::unique_ptr<SqlDatabase> db;
  const bool sqlite_url = o.store.rfind("sqlite://", 0) == 0;
  {
    auto opened = OpenSqlDatabase(o.store);
    if (!opened.ok()) Die("cannot open the store " + o.store + ": " + opened.status().ToString());
    db = std::move(opened).value();
  }
  if (baton::Status s = MigrateStore(*db); !s.ok()) Die("migration: " + s.ToString());
  StoreWriter writer(*db);

  const auto span_ms = static_cast<std::int64_t>(static_cast<double>(o.events) / o.rate * 1000.0);
  Workload workload(NowMs() - span_ms, o.rate, o.seed);
  std::vector<EventRow> rows;
  rows.reserve(o.batch + 100);
  std::vector<double> latencies_ms;
  std::int64_t stored = 0, duplicates = 0, next_report = o.events / 10;
  double ingest_s = 0;
  const auto wall_start = Clock::now();
  while (stored + duplicates < o.events) {
    rows.clear();
    // Whole entries, as the collector reads them, until the batch has its rows (or the run ends).
    while (rows.size() < o.batch &&
           stored + duplicates + static_cast<std::int64_t>(rows.size()) < o.events) {
      workload.NextEntry(rows);
    }
    const auto t0 = Clock::now();
    auto result = writer.Ingest(rows);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!result.ok()) Die("Ingest: " + result.status().ToString());
    ingest_s += s;
    latencies_ms.push_back(s * 1000);
    stored += result->inserted;
    duplicates += result->duplicates;
    if (o.fill && stored >= next_report) {
      std::fprintf(stderr, "fill: %" PRId64 " events (%.0f events/s)\n", stored,
                   static_cast<double>(stored) /
                       std::chrono::duration<double>(Clock::now() - wall_start).count());
      next_report += o.events / 10;
    }
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
  if (duplicates != 0) Die(std::to_string(duplicates) + " rows were duplicates: generator bug");

  const std::string engine = db->dialect() == SqlDialect::kSqlite ? "sqlite" : "postgresql";
  std::string size;
  if (engine == "sqlite") {
    std::string path = sqlite_url ? o.store.substr(9) : o.store;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
      size = ", file " + std::to_string(st.st_size / (1024 * 1024)) + " MiB";
    }
  }
  if (!o.ids_out.empty()) {
    std::ofstream out(o.ids_out);
    for (const auto& line : workload.sample()) out << line << '\n';
    if (!out) Die("cannot write " + o.ids_out);
  }
  if (o.fill) {
    std::printf("fill: %" PRId64
                " events into %s%s in %.1f s (%.0f events/s%s), %.1f h of stream "
                "time ending now\n",
                stored, engine.c_str(), "", wall_s, static_cast<double>(stored) / wall_s,
                size.c_str(), static_cast<double>(span_ms) / 3.6e6);
    return 0;
  }
  std::printf("store %s: %" PRId64
              " events in %zu batches of ~%zu rows (whole entries), "
              "4 namespaces, 11 types, simulated %.0f events/s of stream time%s\n",
              engine.c_str(), stored, latencies_ms.size(), o.batch, o.rate, size.c_str());
  std::printf(
      "ingest %-10s: %8.0f events/s  %6.1f batches/s  batch p50 %.1f ms  p99 %.1f ms  "
      "(%.1f s in Ingest, %.1f s wall with the simulation)\n",
      engine.c_str(), static_cast<double>(stored) / ingest_s,
      static_cast<double>(latencies_ms.size()) / ingest_s, Percentile(latencies_ms, 0.50),
      Percentile(latencies_ms, 0.99), ingest_s, wall_s);
  return 0;
}
