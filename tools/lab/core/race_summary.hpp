#pragma once
// strata-lab race summary: the closing table of a race (per workload, the fastest strata allocator
// against malloc and against the fastest of mimalloc, jemalloc and tcmalloc) and the one line that
// names the allocators a workload skipped.
#include <iosfwd>
#include <string>
#include <vector>

#include "race.hpp"

namespace strata::lab {

/// What kind of allocator a race row is, for the summary.
enum class contender_kind { strata, peer, malloc, other };

/// Returns: the kind of the row: "malloc", a peer (peer_contenders.hpp), strata's own (its
/// description starts with "strata::"), or other (std::pmr).
[[nodiscard]] contender_kind kind_of(const race_row& r);

/// Returns: "strata", "peer", "malloc" or "other".
[[nodiscard]] const char* kind_name(contender_kind k) noexcept;

/// One workload of the summary. A ratio is the other allocator's ns/op over the strata one's (above
/// 1: strata is faster); an absent allocator leaves its name empty and its numbers NaN.
struct summary_row {
    std::string workload;
    std::string strata; ///< the fastest strata allocator with no failed allocation
    std::string peer;   ///< the fastest peer with no failed allocation
    double strata_ns = 0, malloc_ns = 0, peer_ns = 0;       ///< ns per op
    double vs_malloc = 0, vs_peer = 0;                      ///< speed ratios
    double strata_tail = 0, malloc_tail = 0, peer_tail = 0; ///< filtered p99.99, ns
};

/// Returns: one summary row per section that has a strata row.
[[nodiscard]] std::vector<summary_row> summarize_race(const std::vector<race_section>& sections);

/// Effects: prints the summary table (nothing when `rows` is empty).
void print_race_summary(std::ostream& out, const std::vector<summary_row>& rows, double resolution_ns);

/// Effects: writes `rows` as a JSON array (NaN as null).
void write_race_summary_json(std::ostream& out, const std::vector<summary_row>& rows);

/// Returns: "   skipped: a, b (why); c (why)\n": the skipped list ("name (needs: why)" or "name
/// (failed: why)") as one line, allocators with the same reason together, wrapped between reasons
/// before 100 columns; "" when none was skipped.
[[nodiscard]] std::string skipped_line(const std::vector<std::string>& skipped);

} // namespace strata::lab
