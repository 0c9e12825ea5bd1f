#include <cinttypes>
#include <cstdio>
#include <string>

#include "strata/adapt/tracked.hpp"

namespace strata {

tracker::tracker(std::string name, tracker* parent) : parent_(parent), name_(std::move(name)) {
    if (parent_ == nullptr) return;
    tracker** link = &parent_->first_child_; // appended: reports list children in creation order
    while (*link != nullptr)
        link = &(*link)->next_sibling_;
    *link = this;
}

tracker::~tracker() {
    for (tracker* c = first_child_; c != nullptr;) {
        tracker* next = c->next_sibling_;
        c->parent_ = nullptr;
        c->next_sibling_ = nullptr;
        c = next;
    }
    if (parent_ == nullptr) return;
    for (tracker** link = &parent_->first_child_; *link != nullptr; link = &(*link)->next_sibling_) {
        if (*link == this) {
            *link = next_sibling_;
            break;
        }
    }
    // The subtree leaves: its history leaves every ancestor's monotonic counters with it.
    for (tracker* t = parent_; t != nullptr; t = t->parent_) {
        t->allocated_ -= allocated_;
        t->freed_ -= freed_;
        if (t->alarm_ != t->budget_ && t->in_use() <= t->budget_) t->alarm_ = t->budget_;
    }
}

void tracker::set_budget(std::size_t bytes, budget_callback on_over) {
    on_over_ = on_over ? std::make_shared<const budget_callback>(std::move(on_over)) : nullptr;
    budget_ = bytes;
    alarm_ = bytes;
}

void tracker::cross_from(std::size_t bytes) noexcept {
    // Re-test each level: a callback may allocate, free or set budgets, and later levels answer
    // to what the tree holds when their turn comes.
    for (tracker* t = this; t != nullptr; t = t->parent_)
        if (t->allocated_ - t->freed_ > t->alarm_) t->cross(bytes);
}

void tracker::cross(std::size_t bytes) noexcept {
    alarm_ = no_budget; // disarmed before the call, so a callback that allocates cannot re-enter
    ++crossings_;
    if (const std::shared_ptr<const budget_callback> callback = on_over_) (*callback)(*this, bytes);
}

void tracker::reset_frame() noexcept {
    frame_allocs_base_ = allocs_;
    frame_frees_base_ = frees_;
    frame_bytes_base_ = own_allocated();
    for (tracker* c = first_child_; c != nullptr; c = c->next_sibling_)
        c->reset_frame();
}

void tracker::reset_peak() noexcept {
    peak_ = in_use();
    for (tracker* c = first_child_; c != nullptr; c = c->next_sibling_)
        c->reset_peak();
}

std::size_t tracker::own_allocated() const noexcept {
    std::size_t a = allocated_;
    for (const tracker* k = first_child_; k != nullptr; k = k->next_sibling_)
        a -= k->allocated_;
    return a;
}

tracker_counters tracker::own() const noexcept {
    tracker_counters c;
    std::size_t children = 0;
    for (const tracker* k = first_child_; k != nullptr; k = k->next_sibling_)
        children += k->in_use();
    c.in_use = in_use() - children;
    c.peak = peak_;
    c.live = allocs_ - frees_;
    c.total = allocs_;
    c.frame_allocations = allocs_ - frame_allocs_base_;
    c.frame_bytes = own_allocated() - frame_bytes_base_;
    c.frame_frees = frees_ - frame_frees_base_;
    return c;
}

tracker_counters tracker::totals() const noexcept {
    tracker_counters c = own();
    for (const tracker* k = first_child_; k != nullptr; k = k->next_sibling_) {
        const tracker_counters s = k->totals();
        c.live += s.live;
        c.total += s.total;
        c.frame_allocations += s.frame_allocations;
        c.frame_bytes += s.frame_bytes;
        c.frame_frees += s.frame_frees;
    }
    c.in_use = in_use();
    c.peak = peak_;
    return c;
}

std::string tracker::path() const {
    std::string p = name_;
    for (const tracker* t = parent_; t != nullptr; t = t->parent_)
        p = t->name_ + "/" + p;
    return p;
}

tracker* tracker::find_child(std::string_view name) const noexcept {
    for (tracker* c = first_child_; c != nullptr; c = c->next_sibling_) {
        if (c->name_ == name) return c;
    }
    return nullptr;
}

namespace {

std::string number(std::size_t v) { return std::to_string(v); }

void text_rows(const tracker& t, int depth, std::string& out) {
    const tracker_counters c = t.totals();
    const std::string name = std::string(static_cast<std::size_t>(depth) * 2, ' ') + t.name();
    const std::string budget = t.budget() == tracker::no_budget ? "-" : number(t.budget());
    char line[256];
    std::snprintf(line, sizeof line, "%-24s %12zu %12zu %12s %8zu %10zu %8zu %12zu %8zu%s\n", name.c_str(),
                  c.in_use, c.peak, budget.c_str(), c.live, c.total, c.frame_allocations, c.frame_bytes,
                  c.frame_frees, t.over_budget() ? "  OVER" : "");
    out += line;
    for (const tracker* k = t.first_child(); k != nullptr; k = k->next_sibling())
        text_rows(*k, depth + 1, out);
}

void json_escape(const std::string& s, std::string& out) {
    out += '"';
    for (const char ch : s) {
        const auto u = static_cast<unsigned char>(ch);
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (u < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
            out += buf;
        } else {
            out += ch;
        }
    }
    out += '"';
}

void json_node(const tracker& t, std::string& out) {
    const tracker_counters c = t.totals();
    out += "{\"name\":";
    json_escape(t.name(), out);
    out += ",\"in_use\":" + number(c.in_use) + ",\"peak\":" + number(c.peak) +
           ",\"budget\":" + (t.budget() == tracker::no_budget ? std::string("null") : number(t.budget())) +
           ",\"live\":" + number(c.live) + ",\"total\":" + number(c.total) +
           ",\"frame_allocations\":" + number(c.frame_allocations) +
           ",\"frame_bytes\":" + number(c.frame_bytes) + ",\"frame_frees\":" + number(c.frame_frees) +
           ",\"own_in_use\":" + number(t.own().in_use) + ",\"children\":[";
    bool first = true;
    for (const tracker* k = t.first_child(); k != nullptr; k = k->next_sibling()) {
        if (!first) out += ',';
        first = false;
        json_node(*k, out);
    }
    out += "]}";
}

} // namespace

std::string tracker::report_text() const {
    char head[256];
    std::snprintf(head, sizeof head, "%-24s %12s %12s %12s %8s %10s %8s %12s %8s\n", "tracker", "in_use",
                  "peak", "budget", "live", "total", "frame_n", "frame_bytes", "frame_fr");
    std::string out = head;
    text_rows(*this, 0, out);
    return out;
}

std::string tracker::report_json() const {
    std::string out;
    json_node(*this, out);
    return out;
}

} // namespace strata
