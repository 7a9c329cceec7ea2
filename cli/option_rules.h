#pragma once
// Validators of `baton` option values. Each failure reads like every other bad value: the rule in
// the words of the contract ("must be an integer 0..25 (got 1000000000)"); CLI11 prefixes the
// option name and main() reports it as `baton COMMAND: invalid_argument: --OPTION: RULE`, exit 1.
#include <CLI/CLI.hpp>
#include <cstdint>

namespace baton::cli {

// A decimal integer within min..max.
CLI::Validator IntegerIn(std::int64_t min, std::int64_t max);
// 0 (meaning "the default"), or a decimal integer within min..max.
CLI::Validator ZeroOrIntegerIn(std::int64_t min, std::int64_t max);
// Unix seconds within the contract's created_at range, with the "milliseconds?" hint (--at).
CLI::Validator UnixSecondsArg();
// A task id as the contract defines it (not empty).
CLI::Validator TaskIdArg();

}  // namespace baton::cli
