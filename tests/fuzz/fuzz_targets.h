#pragma once
// The entry points of the fuzz targets, one per parser of untrusted input. Each *_fuzzer.cpp
// defines one and, unless BATON_FUZZ_REPLAY is defined, the LLVMFuzzerTestOneInput that calls it;
// fuzz_regressions_test.cpp links them all and replays saved inputs through them.
#include <cstddef>
#include <cstdint>

namespace baton::fuzz {

int FuzzTaskDocument(const std::uint8_t* data, std::size_t size);
int FuzzStreamEntry(const std::uint8_t* data, std::size_t size);
int FuzzCronExpression(const std::uint8_t* data, std::size_t size);
int FuzzCronJob(const std::uint8_t* data, std::size_t size);
int FuzzTimeArg(const std::uint8_t* data, std::size_t size);
int FuzzRedisUrl(const std::uint8_t* data, std::size_t size);
int FuzzRespReply(const std::uint8_t* data, std::size_t size);
int FuzzEventDecode(const std::uint8_t* data, std::size_t size);

}  // namespace baton::fuzz

#ifdef BATON_FUZZ_REPLAY
#define BATON_FUZZ_MAIN(function)
#else
#define BATON_FUZZ_MAIN(function)                                                     \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return function(data, size);                                                      \
  }
#endif
