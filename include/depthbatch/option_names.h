// depthbatch — the job-file spellings of closed option sets. Each concept header declares its enum and, beside it,
// option_names(E): every value with its job-file spelling, lower case with underscores ("edge_hard"). The job reader
// parses with that table and option_name() prints with it (logs, metadata, messages), so a value has one spelling,
// kept next to the enum it spells.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

namespace depthbatch {

/// Every value of the enum E with its job-file spelling, each value once.
template <class E, std::size_t N> using OptionNames = std::array<std::pair<E, const char*>, N>;

/// The job-file spelling of `v` (option_names(E), found beside E's declaration); "?" for a value outside the table
/// (a value added to the enum without a spelling).
template <class E> const char* option_name(E v) {
    for (const auto& [value, name] : option_names(E{}))
        if (value == v) return name;
    return "?";
}

}  // namespace depthbatch
