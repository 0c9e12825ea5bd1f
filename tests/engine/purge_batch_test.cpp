// engine_detail::purge_batch (include/strata/engine/detail/purge_batch.hpp): ranges added to a
// batch are purged at its flush (or its end) and no others; touching ranges join; a batch is full
// at its range or byte limit, or when its flush would reach the deadline; errno survives a flush;
// under a seccomp filter every range gets its own madvise.

#include "strata/engine/detail/purge_batch.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "support/residency.hpp"

namespace {

using strata::engine_detail::purge_batch;

constexpr std::size_t page = 4096;

/// An anonymous mapping of `pages` pages, every page written (its index + 1 in its first byte).
class mapping {
public:
    explicit mapping(std::size_t pages) : bytes_(pages * page) {
        void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        base_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
        for (std::size_t i = 0; base_ != nullptr && i < pages; ++i)
            std::memset(base_ + i * page, static_cast<int>(i + 1), page);
    }
    ~mapping() {
        if (base_ != nullptr) ::munmap(base_, bytes_);
    }
    mapping(const mapping&) = delete;
    mapping& operator=(const mapping&) = delete;

    [[nodiscard]] bool ok() const { return base_ != nullptr; }
    [[nodiscard]] std::uintptr_t at(std::size_t page_index) const {
        return reinterpret_cast<std::uintptr_t>(base_) + page_index * page;
    }
    [[nodiscard]] bool resident(std::size_t i) const {
        return strata::test::resident_pages(base_ + i * page, page) == 1;
    }
    /// Returns: true when page i reads as written (not purged).
    [[nodiscard]] bool kept(std::size_t i) const {
        return base_[i * page] == static_cast<unsigned char>(i + 1);
    }
    /// Returns: true when page i reads as zero (purged).
    [[nodiscard]] bool zero(std::size_t i) const {
        return base_[i * page] == 0 && base_[i * page + page - 1] == 0;
    }

private:
    unsigned char* base_ = nullptr;
    std::size_t bytes_ = 0;
};

class PurgeBatch : public ::testing::TestWithParam<bool> {}; // vectored, or one madvise per range

TEST_P(PurgeBatch, PurgesWhatWasAddedAndNothingElse) {
    mapping m(64);
    ASSERT_TRUE(m.ok());
    {
        purge_batch b(GetParam());
        // Vectored unless not asked for, or the process found the call refused before.
        const bool vectored = b.range_limit() > 1;
        EXPECT_TRUE(GetParam() || !vectored) << "a batch asked for one call per range is never vectored";
        // 16 ranges of 2 pages, none touching another; one at a time is a full batch when not vectored
        for (std::size_t i = 0; i < 64; i += 4)
            EXPECT_EQ(b.add(m.at(i + 1), m.at(i + 3)), !vectored);
        EXPECT_EQ(b.bytes(), (vectored ? 16 : 1) * 2 * page);
        EXPECT_TRUE(m.resident(61)); // the last range waits for the flush
        b.flush();
        EXPECT_TRUE(b.empty());
        if (!vectored) {
            EXPECT_EQ(b.calls(), 16u);
        } else if (b.range_limit() > 1) {
            EXPECT_EQ(b.calls(), 1u); // the kernel took the vector
        } else {
            // Not tried (a seccomp filter: 16 calls) or refused (before Linux 6.15: the refused call
            // and 16): one call per range either way.
            EXPECT_TRUE(b.calls() == 16u || b.calls() == 17u) << b.calls();
        }
    }
    for (std::size_t i = 0; i < 64; ++i) {
        const bool purged = i % 4 == 1 || i % 4 == 2;
        if (purged) {
            EXPECT_FALSE(m.resident(i)) << "page " << i;
            EXPECT_TRUE(m.zero(i)) << "page " << i;
        } else {
            EXPECT_TRUE(m.kept(i)) << "page " << i;
        }
    }
}

TEST_P(PurgeBatch, TouchingRangesJoinEitherWay) {
    mapping m(16);
    ASSERT_TRUE(m.ok());
    purge_batch b(GetParam());
    (void)b.add(m.at(4), m.at(6));
    (void)b.add(m.at(6), m.at(8)); // after
    (void)b.add(m.at(2), m.at(4)); // before (a span's pieces come from its end down)
    b.flush();
    EXPECT_EQ(b.calls(), 1u); // one range: one call, vectored or not
    for (std::size_t i = 0; i < 16; ++i)
        EXPECT_EQ(m.zero(i), i >= 2 && i < 8) << "page " << i;
}

TEST_P(PurgeBatch, AnEmptyRangeAddsNothing) {
    mapping m(4);
    ASSERT_TRUE(m.ok());
    purge_batch b(GetParam());
    EXPECT_FALSE(b.add(m.at(2), m.at(2)));
    EXPECT_FALSE(b.add(m.at(3), m.at(1)));
    EXPECT_TRUE(b.empty());
    b.flush();
    EXPECT_EQ(b.calls(), 0u);
}

TEST_P(PurgeBatch, FullAtItsRangeLimitOrByteLimit) {
    mapping m(2 * purge_batch::max_ranges + 300);
    ASSERT_TRUE(m.ok());
    purge_batch b(GetParam());
    const std::size_t limit = b.range_limit();
    for (std::size_t i = 0; i + 1 < limit; ++i)
        EXPECT_FALSE(b.add(m.at(2 * i), m.at(2 * i + 1))) << i;
    EXPECT_TRUE(b.add(m.at(2 * limit), m.at(2 * limit + 1)));
    b.flush();
    // One range of max_bytes fills a batch by itself.
    EXPECT_TRUE(b.add(m.at(2 * purge_batch::max_ranges + 2),
                      m.at(2 * purge_batch::max_ranges + 2) + purge_batch::max_bytes));
}

TEST_P(PurgeBatch, APassedDeadlineMakesTheFirstRangeAFullBatch) {
    mapping m(8);
    ASSERT_TRUE(m.ok());
    purge_batch b(GetParam(), purge_batch::now_ns() - 1);
    EXPECT_TRUE(b.add(m.at(1), m.at(2)));
    purge_batch later(GetParam(), purge_batch::now_ns() + 60'000'000'000ull); // a minute away
    EXPECT_EQ(later.add(m.at(4), m.at(5)), later.range_limit() == 1);
}

TEST_P(PurgeBatch, TheEndFlushesAndErrnoSurvives) {
    mapping m(8);
    ASSERT_TRUE(m.ok());
    errno = EAGAIN;
    {
        purge_batch b(GetParam());
        (void)b.add(m.at(1), m.at(2));
        (void)b.add(m.at(5), m.at(7));
    }
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_TRUE(m.zero(1) && m.zero(5) && m.zero(6));
    EXPECT_TRUE(m.kept(0) && m.kept(2) && m.kept(4) && m.kept(7));
}

// Under a seccomp filter the batch never needs the vectored call: here one that fails
// process_madvise with ENOSYS, in a child process (a filter cannot be taken off again).
TEST(PurgeBatchSeccomp, AFilteredProcessPurgesRangeByRange) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_madvise, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            ::_exit(2);
        mapping m(32);
        if (!m.ok()) ::_exit(3);
        {
            purge_batch b(true);
            for (std::size_t i = 0; i < 32; i += 2)
                if (b.add(m.at(i), m.at(i + 1))) b.flush();
            b.flush();
            if (b.range_limit() != 1) ::_exit(4); // per range from now on
        }
        for (std::size_t i = 0; i < 32; ++i)
            if (i % 2 == 0 ? !m.zero(i) : !m.kept(i)) ::_exit(5);
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no filter; 4: still vectored; 5: wrong pages purged";
}

INSTANTIATE_TEST_SUITE_P(Engine, PurgeBatch, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "vectored" : "per_range"; });

} // namespace
