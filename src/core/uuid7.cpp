// Task ids: RFC 9562 UUIDv7, lowercase canonical form.
//
// Layout (128 bits): unix_ts_ms (48) | ver=0b0111 (4) | rand_a (12) | var=0b10 (2) | rand_b (62).
// Monotonicity within the process follows RFC 9562 section 6.2, method 1: rand_a is a counter.
// On a new millisecond it starts at a random value below 2048 (leaving at least 2048 increments of
// headroom); within the same millisecond, or when the wall clock steps back, it is incremented.
// When it would overflow 12 bits the timestamp is advanced by one ms (the id runs slightly ahead
// of the clock rather than going backwards). The string form therefore sorts in creation order.
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>

#include "baton/task.h"

namespace baton {
namespace {

class UuidV7Generator {
 public:
  std::string Next() {
    const auto now_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    std::uint64_t ms = 0;
    std::uint64_t counter = 0;
    std::uint64_t rand_b = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A forked child must not replay its parent's random sequence.
      if (const pid_t pid = ::getpid(); pid != pid_) Reseed(pid);
      if (now_ms > last_ms_) {
        last_ms_ = now_ms;
        counter_ = rng_() & 0x7FF;
      } else if (++counter_ > 0xFFF) {
        ++last_ms_;
        counter_ = rng_() & 0x7FF;
      }
      ms = last_ms_;
      counter = counter_;
      rand_b = rng_();
    }
    const std::uint64_t hi = (ms & 0xFFFFFFFFFFFFULL) << 16 | 0x7000ULL | counter;
    const std::uint64_t lo = 0x8000000000000000ULL | (rand_b & 0x3FFFFFFFFFFFFFFFULL);
    return Format(hi, lo);
  }

 private:
  void Reseed(pid_t pid) {
    std::random_device device;
    std::array<std::uint32_t, 8> seed{};
    for (auto& word : seed) word = device();
    std::seed_seq seq(seed.begin(), seed.end());
    rng_.seed(seq);
    pid_ = pid;
    last_ms_ = 0;
  }

  static std::string Format(std::uint64_t hi, std::uint64_t lo) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(36, '-');
    std::size_t pos = 0;
    auto put = [&](std::uint64_t value, int nibbles) {
      for (int shift = (nibbles - 1) * 4; shift >= 0; shift -= 4) {
        if (pos == 8 || pos == 13 || pos == 18 || pos == 23) ++pos;  // keep the dashes
        out[pos++] = kHex[(value >> shift) & 0xF];
      }
    };
    put(hi, 16);
    put(lo, 16);
    return out;
  }

  std::mutex mu_;
  std::mt19937_64 rng_;
  pid_t pid_ = 0;
  std::uint64_t last_ms_ = 0;
  std::uint64_t counter_ = 0;
};

}  // namespace

std::string NewTaskId() {
  static UuidV7Generator generator;  // thread-safe initialisation; Next() locks
  return generator.Next();
}

}  // namespace baton
