#pragma once
// The run-time histogram the store keeps per (namespace, type, minute) and per (namespace, type)
// in total: fixed buckets (upper bounds in ms, the last one open), so that rollups add up by
// plain sums in SQL and Prometheus gets the same buckets. Percentiles are estimated by linear
// interpolation inside the bucket that holds them: their error is at most that bucket's width.
#include <array>
#include <cstdint>
#include <string>

namespace baton::collector {

inline constexpr std::array<std::int64_t, 16> kRunTimeBoundsMs = {
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000};
inline constexpr std::size_t kRunTimeBuckets = kRunTimeBoundsMs.size() + 1;  // + the open one

using RunTimeCounts = std::array<std::int64_t, kRunTimeBuckets>;

// The bucket a run of `ms` falls in (a run of exactly a bound falls in that bound's bucket).
std::size_t RunTimeBucket(std::int64_t ms);

// The q-quantile (0 < q < 1) of the counted runs, in ms; 0 when there are none. Runs in the open
// bucket are reported at its lower bound.
double EstimateQuantileMs(const RunTimeCounts& counts, double q);

// The SQL column names of the buckets: h0 .. h16.
std::string BucketColumn(std::size_t bucket);

}  // namespace baton::collector
