#include "run_time_histogram.h"

#include <algorithm>

namespace baton::collector {

std::size_t RunTimeBucket(std::int64_t ms) {
  const auto it = std::lower_bound(kRunTimeBoundsMs.begin(), kRunTimeBoundsMs.end(), ms);
  return static_cast<std::size_t>(it - kRunTimeBoundsMs.begin());
}

double EstimateQuantileMs(const RunTimeCounts& counts, double q) {
  std::int64_t total = 0;
  for (auto c : counts) total += c;
  if (total == 0) return 0;
  const double rank = q * static_cast<double>(total);
  double seen = 0;
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) {
    if (counts[b] == 0) continue;
    const double lower = b == 0 ? 0 : static_cast<double>(kRunTimeBoundsMs[b - 1]);
    if (b == kRunTimeBuckets - 1) return lower;
    if (seen + static_cast<double>(counts[b]) >= rank) {
      const double upper = static_cast<double>(kRunTimeBoundsMs[b]);
      const double within = (rank - seen) / static_cast<double>(counts[b]);
      return lower + (upper - lower) * within;
    }
    seen += static_cast<double>(counts[b]);
  }
  return static_cast<double>(kRunTimeBoundsMs.back());
}

std::string BucketColumn(std::size_t bucket) { return "h" + std::to_string(bucket); }

}  // namespace baton::collector
