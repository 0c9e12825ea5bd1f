#pragma once
// The request script of the live lab's "compare" demo: a few allocate / free / reset statements,
// parsed and checked here. Exports script_statement, request_script, script_bounds, script_error
// and parse_script. The grammar is in docs/live-lab.md ("Same requests, every allocator").
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace strata::lab::serve {

/// What a script may hold; parse_script refuses anything beyond.
struct script_bounds {
    std::size_t max_chars = 4096;     ///< bytes of script text
    std::size_t max_statements = 512; ///< non-empty statements
    std::size_t max_size = 65536;     ///< largest size of an `a` statement (the buffer size)
    std::size_t max_align = 4096;     ///< largest alignment (a power of two)
};

/// One statement: `a SIZE [align A]` (optionally `NAME = a ...`), `f N` / `f NAME`, or `r`.
struct script_statement {
    enum class kind : std::uint8_t { alloc, free, reset };
    kind what = kind::reset;
    std::size_t size = 0;     ///< alloc: bytes requested
    std::size_t align = 0;    ///< alloc: the alignment (16 when not written)
    std::uint32_t block = 0;  ///< alloc: the number it gives its block (1, 2, ...); free: the block
    std::uint32_t line = 0;   ///< 1-based line of the statement's first character
    std::uint32_t column = 0; ///< 1-based column (in bytes) of that character
    std::string text;         ///< the statement as written, blanks trimmed
};

/// A parsed script: its statements in order and the blocks' names.
struct request_script {
    std::vector<script_statement> statements;
    std::vector<std::string> names; ///< names[n - 1]: the name of block n ("" when it has none)
    std::size_t largest_size = 0;   ///< the largest size allocated (0 with no `a`)
    std::size_t largest_align = 0;  ///< the largest alignment asked for (0 with no `a`)

    /// Returns: the number of blocks the script allocates.
    [[nodiscard]] std::size_t blocks() const noexcept { return names.size(); }
};

/// A malformed script: where (1-based line and column, in bytes) and what was expected there.
class script_error : public std::runtime_error {
public:
    /// Effects: an error at `line`:`column`; what() is "line L, column C: `message`".
    script_error(std::uint32_t line, std::uint32_t column, const std::string& message);
    /// Returns: the 1-based line of the error.
    [[nodiscard]] std::uint32_t line() const noexcept { return line_; }
    /// Returns: the 1-based column (in bytes) of the error.
    [[nodiscard]] std::uint32_t column() const noexcept { return column_; }
    /// Returns: what was wrong, without the position.
    [[nodiscard]] const std::string& detail() const noexcept { return detail_; }

private:
    std::uint32_t line_;
    std::uint32_t column_;
    std::string detail_;
};

/// Returns: `text` parsed. Statements are separated by `;` or newlines; `#` starts a comment that
/// runs to the end of the line. `f` must name a block allocated earlier and not yet freed or reset.
/// Throws: script_error for the first thing that is malformed or out of `bounds`.
[[nodiscard]] request_script parse_script(std::string_view text, const script_bounds& bounds = {});

} // namespace strata::lab::serve
