// The request script parser: one pass over the text, a statement at a time, with the position of
// every token kept for the error messages.
#include "request_script.hpp"

#include <algorithm>
#include <unordered_map>

namespace strata::lab::serve {

script_error::script_error(std::uint32_t line, std::uint32_t column, const std::string& message)
    : std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                         message),
      line_(line), column_(column), detail_(message) {}

namespace {

bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) { return is_word_start(c) || is_digit(c); }
bool is_keyword(std::string_view w) { return w == "a" || w == "f" || w == "r" || w == "align"; }

// One token: a word, a number, '=', or the end of a statement (';', a new line, '#', the end).
struct token {
    enum class kind : std::uint8_t { word, number, equals, end, other };
    kind what = kind::end;
    std::string_view text;
    std::uint32_t line = 1;
    std::uint32_t column = 1;
};

class parser {
public:
    parser(std::string_view text, const script_bounds& b) : text_(text), bounds_(b) {}

    request_script run() {
        if (text_.size() > bounds_.max_chars) {
            advance_to(bounds_.max_chars);
            fail(line_, column_, "the script is longer than " + std::to_string(bounds_.max_chars) + " bytes");
        }
        while (true) {
            skip_blanks();
            if (pos_ >= text_.size()) break;
            const char c = text_[pos_];
            if (c == ';' || c == '\n') {
                step();
                continue;
            }
            statement();
        }
        return std::move(out_);
    }

private:
    [[noreturn]] static void fail(std::uint32_t line, std::uint32_t column, const std::string& what) {
        throw script_error(line, column, what);
    }
    [[noreturn]] static void fail(const token& t, const std::string& what) { fail(t.line, t.column, what); }

    static std::string shown(const token& t) {
        switch (t.what) {
        case token::kind::end: return "the end of the statement";
        case token::kind::equals: return "'='";
        default: return "'" + std::string(t.text) + "'";
        }
    }

    void step() {
        if (text_[pos_] == '\n') {
            ++line_;
            column_ = 1;
        } else {
            ++column_;
        }
        ++pos_;
    }
    void advance_to(std::size_t p) {
        while (pos_ < p && pos_ < text_.size())
            step();
    }
    // Blanks and comments; stops at a new line, ';' or a token.
    void skip_blanks() {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r') {
                step();
            } else if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n')
                    step();
            } else {
                break;
            }
        }
    }

    token next() {
        skip_blanks();
        token t;
        t.line = line_;
        t.column = column_;
        if (pos_ >= text_.size() || text_[pos_] == ';' || text_[pos_] == '\n') return t; // kind::end
        const std::size_t start = pos_;
        const char c = text_[pos_];
        if (is_word_start(c)) {
            while (pos_ < text_.size() && is_word_char(text_[pos_]))
                step();
            t.what = token::kind::word;
        } else if (is_digit(c)) {
            while (pos_ < text_.size() && is_word_char(text_[pos_]))
                step();
            t.what = token::kind::number;
        } else if (c == '=') {
            step();
            t.what = token::kind::equals;
        } else { // one character: a UTF-8 sequence whole, so an error message quoting it stays UTF-8
            step();
            while (pos_ < text_.size() && (static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80)
                step();
            t.what = token::kind::other;
        }
        t.text = text_.substr(start, pos_ - start);
        return t;
    }
    token peek() {
        const std::size_t pos = pos_;
        const std::uint32_t line = line_, column = column_;
        token t = next();
        pos_ = pos;
        line_ = line;
        column_ = column;
        return t;
    }

    // A decimal integer in [lo, hi]; `what` names it in the message.
    std::size_t number(const token& t, std::size_t lo, std::size_t hi, const char* what) {
        const std::string range =
            std::string(what) + " (an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "])";
        if (t.what != token::kind::number) fail(t, "expected " + range + ", found " + shown(t));
        std::size_t v = 0;
        for (const char c : t.text) {
            if (!is_digit(c)) fail(t, "expected " + range + ", found " + shown(t));
            const auto d = static_cast<std::size_t>(c - '0');
            if (d > hi || v > (hi - d) / 10)
                fail(t, std::string(what) + " " + std::string(t.text) + " is out of range: " + range);
            v = v * 10 + d;
        }
        if (v < lo) fail(t, std::string(what) + " " + std::string(t.text) + " is out of range: " + range);
        return v;
    }

    void statement() {
        const std::size_t start = pos_;
        script_statement s;
        s.line = line_;
        s.column = column_;
        if (out_.statements.size() >= bounds_.max_statements)
            fail(s.line, s.column, "more than " + std::to_string(bounds_.max_statements) + " statements");
        token t = next();
        std::string name;
        if (t.what == token::kind::word && !is_keyword(t.text) && peek().what == token::kind::equals) {
            name = std::string(t.text);
            (void)next(); // '='
            t = next();
            if (t.what != token::kind::word || t.text != "a")
                fail(t, "expected 'a' after '" + name + " =', found " + shown(t));
        }
        if (t.what == token::kind::word && t.text == "a") {
            s.what = script_statement::kind::alloc;
            s.size = number(next(), 1, bounds_.max_size, "a size");
            s.align = 16;
            if (peek().what == token::kind::word && peek().text == "align") {
                (void)next();
                const token a = next();
                s.align = number(a, 1, bounds_.max_align, "an alignment");
                if ((s.align & (s.align - 1)) != 0)
                    fail(a, "an alignment must be a power of two (1, 2, 4, ... " +
                                std::to_string(bounds_.max_align) + "), not " + std::string(a.text));
            }
            if (!name.empty()) {
                const auto it = names_.find(name);
                if (it != names_.end() && live_[it->second - 1])
                    fail(s.line, s.column,
                         "'" + name + "' still names live block " + std::to_string(it->second) +
                             ": free it first");
            }
            out_.names.push_back(name);
            live_.push_back(1);
            s.block = static_cast<std::uint32_t>(out_.names.size());
            if (!name.empty()) names_[name] = s.block;
            if (s.size > out_.largest_size) out_.largest_size = s.size;
            if (s.align > out_.largest_align) out_.largest_align = s.align;
        } else if (t.what == token::kind::word && t.text == "f") {
            s.what = script_statement::kind::free;
            const token b = next();
            if (b.what == token::kind::word && !is_keyword(b.text)) {
                const auto it = names_.find(std::string(b.text));
                if (it == names_.end()) fail(b, "no block is named '" + std::string(b.text) + "'");
                s.block = it->second;
            } else if (b.what == token::kind::number) {
                const std::size_t n = number(b, 1, UINT32_MAX, "a block number");
                if (n > out_.names.size())
                    fail(b, "block " + std::to_string(n) + " is not allocated yet (" +
                                std::to_string(out_.names.size()) + " so far)");
                s.block = static_cast<std::uint32_t>(n);
            } else {
                fail(b, "expected a block number or name after 'f', found " + shown(b));
            }
            if (!live_[s.block - 1])
                fail(b, "block " + std::string(b.text) + " is not live (freed or reset before)");
            live_[s.block - 1] = 0;
        } else if (t.what == token::kind::word && t.text == "r") {
            s.what = script_statement::kind::reset;
            std::fill(live_.begin(), live_.end(), 0);
        } else {
            fail(t,
                 "expected a statement (a SIZE [align A], NAME = a SIZE, f BLOCK or r), found " + shown(t));
        }
        const token end = next();
        if (end.what != token::kind::end) {
            if (s.what == script_statement::kind::alloc && end.what == token::kind::word)
                fail(end, "expected 'align', ';' or a new line, found " + shown(end));
            fail(end, "expected ';' or a new line after the statement, found " + shown(end));
        }
        std::string_view body = text_.substr(start, pos_ - start);
        if (const auto hash = body.find('#'); hash != std::string_view::npos) body = body.substr(0, hash);
        while (!body.empty() && (body.back() == ' ' || body.back() == '\t' || body.back() == '\r'))
            body.remove_suffix(1);
        s.text = std::string(body);
        out_.statements.push_back(std::move(s));
    }

    std::string_view text_;
    script_bounds bounds_;
    std::size_t pos_ = 0;
    std::uint32_t line_ = 1;
    std::uint32_t column_ = 1;
    request_script out_;
    std::vector<char> live_; // by block number - 1
    std::unordered_map<std::string, std::uint32_t> names_;
};

} // namespace

request_script parse_script(std::string_view text, const script_bounds& bounds) {
    return parser(text, bounds).run();
}

} // namespace strata::lab::serve
